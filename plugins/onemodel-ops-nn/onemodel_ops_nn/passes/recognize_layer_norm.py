"""Layer norm recognised when traced from primitives.

``(x - mean(x)) / sqrt(mean((x - mean(x))**2) + eps)`` over the last axis (``keepdims=True``;
the square as ``d*d`` or ``d**2``), optionally followed by ``* weight`` and ``+ bias`` (constants
of the last axis' size), becomes one ``layer_norm(x, weight, bias, normalized_shape=(C,), eps)``.
"""
from __future__ import annotations

from onemodel.core.symbolic import Dim
from onemodel.passes.patterns import P, PatternMatcher, last_axis, same_type
from onemodel.registry import PassDef


def _over_last(name):
    def where(m):
        node = m.nodes[name]
        return last_axis(node.params.get("axis"), len(m.rw.type(node.inputs[0]).shape))
    return where


def _mean_last(inner, name):
    return P("mean", [inner], name=name, params={"keepdims": True}, where=_over_last(name))


D = P("sub", [P.var("x"), _mean_last(P.var("x"), "mu")], name="d")
SQUARE = P.any_of(P("mul", [P.var("d"), P.var("d")]),
                  P("pow", [P.var("d"), P.const(value=2.0)]))
NORMALIZED = P("div", [D, P("sqrt", [P("add", [_mean_last(SQUARE, "var"), P.const("eps")],
                                               commutative=True)])])


def _affine(rw, name: str, op: str, width) -> tuple[str, str] | None:
    """If ``name``'s only user is ``op`` with a constant of ``width``: (its output, constant)."""
    users = rw.consumers.get(name, [])
    if len(users) != 1 or users[0].op != op or name in rw.output_values:
        return None
    n = users[0]
    other = n.inputs[1] if n.inputs[0] == name else n.inputs[0]
    c = rw.const(other)
    if c is None or c.shape != (width,) or other == name:
        return None
    if not same_type(rw.type(n.outputs[0]), rw.type(name)):
        return None
    return n.outputs[0], other


def _layer_norm(m):
    rw, xt = m.rw, m.type("x")
    eps = m.scalar("eps")
    width = xt.shape[-1] if xt.shape else None
    if eps is None or width is None or isinstance(width, Dim) or not xt.dtype.is_float:
        return None
    final, weight, bias = m.root.outputs[0], None, None
    if not same_type(rw.type(final), xt):
        return None
    scaled = _affine(rw, final, "mul", width)
    if scaled is not None:
        final, weight = scaled
        shifted = _affine(rw, final, "add", width)
        if shifted is not None:
            final, bias = shifted
    return m.node("layer_norm", [m["x"], weight, bias], outputs=[final],
                  normalized_shape=(width,), eps=float(eps))


LAYER_NORM = PatternMatcher([(NORMALIZED, _layer_norm)])

PASS = PassDef(name="recognize_layer_norm", level="all", run=LAYER_NORM.rewrite, order=5, on_load=True,
               doc="mean/sub/var/sqrt/div over the last axis (+ weight, bias) -> layer_norm.")
