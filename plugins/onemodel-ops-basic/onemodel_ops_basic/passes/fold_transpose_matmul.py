"""Transposes folded into matmul: ``matmul(x.transpose(-1, -2), y)`` (and the same on the right)
becomes ``matmul_t(x, y, transpose_a=True)``, so no transposed copy is made and the transpose
node goes away once nothing else reads it."""
from __future__ import annotations

from onemodel.passes.patterns import P, PatternMatcher
from onemodel.registry import PassDef, get_op


def _swapped(m, name: str) -> str | None:
    """The tensor ``name`` is, with its last two axes swapped, if a transpose/permute made it."""
    p = m.rw.producer(name)
    if p is None or not p.inputs or p.inputs[0] is None:
        return None
    rank = len(m.rw.type(p.inputs[0]).shape)
    tr = get_op(p.op).traits if p.op in ("transpose", "permute") else None
    if rank < 2 or tr is None:
        return None
    try:
        perm = tuple(tr.permutation(dict(p.params), rank))
    except (KeyError, TypeError, ValueError):
        return None
    return p.inputs[0] if perm == tuple(range(rank - 2)) + (rank - 1, rank - 2) else None


def _fold(m):
    a, b = m["a"], m["b"]
    ta = bool(m.root.params.get("transpose_a", False))
    tb = bool(m.root.params.get("transpose_b", False))
    sa, sb = _swapped(m, a), _swapped(m, b)
    if sa is None and sb is None:
        return None
    if sa is not None:
        a, ta = sa, not ta
    if sb is not None:
        b, tb = sb, not tb
    return m.node("matmul_t", [a, b], transpose_a=ta, transpose_b=tb)


FOLD = PatternMatcher([(P(("matmul", "matmul_t"), [P.var("a"), P.var("b")]), _fold)])

PASS = PassDef(name="fold_transpose_matmul", level="all", run=FOLD.rewrite, order=40,
               doc="matmul of a transposed operand -> matmul_t with a transpose flag.")
