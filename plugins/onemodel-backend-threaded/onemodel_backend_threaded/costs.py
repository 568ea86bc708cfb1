"""How much work a node is, in FLOP-equivalents, from its concrete shapes.

Each op's record says what it costs (`OpTraits.cost`: FLOPs and bytes moved; a matrix product
counts its multiply-adds, 2 per term); bytes count `ELEM` per float32 element, the FLOPs a
float32 GEMM does in the time a ufunc takes per element. The thresholds
below were measured with ``tools/measure_threaded_threshold.py`` on the project's reference
machine (2 cores, OpenBLAS single-threaded); docs/guide/backends.md records the run.
"""
from __future__ import annotations

import ast
import math

from onemodel.registry import REGISTRY
from onemodel.registry.records import NO_TRAITS

#: FLOP-equivalents of one element of a memory-bound op (np.add on 1M float32: ~0.10 ns per
#: element; a 64x256x256 float32 GEMM: ~0.0105 ns per FLOP).
ELEM = 10.0

#: Least cost of a task worth handing to another thread (the measured break-even of two
#: independent branches run on the pool against one after the other).
HANDOFF_FLOPS = 10.0e6

#: What one hand-off costs a batch region (waking a worker and waiting for its piece).
SPLIT_FLOPS = 7.0e6

#: What a BLAS call spends packing one element of a constant weight, which every row piece of
#: a matrix product does again (measured: a 64x1024 @ 1024x1024 float32 product as two 32-row
#: products takes 23 % longer on one thread).
PACK_FLOPS = 30.0

#: The per-step overhead each extra piece of a batch region adds (the Python around a kernel
#: call, which holds the GIL and so does not run in parallel).
STEP_FLOPS = 1.0e6

def numel(shape) -> int:
    return math.prod(int(d) for d in shape)


def node_cost(op: str, in_types: list, out_types: list, params: dict) -> float:
    """FLOP-equivalents of one node (``in_types``/``out_types`` concrete; None for absent)."""
    try:
        return float(_cost(op, in_types, out_types, params))
    except Exception:  # noqa: BLE001 - an odd op or param: count what it touches
        return _touched(in_types, out_types)


def _touched(in_types, out_types) -> float:
    return ELEM * (sum(numel(t.shape) for t in in_types if t is not None)
                   + sum(numel(t.shape) for t in out_types if t is not None))


def _cost(op, in_types, out_types, params) -> float:
    """From the op's record: its declared `OpTraits.cost` (FLOPs plus ``ELEM`` per float32
    element of traffic), zero for a view, the formula's operations per element for a pointwise
    op, else every element it touches."""
    rec = REGISTRY.tables().ops.get(op)
    tr = rec.traits if rec is not None else NO_TRAITS
    if tr.view is not None:
        return 0.0
    if tr.cost is not None:
        c = tr.cost(in_types, out_types, params)
        return float(c.flops) + ELEM * float(c.bytes) / 4.0
    if tr.pointwise is not None:
        expr = tr.pointwise.expression(rec.inputs, params)
        steps = 1 if expr is None else max(1, sum(
            isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Call, ast.Compare)) for n in ast.walk(expr)))
        return ELEM * numel(out_types[0].shape) * steps
    return _touched(in_types, out_types)


__all__ = ["ELEM", "HANDOFF_FLOPS", "SPLIT_FLOPS", "STEP_FLOPS", "PACK_FLOPS", "node_cost",
           "numel"]
