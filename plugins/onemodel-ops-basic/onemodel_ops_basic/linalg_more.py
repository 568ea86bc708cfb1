"""More matrix ops, as PyTorch names them: bmm (batched, no broadcasting), outer and diag."""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import Dim, OpError, TensorType, common, dim, promote_types, same_dim


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

def diag_length(rows, cols, k):
    """The length of diagonal k of a rows x cols matrix (0 when it misses the matrix)."""
    length = Dim.min(rows, cols - k) if k >= 0 else Dim.min(rows + k, cols)
    return Dim.max(length, 0) if isinstance(length, Dim) else max(length, 0)


def _diag_infer(x, diagonal=0):
    k = dim(diagonal)
    if isinstance(k, Dim):
        raise OpError("ops.diag: parameter 'diagonal' must be a fixed int, not a symbolic size")
    if x.ndim == 1:
        n = x.shape[0] + abs(k)
        return TensorType(x.dtype, (n, n))
    if x.ndim == 2:
        return TensorType(x.dtype, (diag_length(x.shape[0], x.shape[1], k),))
    raise OpError(f"ops.diag: input x must be 1-D (to build a matrix) or 2-D (to read a "
                  f"diagonal), got {x}")


def _diag(x, diagonal=0):
    if x.ndim not in (1, 2):
        raise OpError(f"ops.diag: input x must be 1-D or 2-D, got shape {x.shape}")
    return np.diag(x, diagonal).copy()


def _diag_vjp(ctx, g):
    x = ctx.inputs[0]
    k = ctx.params["diagonal"]
    if x.ndim == 1:
        return (np.diagonal(g, k).copy(),)
    gx = np.zeros(x.shape, g.dtype)
    pos = np.arange(g.shape[0])
    gx[pos + max(-k, 0), pos + max(k, 0)] = g
    return (gx,)


diag = OpDef(
    name="diag", inputs=("x",), params={"diagonal": Param(kind="int", default=0,
                                                         doc="0: the main diagonal, > 0 above")},
    kernel=_diag, infer=_diag_infer, vjp=_diag_vjp,
    samples=lambda rng: [Sample(args=(rng.standard_normal(3),), name="build"),
                         Sample(args=(rng.standard_normal(2),), params={"diagonal": -1},
                                name="build_below"),
                         Sample(args=(rng.standard_normal((3, 4)),), name="read"),
                         Sample(args=(rng.standard_normal((3, 4)),), params={"diagonal": 2},
                                name="read_above"),
                         Sample(args=(rng.standard_normal((4, 3)),), params={"diagonal": -2},
                                name="read_below")],
    methods=("diag",),
    doc="torch.diag: a 1-D x becomes a square matrix with x on diagonal k (zeros elsewhere); "
        "a 2-D x gives its diagonal k as a vector.",
)

OPS = (bmm, outer, diag)
