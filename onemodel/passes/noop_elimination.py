"""No-op elimination: nodes whose output equals one of their inputs are removed and their uses
read that input. Covered: ``identity``; ``dropout`` at ``training=False`` or ``p=0``; ``cast`` to the
input's own dtype; ``reshape``/``flatten``/``expand``/``squeeze`` to the same shape;
``transpose(x, a, a)``, identity ``permute``s, and chains of transposes/permutes that compose to
the identity (``x.transpose(0, 1).transpose(1, 0)``); ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1``
with a constant that leaves the type unchanged.

A node is only removed when its output type is exactly its input's type, so nothing downstream
sees a different shape or dtype.
"""
from __future__ import annotations

from ..core.graph import Graph, Node
from ..registry.records import PassDef
from ._rewrite import Rewriter, same_type, scalar_value

SAME_SHAPE_OPS = ("reshape", "flatten", "expand", "squeeze", "unsqueeze", "contiguous",
                  "broadcast_to")


def _perm(node: Node, rank: int) -> tuple | None:
    """The axis permutation a transpose/permute applies, or None."""
    p = node.params
    try:
        if node.op == "transpose":
            a, b = int(p["axis0"]) % rank, int(p["axis1"]) % rank
            perm = list(range(rank))
            perm[a], perm[b] = perm[b], perm[a]
            return tuple(perm)
        if node.op == "permute":
            axes = tuple(int(x) % rank for x in p["axes"])
            return axes if sorted(axes) == list(range(rank)) else None
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return None


def _noop_source(rw: Rewriter, node: Node) -> str | None:
    """The input the node's output equals, or None."""
    if len(node.outputs) != 1 or not node.inputs or node.inputs[0] is None:
        return None
    x = node.inputs[0]
    out_t = rw.graph.values[node.outputs[0]].type
    x_t = rw.graph.values[x].type
    op, p = node.op, node.params
    if not same_type(out_t, x_t) and op not in ("transpose", "permute", "add", "mul"):
        return None
    if op == "identity":
        return x
    if op == "dropout":
        if p.get("training", True) is False or p.get("p", 0.5) == 0:
            return x
        return None
    if op == "cast" or op in SAME_SHAPE_OPS:
        return x
    if op in ("transpose", "permute"):
        rank = len(x_t.shape)
        perm = _perm(node, rank)
        if perm is None:
            return None
        if perm == tuple(range(rank)) and same_type(out_t, x_t):
            return x
        inner = rw.producer(x)
        if inner is not None and inner.op in ("transpose", "permute") and inner.inputs:
            iperm = _perm(inner, rank)
            if iperm is not None and tuple(iperm[i] for i in perm) == tuple(range(rank)):
                src = inner.inputs[0]
                if same_type(rw.graph.values[src].type, out_t):
                    return src
        return None
    if op in ("add", "sub", "mul", "div") and len(node.inputs) == 2:
        neutral = 0.0 if op in ("add", "sub") else 1.0
        a, b = node.inputs
        if scalar_value(rw.const(b)) == neutral and same_type(rw.graph.values[a].type, out_t):
            return a
        if op in ("add", "mul") and scalar_value(rw.const(a)) == neutral and same_type(
                rw.graph.values[b].type, out_t):
            return b
        return None
    return None


def eliminate_noops(graph: Graph) -> Graph:
    rw = Rewriter(graph)
    for node in graph.nodes:
        src = _noop_source(rw, node)
        if src is not None:
            rw.rename(node.outputs[0], rw.resolve(src))
            continue
        rw.emit(node)
    return rw.finish() if rw.changed else graph


PASS = PassDef(name="noop_elimination", level="basic", run=eliminate_noops, order=20,
               doc="Remove identity, inactive dropout, same-dtype casts, same-shape reshapes, "
                   "transpose pairs and x+0 / x*1.")
