"""matmul + add -> linear.

``matmul(x, W)`` with a constant 2-D ``W`` becomes ``linear(x, W.T)`` (the weight stored out x
in, as `linear` wants, so a backend can pre-pack it once), and an ``add`` of a constant bias of
the output width after it (or after a ``linear`` without bias) folds into ``linear(x, W, b)``.
The intermediate must have no other user, and the result must keep its type.
"""
from __future__ import annotations

from onemodel.passes.patterns import P, PatternMatcher, match, same_type
from onemodel.registry import PassDef


def _weight(m):
    """The constant (in x out) weight of ``x @ w``, or None."""
    W, xt = m.const("w"), m.type("x")
    if W is None or W.ndim != 2 or len(xt.shape) < 2 or W.dtype != xt.dtype.numpy:
        return None
    return W if m.rw.const(m["x"]) is None else None


def _no_bias(m):
    node = m.nodes["mm"]
    return len(node.inputs) < 3 or node.inputs[2] is None


BASE = P.any_of(P("matmul", [P.var("x"), P.const("w")], name="mm", private=True),
                P("linear", [P.var("x"), P.const("w")], name="mm", private=True, where=_no_bias),
                name="base")
BIASED = P("add", [BASE, P.const("b")], commutative=True)


def _plan(m):
    """(transpose the weight?, bias array) for a BIASED match, or None."""
    matmul = m.nodes["mm"].op == "matmul"
    W = _weight(m) if matmul else m.const("w")
    if W is None:
        return None
    width = W.shape[1] if matmul else W.shape[0]
    b = m.const("b")
    if (b is None or b.size != width or (b.ndim and b.shape[-1] != width)
            or b.ndim > len(m.type("base").shape) or b.dtype != W.dtype):
        return None
    if not same_type(m.rw.type(m.root.outputs[0]), m.type("base")):
        return None
    return matmul, b.reshape(width)


def _biased(m):
    plan = _plan(m)
    if plan is None:
        return None
    transpose, b = plan
    w = m.rw.add_const(m.const("w").T, f"{m['w']}_t") if transpose else m["w"]
    return m.node("linear", [m["x"], w, m.rw.add_const(b, f"{m['b']}_b")])


def _unbiased(m):
    W = _weight(m)
    if W is None or _bias_follows(m):
        return None
    return m.node("linear", [m["x"], m.rw.add_const(W.T, f"{m['w']}_t"), None])


def _bias_follows(m) -> bool:
    """The matmul's only user is a bias the biased rule folds (it builds the linear itself)."""
    rw, out = m.rw, m.root.outputs[0]
    if not rw.single_use(out):
        return False
    user = rw.consumers[out][0]
    found = match(BIASED, user.outputs[0], type(m)(rw, user), root=True)
    return found is not None and _plan(found) is not None


FUSE = PatternMatcher([(BIASED, _biased),
                       (P("matmul", [P.var("x"), P.const("w")]), _unbiased)])

PASS = PassDef(name="fuse_matmul_add", level="all", run=FUSE.rewrite, order=10, on_load=True,
               doc="matmul by a constant weight (+ a constant bias) -> linear.")
