"""Attention recognised when traced from primitives.

``softmax(q @ k.transpose(-2, -1) * (1/sqrt(E)) [+ mask], axis=-1) @ v`` (the scale as a
multiplication or a division by ``sqrt(E)``, on the scores or on ``q``; ``E`` = q's last axis)
becomes ``scaled_dot_product_attention(q, k, v, mask)``. A float mask added to the scores is
kept as the op's additive mask.
"""
from __future__ import annotations

import math

from onemodel.core.dispatch import infer
from onemodel.core.symbolic import Dim
from onemodel.passes.patterns import P, PatternMatcher, close, last_axis, match, same_type
from onemodel.registry import PassDef, get_op

from ._algebra import node_of, scaled


def _swaps_last_two(m):
    t = m.nodes["kt"]
    rank = len(m.rw.type(t.inputs[0]).shape)
    return rank >= 2 and sorted((int(t.params["axis0"]) % rank, int(t.params["axis1"]) % rank)
                                ) == [rank - 2, rank - 1]


def _softmax_last(m):
    sm = m.nodes["sm"]
    return last_axis(sm.params.get("axis", -1), len(m.rw.type(sm.inputs[0]).shape))


ROOT = P("matmul", [P("softmax", [P.var("scores")], name="sm", where=_softmax_last), P.var("v")])
QK = P("matmul", [P.var("q"), P("transpose", [P.var("k")], name="kt", where=_swaps_last_two)])


def _scores(m):
    """(q, k, mask) if the softmax input is q @ k^T / sqrt(E) (+ mask)."""
    rw, name, mask = m.rw, m["scores"], None
    add = node_of(rw, name, "add")
    if add is not None:
        for s, mk in (add.inputs, add.inputs[::-1]):
            if node_of(rw, s, "mul", "div", "matmul") is not None and rw.type(mk).dtype.is_float:
                name, mask = s, mk
                break
        else:
            return None
    base, factor = scaled(rw, name)
    qk = match(QK, base, m)
    if qk is None:
        return None
    q, qf = scaled(rw, qk["q"])
    e = rw.type(q).shape[-1]
    if isinstance(e, Dim) or not close(factor * qf, 1.0 / math.sqrt(e)):
        return None
    return q, qk["k"], mask


def _attention(m):
    found = _scores(m)
    if found is None:
        return None
    q, k, mask = found
    node = m.node("scaled_dot_product_attention", [q, k, m["v"], mask])
    try:
        t = infer(get_op(node.op), [m.rw.type(i) if i else None for i in node.inputs], {})
    except Exception:  # noqa: BLE001 - shapes the op does not accept: leave the pattern
        return None
    return node if same_type(t, m.rw.type(m.root.outputs[0])) else None


ATTENTION = PatternMatcher([(ROOT, _attention)])

PASS = PassDef(name="recognize_attention", level="all", run=ATTENTION.rewrite, order=5,
               doc="softmax(q @ k^T / sqrt(E) [+ mask]) @ v -> scaled_dot_product_attention.")
