"""Attention recognised when traced from primitives.

``softmax(q @ k.transpose(-2, -1) * (1/sqrt(E)) [+ mask], axis=-1) @ v`` (the scale as a
multiplication or a division by ``sqrt(E)``, on the scores or on ``q``; ``E`` = q's last axis)
becomes ``scaled_dot_product_attention(q, k, v, mask)``. A float mask added to the scores is
kept as the op's additive mask.
"""
from __future__ import annotations

import math

from ..core.graph import Graph, Node
from ..core.symbolic import Dim
from ..registry import REGISTRY
from ..registry.records import PassDef
from ._match import close, last_axis, node_of, scaled
from ._rewrite import Rewriter, same_type


def _transposed(rw: Rewriter, name: str) -> str | None:
    t = node_of(rw, name, "transpose")
    if t is None:
        return None
    rank = len(rw.graph.values[t.inputs[0]].shape)
    if rank < 2:
        return None
    a, b = sorted((int(t.params["axis0"]) % rank, int(t.params["axis1"]) % rank))
    return t.inputs[0] if (a, b) == (rank - 2, rank - 1) else None


def _scores(rw: Rewriter, name: str):
    """(q, k, mask) if ``name`` is q @ k^T / sqrt(E) (+ mask)."""
    mask = None
    add = node_of(rw, name, "add")
    if add is not None:
        for s, m in (add.inputs, add.inputs[::-1]):
            if node_of(rw, s, "mul", "div", "matmul") is not None and rw.graph.values[
                    m].dtype.is_float:
                name, mask = s, m
                break
        else:
            return None
    base, factor = scaled(rw, name)
    mm = node_of(rw, base, "matmul")
    if mm is None:
        return None
    q, kt = mm.inputs
    q, qf = scaled(rw, q)
    factor *= qf
    k = _transposed(rw, kt)
    if k is None:
        return None
    e = rw.graph.values[q].shape[-1]
    if isinstance(e, Dim) or not close(factor, 1.0 / math.sqrt(e)):
        return None
    return q, k, mask


def recognize_attention(graph: Graph) -> Graph:
    if "scaled_dot_product_attention" not in REGISTRY.tables().ops:
        return graph
    rw = Rewriter(graph)
    replace: dict[str, Node] = {}
    for out in graph.nodes:
        if out.op != "matmul":
            continue
        p, v = out.inputs
        sm = node_of(rw, p, "softmax")
        if sm is None or not last_axis(sm.params.get("axis", -1),
                                       len(graph.values[sm.inputs[0]].shape)):
            continue
        found = _scores(rw, sm.inputs[0])
        if found is None:
            continue
        q, k, mask = found
        node = Node("scaled_dot_product_attention", (q, k, v, mask), out.outputs, {}, out.source)
        try:
            from ..core.dispatch import infer
            t = infer(REGISTRY.tables().ops[node.op],
                      [graph.values[i].type if i else None for i in node.inputs], {})
        except Exception:  # noqa: BLE001 - shapes the op does not accept: leave the pattern
            continue
        if not same_type(t, graph.values[out.outputs[0]].type):
            continue
        replace[out.outputs[0]] = node
    return rw.replace_producers(replace)


PASS = PassDef(name="recognize_attention", level="all", run=recognize_attention, order=5,
               doc="softmax(q @ k^T / sqrt(E) [+ mask]) @ v -> scaled_dot_product_attention.")
