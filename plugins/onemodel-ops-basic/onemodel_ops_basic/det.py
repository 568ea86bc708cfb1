"""det (torch.linalg.det, ONNX Det): the determinant of each square matrix in the last two axes
of a float tensor, by LU factorisation with partial pivoting (numpy's LAPACK). Its gradient is
``g * det(x) * inverse(x)^T`` (Jacobi's formula), which needs x invertible."""
from __future__ import annotations

import numpy as np

from onemodel.core.types import same_dim
from onemodel.registry import OpDef, Sample

from ._common import OpError, TensorType


def _infer(x: TensorType) -> TensorType:
    if x.ndim < 2 or not same_dim(x.shape[-1], x.shape[-2]):
        raise OpError(f"ops.det: x must be square matrices in its last two axes, got {x}")
    if not x.dtype.is_float:
        raise OpError(f"ops.det: x must be a float tensor, got {x}")
    return TensorType(x.dtype, tuple(x.shape[:-2]))


def _kernel(x):
    if x.dtype.kind != "f":
        raise OpError(f"ops.det: x must be a float tensor, got {x.dtype}")
    wide = np.float64 if x.dtype == np.float16 else x.dtype  # LAPACK has no float16
    return np.asarray(np.linalg.det(x.astype(wide, copy=False))).astype(x.dtype)


def _vjp(ctx, g):
    (x,) = ctx.inputs
    d = np.linalg.det(x)
    try:
        inv_t = np.swapaxes(np.linalg.inv(x), -1, -2)
    except np.linalg.LinAlgError:
        raise OpError("ops.det: no gradient at a singular matrix (this version computes "
                      "det(x) * inverse(x)^T)") from None
    return (np.asarray(g * d)[..., None, None] * inv_t).astype(x.dtype)


def _samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 3)),), name="3x3")
    yield Sample(args=(r((2, 4, 2, 2)),), name="batch")
    yield Sample(args=(r((1, 1)),), name="1x1")
    yield Sample(args=(r((2, 3, 3)).astype(np.float32),), name="f32")


det = OpDef(
    name="det", inputs=("x",), kernel=_kernel, infer=_infer, vjp=_vjp, samples=_samples,
    methods=("det",),
    doc="The determinant of each square matrix in x's last two axes (torch.linalg.det); a "
        "float tensor of the leading axes. The gradient needs invertible matrices.",
)

OPS = (det,)
