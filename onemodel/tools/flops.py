"""How much arithmetic a graph does at given sizes, from the ops' records (`OpTraits.cost`),
so a benchmark can state GFLOP/s and a share of the ISA's peak. Ops without a declared cost
count zero: the figure is a lower bound made of the GEMMs, convolutions and attention that
declare theirs."""
from __future__ import annotations

from typing import Mapping

from ..core.symbolic import evaluate
from ..core.types import TensorType
from ..registry import REGISTRY


def _concrete(t: TensorType | None, env: Mapping[str, int]) -> TensorType | None:
    if t is None:
        return None
    return TensorType(t.dtype, tuple(evaluate(d, env) for d in t.shape))


def graph_flops(graph, env: Mapping[str, int]) -> float:
    """The declared floating-point operations of one run of ``graph`` with its symbolic axes
    at ``env`` (a multiply-add counts two)."""
    ops = REGISTRY.tables().ops
    total = 0.0
    for node in graph.nodes:
        rec = ops.get(node.op)
        if rec is None or rec.traits.cost is None:
            continue
        ins = [_concrete(graph.values[i].type, env) if i is not None else None
               for i in node.inputs]
        outs = [_concrete(graph.values[o].type, env) for o in node.outputs]
        total += float(rec.traits.cost(ins, outs, dict(node.params)).flops)
    return total


__all__ = ["graph_flops"]
