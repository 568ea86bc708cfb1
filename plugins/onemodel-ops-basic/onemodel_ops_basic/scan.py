"""Scans along one axis: cumsum and cumprod (torch.cumsum / torch.cumprod).

The output has the input's shape; ints and bools accumulate in i64 as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import DType, OpError, TensorType, norm_axis


def _scan_dtype(dtype: DType) -> DType:
    return dtype if dtype.is_float else DType.I64


def _scan_infer(op):
    def infer(x, axis):
        if x.ndim:
            norm_axis(axis, x.ndim, op)
        elif axis not in (0, -1):
            raise OpError(f"ops.{op}: parameter 'axis' is {axis}, a 0-d tensor has only axis 0")
        return TensorType(_scan_dtype(x.dtype), x.shape)
    return infer


def _axis(op, x, axis):
    return norm_axis(axis, x.ndim, op) if x.ndim else None


def _scan_kernel(name: str, fn):
    """The kernel of a scan by numpy's ``fn`` (np.cumsum, np.cumprod), in PyTorch's dtype:
    ints and bools accumulate in i64, f16 accumulates in f32."""
    def kernel(x, axis):
        a = _axis(name, x, axis)
        dt = _scan_dtype(DType.from_numpy(x.dtype)).numpy
        if x.ndim == 0:
            return x.astype(dt)
        acc = np.float32 if dt == np.float16 else dt
        return fn(x, axis=a, dtype=acc).astype(dt, copy=False)
    return kernel


_cumsum = _scan_kernel("cumsum", np.cumsum)


def _reverse_cumsum(g, a):
    return np.flip(np.cumsum(np.flip(g, a), axis=a), a)


def _cumsum_vjp(ctx, g):
    x = ctx.inputs[0]
    if x.ndim == 0:
        return (g,)
    return (_reverse_cumsum(g, _axis("cumsum", x, ctx.params["axis"])),)


_cumprod = _scan_kernel("cumprod", np.cumprod)


def _cumprod_vjp(ctx, g):
    """d out[j] / d x[i] = prod(x[k] for k <= j, k != i) for j >= i: the exclusive prefix up to
    i times the products of x[i+1..j] (no division, so zeros are exact)."""
    x = ctx.inputs[0]
    if x.ndim == 0:
        return (g,)
    a = _axis("cumprod", x, ctx.params["axis"])
    xm, gm = np.moveaxis(x, a, -1), np.moveaxis(g, a, -1)
    n = xm.shape[-1]
    out = np.zeros_like(xm, dtype=np.result_type(xm, gm))
    prefix = np.ones(xm.shape[:-1], out.dtype)
    for i in range(n):
        after = np.cumprod(xm[..., i + 1:], axis=-1)
        out[..., i] = prefix * (gm[..., i] + np.sum(gm[..., i + 1:] * after, axis=-1))
        prefix = prefix * xm[..., i]
    return (np.moveaxis(out, -1, a),)


def _samples(rng, zeros):
    r = rng.standard_normal
    yield Sample(args=(r((3, 4)),), params={"axis": 1}, name="rows")
    yield Sample(args=(r((2, 3, 4)),), params={"axis": -3}, name="negative")
    yield Sample(args=(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32),), params={"axis": 0},
                 name="int")
    yield Sample(args=(np.array([[True, False, True]]),), params={"axis": -1}, name="bool")
    if zeros:
        yield Sample(args=(np.array([[2.0, 0.0, 3.0, -1.5], [0.0, 1.5, 0.0, 2.0]]),),
                     params={"axis": 1}, name="zeros")


_AXIS = {"axis": Param(kind="axis", doc="the axis to scan along")}

cumsum = OpDef(
    name="cumsum", inputs=("x",), params=dict(_AXIS), kernel=_cumsum,
    infer=_scan_infer("cumsum"), vjp=_cumsum_vjp, samples=lambda rng: _samples(rng, False),
    methods=("cumsum",),
    doc="Running sum along axis (torch.cumsum); ints and bools sum to i64. The gradient is "
        "the reversed running sum of the output gradient.",
)

cumprod = OpDef(
    name="cumprod", inputs=("x",), params=dict(_AXIS), kernel=_cumprod,
    infer=_scan_infer("cumprod"), vjp=_cumprod_vjp, samples=lambda rng: _samples(rng, True),
    methods=("cumprod",),
    doc="Running product along axis (torch.cumprod); ints and bools multiply in i64. The "
        "gradient is exact where x has zeros.",
)

OPS = (cumsum, cumprod)
