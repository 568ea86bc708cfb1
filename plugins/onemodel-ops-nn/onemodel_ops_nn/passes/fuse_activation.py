"""linear / conv2d + activation -> fused_linear / fused_conv2d.

The activation (relu, sigmoid, tanh, gelu) must be the only user of the linear/conv2d output, so
a backend can apply it in place in the same buffer right after the product.
"""
from __future__ import annotations

from onemodel.passes.patterns import P, PatternMatcher
from onemodel.registry import PassDef

from ..fused import activation_name

ACTIVATED = P(("relu", "sigmoid", "tanh", "gelu"),
              [P(("linear", "conv2d"), name="base", private=True)])


def _fused(m):
    act = activation_name(m.root)
    if act is None:
        return None
    base = m.nodes["base"]
    ins = tuple(base.inputs) + (None,) * (3 - len(base.inputs))
    return m.node(f"fused_{base.op}", ins, **dict(base.params), activation=act)


FUSE = PatternMatcher([(ACTIVATED, _fused)])

PASS = PassDef(name="fuse_activation", level="all", run=FUSE.rewrite, order=30,
               doc="linear/conv2d followed by relu/sigmoid/tanh/gelu -> one fused node.")
