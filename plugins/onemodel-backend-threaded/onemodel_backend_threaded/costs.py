"""How much work a node is, in FLOP-equivalents, from its concrete shapes.

A matrix product counts its multiply-adds (2 per term); a memory-bound op counts its elements
times `ELEM`, the FLOPs a float32 GEMM does in the time a ufunc takes per element. The thresholds
below were measured with ``tools/measure_threaded_threshold.py`` on the project's reference
machine (2 cores, OpenBLAS single-threaded); docs/guide/backends.md records the run.
"""
from __future__ import annotations

import math

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

GEMM_LIKE = frozenset({"linear", "fused_linear", "matmul", "matmul_t"})
CONV = frozenset({"conv2d", "fused_conv2d"})
#: ops whose work is one or more BLAS matrix products (BLAS threads can split them)
BLAS_OPS = GEMM_LIKE | CONV | {"scaled_dot_product_attention"}
VIEWS = frozenset({"reshape", "flatten", "squeeze", "unsqueeze", "transpose", "permute",
                   "expand"})
#: elements touched per output element, roughly, for ops that are not one pass
PASSES = {"softmax": 5, "log_softmax": 6, "layer_norm": 7, "gelu": 15, "erf": 12,
          "sigmoid": 4, "batch_norm": 2, "elementwise_chain": 1}


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
    out = out_types[0]
    n_out = numel(out.shape)
    if op in VIEWS:
        return 0.0
    if op in ("linear", "fused_linear"):
        k = int(in_types[1].shape[-1])
        return 2.0 * n_out * k + 2 * ELEM * n_out
    if op in ("matmul", "matmul_t"):
        a = in_types[0]
        ta = bool(params.get("transpose_a", False)) if op == "matmul_t" else False
        k = int(a.shape[-2] if ta else a.shape[-1]) if len(a.shape) >= 2 else int(a.shape[0])
        return 2.0 * n_out * k
    if op in CONV:
        w = in_types[1]
        per_out = numel(w.shape[1:])  # c/groups * kh * kw
        cols = n_out // int(w.shape[0]) * numel(w.shape[1:])  # the im2col copy
        return 2.0 * n_out * per_out + ELEM * (cols + 2 * n_out)
    if op == "scaled_dot_product_attention":
        q, k, v = in_types[:3]
        scores = numel(q.shape[:-1]) * int(k.shape[-2])
        return 2.0 * scores * (int(q.shape[-1]) + int(v.shape[-1])) + 6 * ELEM * scores
    if op in ("max_pool2d", "avg_pool2d"):
        ks = params.get("kernel_size", 2)
        kk = numel(ks) if isinstance(ks, (tuple, list)) else int(ks) ** 2
        return ELEM * n_out * kk
    if op == "elementwise_chain":
        return ELEM * n_out * (len(params.get("steps", ())) + 1)
    if op in PASSES:
        return ELEM * n_out * PASSES[op]
    return _touched(in_types, out_types)


__all__ = ["ELEM", "HANDOFF_FLOPS", "SPLIT_FLOPS", "STEP_FLOPS", "PACK_FLOPS", "node_cost",
           "numel"]
