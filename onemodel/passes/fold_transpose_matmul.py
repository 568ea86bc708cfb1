"""Transposes folded into matmul: ``matmul(x.transpose(-1, -2), y)`` (and the same on the right)
becomes ``matmul_t(x, y, transpose_a=True)``, so no transposed copy is made and the transpose
node goes away once nothing else reads it."""
from __future__ import annotations

from ..core.graph import Graph, Node
from ..registry.records import PassDef
from ._rewrite import Rewriter


def _swaps_last_two(rw: Rewriter, name: str) -> str | None:
    """The transposed tensor if ``name`` is a transpose of its last two axes."""
    p = rw.producer(name)
    if p is None or not p.inputs or p.inputs[0] is None:
        return None
    rank = len(rw.graph.values[p.inputs[0]].shape)
    if rank < 2:
        return None
    try:
        if p.op == "transpose":
            a, b = sorted((int(p.params["axis0"]) % rank, int(p.params["axis1"]) % rank))
            ok = (a, b) == (rank - 2, rank - 1)
        elif p.op == "permute":
            axes = tuple(int(x) % rank for x in p.params["axes"])
            ok = axes == tuple(range(rank - 2)) + (rank - 1, rank - 2)
        else:
            ok = False
    except (KeyError, TypeError, ValueError):
        return None
    return p.inputs[0] if ok else None


def fold_transpose_matmul(graph: Graph) -> Graph:
    rw = Rewriter(graph)
    for node in graph.nodes:
        if node.op in ("matmul", "matmul_t") and len(node.inputs) == 2:
            a, b = node.inputs
            ta = bool(node.params.get("transpose_a", False))
            tb = bool(node.params.get("transpose_b", False))
            sa, sb = _swaps_last_two(rw, a), _swaps_last_two(rw, b)
            if sa is not None or sb is not None:
                if sa is not None:
                    a, ta = sa, not ta
                if sb is not None:
                    b, tb = sb, not tb
                rw.emit(Node("matmul_t", (a, b), node.outputs,
                             {"transpose_a": ta, "transpose_b": tb}, node.source))
                rw.changed = True
                continue
        rw.emit(node)
    return rw.finish() if rw.changed else graph


PASS = PassDef(name="fold_transpose_matmul", level="all", run=fold_transpose_matmul, order=40,
               doc="matmul of a transposed operand -> matmul_t with a transpose flag.")
