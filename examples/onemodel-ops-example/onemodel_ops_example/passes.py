"""A graph pass shipped by a third party: fold ``x * sigmoid(x)`` into one ``swish`` node.

ONNX files written at opsets below 24 (and models written from primitives) carry swish as
``Mul(x, Sigmoid(x))``; at optimization level "all" this pass turns it back into the op, whose
kernel needs one buffer instead of two. It is written with OneModel's pattern engine
(`onemodel.passes.patterns`), as the built-in recognisers are.
"""
from __future__ import annotations

from onemodel.passes.patterns import P, PatternMatcher
from onemodel.registry import PassDef

#: x * sigmoid(x), either order; the sigmoid read by nothing else
SWISH = P("mul", [P.var("x"), P("sigmoid", [P.var("x")], private=True)], commutative=True)


def _swish(m):
    return m.node("swish", [m["x"]], beta=1.0) if m.type("x").dtype.is_float else None


FOLD_SWISH = PatternMatcher([(SWISH, _swish)])
fold_swish = FOLD_SWISH.rewrite

PASSES = (PassDef(name="fold_swish", level="all", run=fold_swish, order=4,
                  doc="mul(x, sigmoid(x)) -> swish(x)"),)
