"""Cost functions of the nn ops (`OpTraits.cost`): FLOPs of their arithmetic and bytes they move,
on concrete input and output types, for schedulers that decide what is worth a thread."""
from __future__ import annotations

import math

from onemodel.registry import OpCost


def numel(shape) -> int:
    return math.prod(int(d) for d in shape)


def linear_cost(ins, outs, params) -> OpCost:
    out = outs[0]
    n_out = numel(out.shape)
    w = ins[1]
    return OpCost(flops=2.0 * n_out * int(w.shape[-1]), bytes=2 * n_out * out.dtype.itemsize,
                  packs=numel(w.shape))


def conv2d_cost(ins, outs, params) -> OpCost:
    out, w = outs[0], ins[1]
    n_out = numel(out.shape)
    per_out = numel(w.shape[1:])  # c/groups * kh * kw
    cols = n_out // int(w.shape[0]) * per_out  # the im2col copy
    return OpCost(flops=2.0 * n_out * per_out, bytes=(cols + 2 * n_out) * out.dtype.itemsize)


def attention_cost(ins, outs, params) -> OpCost:
    q, k, v = ins[:3]
    scores = numel(q.shape[:-1]) * int(k.shape[-2])
    return OpCost(flops=2.0 * scores * (int(q.shape[-1]) + int(v.shape[-1])),
                  bytes=6 * scores * outs[0].dtype.itemsize)


def pool_cost(ins, outs, params) -> OpCost:
    ks = params.get("kernel_size", 2)
    kk = numel(ks) if isinstance(ks, (tuple, list)) else int(ks) ** 2
    return OpCost.passes(outs[0], kk)


def passes(n: float):
    """The cost function of a memory-bound op touching each output element ``n`` times."""
    return lambda ins, outs, params: OpCost.passes(outs[0], n)
