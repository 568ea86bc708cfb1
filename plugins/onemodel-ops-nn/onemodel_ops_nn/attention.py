"""scaled_dot_product_attention(q, k, v, mask=None): softmax(q @ k^T / sqrt(E) + mask) @ v."""
from __future__ import annotations

import math

import numpy as np

from onemodel.core import DType, TensorType, broadcast_shapes
from onemodel.core.types import same_dim
from onemodel.registry import OpDef, OpTraits, Sample

from ._common import as_dtype, check_dim, float_dtype, result_dtype
from .activation import softmax_array
from .costs import attention_cost


def _infer(q: TensorType, k: TensorType, v: TensorType, mask: TensorType | None) -> TensorType:
    dtype = float_dtype("scaled_dot_product_attention", q, k, v)
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.ndim < 2:
            raise ValueError(f"{name} must be (..., length, features), got {t}")
    op = "scaled_dot_product_attention"
    check_dim(op, f"the feature size of k {k} (q {q})", k.shape[-1], q.shape[-1])
    check_dim(op, f"the length of v {v} (k {k})", v.shape[-2], k.shape[-2])
    batch = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], op=f"ops.{op}")
    scores = batch + (q.shape[-2], k.shape[-2])
    if mask is not None:
        if mask.dtype != DType.BOOL and not mask.dtype.is_float:
            raise ValueError(f"mask must be boolean (True = attend) or float (added to the "
                             f"scores), got {mask}")
        full = broadcast_shapes(scores, mask.shape, op=f"ops.{op}")
        if len(full) != len(scores) or not all(same_dim(a, b) for a, b in zip(full, scores)):
            raise ValueError(f"mask {mask} does not broadcast to the scores "
                             f"{TensorType(dtype, scores)}")
    return TensorType(dtype, batch + (q.shape[-2], v.shape[-1]))


def _forward(q, k, v, mask):
    dt = result_dtype(q, k, v)
    q, k, v = as_dtype(q, dt), as_dtype(k, dt), as_dtype(v, dt)
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = np.matmul(q, np.swapaxes(k, -1, -2))
    scores *= scale
    if mask is not None:
        if mask.dtype == np.bool_:
            scores = np.where(mask, scores, -np.inf)
        else:
            scores = scores + as_dtype(mask, dt)
    attn = softmax_array(scores, -1)
    return np.matmul(attn, v), attn


def _kernel(q, k, v, mask):
    return _forward(q, k, v, mask)[0]


def _vjp(ctx, g):
    q, k, v, mask = ctx.inputs
    attn = ctx.saved
    need_q, need_k, need_v, need_m = ctx.needs_grad
    dt = attn.dtype
    q, k, v = as_dtype(q, dt), as_dtype(k, dt), as_dtype(v, dt)
    scale = 1.0 / math.sqrt(q.shape[-1])
    gv = np.matmul(np.swapaxes(attn, -1, -2), g) if need_v else None
    gq = gk = gm = None
    if need_q or need_k or need_m:
        gattn = np.matmul(g, np.swapaxes(v, -1, -2))
        gs = attn * (gattn - (gattn * attn).sum(axis=-1, keepdims=True))
        if need_m and mask is not None and mask.dtype != np.bool_:
            gm = gs
        gs = gs * scale
        if need_q:
            gq = np.matmul(gs, k)
        if need_k:
            gk = np.matmul(np.swapaxes(gs, -1, -2), q)
    return gq, gk, gv, gm


def _samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 3, 4)), r((2, 5, 4)), r((2, 5, 3)), None), name="3d")
    yield Sample(args=(r((1, 2, 3, 4)), r((1, 2, 3, 4)), r((1, 2, 3, 4)),
                       np.tril(np.ones((3, 3), dtype=bool))), name="causal_bool")
    yield Sample(args=(r((2, 3, 2)), r((2, 4, 2)), r((2, 4, 2)), r((2, 1, 4))),
                 name="float_mask")
    yield Sample(args=(r((3, 4)), r((2, 2, 4)), r((1, 2, 3)),
                       np.array([[True, False], [True, True], [False, True]])),
                 name="broadcast_batch")


scaled_dot_product_attention = OpDef(
    name="scaled_dot_product_attention", inputs=("q", "k", "v", "mask?"),
    kernel=_kernel, forward=_forward, infer=_infer, vjp=_vjp, samples=_samples,
    traits=OpTraits(batch=lambda params, types: "broadcast" if len(types[0].shape) >= 3 else None,
                    cost=attention_cost),
    doc="softmax(q @ k^T / sqrt(E) + mask) @ v over (..., L, E) / (..., S, E) / (..., S, Ev) "
        "(torch.nn.functional.scaled_dot_product_attention): a boolean mask keeps the positions "
        "where it is True, a float mask is added to the scores.",
)

OPS = (scaled_dot_product_attention,)
