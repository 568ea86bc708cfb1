"""More products, as PyTorch names them: bmm (batched, no broadcasting) and outer."""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Sample

from ._common import OpError, TensorType, common, promote_types, same_dim


def _bmm_infer(a, b):
    if a.ndim != 3 or b.ndim != 3:
        raise OpError(f"ops.bmm: both inputs must be 3-D (batch, n, m), got {a} and {b}")
    if not same_dim(a.shape[0], b.shape[0]):
        raise OpError(f"ops.bmm: batch sizes differ: {a} and {b} (bmm does not broadcast)")
    if not same_dim(a.shape[2], b.shape[1]):
        raise OpError(f"ops.bmm: {a} and {b} do not match: a's last axis ({a.shape[2]}) must "
                      f"equal b's middle axis ({b.shape[1]})")
    return TensorType(promote_types(a.dtype, b.dtype), (a.shape[0], a.shape[1], b.shape[2]))


def _bmm_vjp(ctx, g):
    a, b = ctx.inputs
    return (np.matmul(g, np.swapaxes(b, 1, 2)) if ctx.needs_grad[0] else None,
            np.matmul(np.swapaxes(a, 1, 2), g) if ctx.needs_grad[1] else None)


bmm = OpDef(
    name="bmm", inputs=("a", "b"), kernel=lambda a, b: np.matmul(a, b, dtype=common(a, b)),
    infer=_bmm_infer, vjp=_bmm_vjp,
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3, 4)),
                                      rng.standard_normal((2, 4, 5)))),
                         Sample(args=(np.arange(12, dtype=np.int64).reshape(1, 3, 4),
                                      np.ones((1, 4, 2), np.int64)), name="int")],
    methods=("bmm",),
    doc="Batched matrix product of (batch, n, k) and (batch, k, m) tensors (torch.bmm); the "
        "batches must agree, nothing broadcasts.",
)


def _outer_infer(a, b):
    if a.ndim != 1 or b.ndim != 1:
        raise OpError(f"ops.outer: both inputs must be 1-D, got {a} and {b}")
    return TensorType(promote_types(a.dtype, b.dtype), (a.shape[0], b.shape[0]))


outer = OpDef(
    name="outer", inputs=("a", "b"),
    kernel=lambda a, b: np.multiply.outer(a.astype(common(a, b)), b.astype(common(a, b))),
    infer=_outer_infer,
    vjp=lambda ctx, g: (g @ ctx.inputs[1] if ctx.needs_grad[0] else None,
                        ctx.inputs[0] @ g if ctx.needs_grad[1] else None),
    samples=lambda rng: [Sample(args=(rng.standard_normal(3), rng.standard_normal(4))),
                         Sample(args=(np.array([1, 2], np.int32), rng.standard_normal(3)),
                                name="promote")],
    methods=("outer",),
    doc="Outer product of two vectors: out[i, j] = a[i] * b[j] (torch.outer); dtypes promote.",
)

OPS = (bmm, outer)
