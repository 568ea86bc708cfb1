"""remainder, fmod and floor_divide (``%`` and ``//`` on tensors) with PyTorch's semantics:
``remainder`` takes the divisor's sign (Python's ``%``), ``fmod`` the dividend's (C's fmod),
``floor_divide`` rounds down (torch >= 1.13, Python's ``//``). Ints stay ints (promotion as
``add``); two bools are refused and an integer division by zero raises, as in torch. numpy's
``remainder`` / ``floor_divide`` follow Python's float algorithm, which is torch's too."""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Sample

from ._common import DType, OpError, binary_infer, common
from .elementwise import _need, pointwise


def _infer(op):
    base = binary_infer(op)

    def infer(a, b):
        if a.dtype == DType.BOOL and b.dtype == DType.BOOL:
            raise OpError(f"ops.{op}: a and b are both bool tensors; {op} takes numbers")
        return base(a, b)
    return infer


def _kernel(op, ufunc):
    def kernel(a, b):
        dt = common(a, b)
        a, b = a.astype(dt, copy=False), b.astype(dt, copy=False)
        if dt.kind != "f" and np.any(b == 0):
            raise OpError(f"ops.{op}: integer division by zero (b holds 0)")
        return ufunc(a, b)
    return kernel


def _away_from_steps(rng, a, b):
    """``a`` nudged so that a / b is not within 0.1 of an integer (finite differences would
    cross a jump)."""
    q = a / b
    return np.where(np.abs(q - np.round(q)) < 0.1, a + 0.3 * b, a)


def _samples(rng):
    b = rng.uniform(0.5, 2.0, (3, 4)) * np.where(rng.random((3, 4)) < 0.5, -1.0, 1.0)
    a = _away_from_steps(rng, rng.uniform(-6, 6, (3, 4)), b)
    yield Sample(args=(a, b), name="same")
    b1 = np.array([1.5, -2.5, 0.75, -0.6])
    yield Sample(args=(_away_from_steps(rng, rng.uniform(-5, 5, (2, 4)), b1), b1),
                 name="broadcast")
    yield Sample(args=(np.array([5.0, -5.0, 5.0, -5.0, 0.0, 7.5]),
                       np.array([3.0, 3.0, -3.0, -3.0, 2.0, 2.5])), grad=False, name="signs")
    yield Sample(args=(np.array([7, -7, 7, -7, 0, 6], dtype=np.int64),
                       np.array([2, 2, -2, -2, 3, 3], dtype=np.int64)), grad=False, name="int")
    yield Sample(args=(np.array([1.0, -1.0, 0.5]), np.array([0.1, 0.1, 0.0])), grad=False,
                 name="inexact")


def _remainder_vjp(ctx, g):
    a, b = ctx.inputs
    return (g if _need(ctx, 0) else None,
            -g * np.floor_divide(a, b) if _need(ctx, 1) else None)


def _fmod_vjp(ctx, g):
    a, b = ctx.inputs
    return (g if _need(ctx, 0) else None,
            -g * np.trunc(a / b) if _need(ctx, 1) else None)


remainder = OpDef(
    name="remainder", inputs=("a", "b"), kernel=_kernel("remainder", np.remainder),
    infer=_infer("remainder"), vjp=_remainder_vjp, samples=_samples,
    methods=("remainder", "__mod__"), reflected=("__rmod__",),
    traits=pointwise("np.remainder(a, b)"),
    doc="a - b * floor(a / b): the remainder with the sign of b, Python's and torch's ``%``.",
)

fmod = OpDef(
    name="fmod", inputs=("a", "b"), kernel=_kernel("fmod", np.fmod), infer=_infer("fmod"),
    vjp=_fmod_vjp, samples=_samples, methods=("fmod",), traits=pointwise("np.fmod(a, b)"),
    doc="a - b * trunc(a / b): the remainder with the sign of a (C's fmod, torch.fmod).",
)

floor_divide = OpDef(
    name="floor_divide", inputs=("a", "b"), kernel=_kernel("floor_divide", np.floor_divide),
    infer=_infer("floor_divide"), vjp=None, samples=_samples,
    methods=("floor_divide", "__floordiv__"), reflected=("__rfloordiv__",),
    traits=pointwise("np.floor_divide(a, b)"),
    doc="floor(a / b), Python's and torch's ``//`` (ints stay ints). Not differentiable "
        "(vjp=None), as in torch.",
)

OPS = (remainder, fmod, floor_divide)
