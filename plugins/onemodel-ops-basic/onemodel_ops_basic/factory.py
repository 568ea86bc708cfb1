"""Tensors made from scratch (``full``, ``arange``) and the ops behind the in-place methods
``fill_``, ``zero_``, ``copy_`` and ``clone``."""
from __future__ import annotations

import math
import numbers

import numpy as np

from onemodel.registry import OpDef, OpTraits, Param, Sample

from ._common import (DType, Dim, OpError, TensorType, broadcast_shapes, dim, dims, is_static,
                      same_dim)


def _default_dtype(*values) -> DType:
    """PyTorch's choice for Python numbers: any float -> f32, bools -> bool, else i64."""
    if any(isinstance(v, float) for v in values):
        return DType.F32
    if values and all(isinstance(v, (bool, np.bool_)) for v in values):
        return DType.BOOL
    return DType.I64


# -- full -------------------------------------------------------------------------------------------
def _full_infer(shape, value, dtype=None):
    shape = dims(shape)
    for d in shape:
        if not isinstance(d, Dim) and d < 0:
            raise OpError(f"ops.full: sizes must be non-negative, got {shape}")
    return TensorType(dtype or _default_dtype(value), shape)


def _full(shape, value, dtype=None):
    return np.full(shape, value, dtype=(dtype or _default_dtype(value)).numpy)


full = OpDef(
    name="full", inputs=(),
    params={"shape": Param(kind="shape"), "value": Param(kind="scalar"),
            "dtype": Param(kind="dtype", default=None, optional=True,
                           doc="default: f32 for a float value, bool for a bool, else i64")},
    kernel=_full, infer=_full_infer, vjp=None,
    samples=lambda rng: [Sample(args=(), params={"shape": (2, 3), "value": 1.5, "dtype": "f32"}),
                         Sample(args=(), params={"shape": (4,), "value": 7}, name="int"),
                         Sample(args=(), params={"shape": (), "value": 0, "dtype": "f64"},
                                name="scalar")],
    methods=("__full__",),
    doc="A tensor of shape filled with value (Tensor.zeros/ones/full while tracing). No inputs, "
        "so no gradient (vjp=None).",
)


# -- arange -----------------------------------------------------------------------------------------
def _arange_len(start, stop, step):
    if not isinstance(step, Dim) and step == 0:
        raise OpError("ops.arange: step must not be zero")
    if is_static(start, stop, step):
        return max(0, math.ceil((stop - start) / step))
    if isinstance(step, Dim) or not isinstance(step, numbers.Integral) or any(
            isinstance(v, float) for v in (start, stop)):
        raise OpError("ops.arange: with a symbolic start or stop, the other bounds and the step "
                      "must be ints")
    if step > 0:
        return (stop - start + (step - 1)) // step
    return (start - stop + (-step - 1)) // (-step)


def _arange_infer(start, stop=None, step=1, dtype=None):
    start, stop, step = dim(start), dim(stop), dim(step)
    if stop is None:
        start, stop = 0, start
    return TensorType(dtype or _default_dtype(start, stop, step), (_arange_len(start, stop, step),))


def _arange(start, stop=None, step=1, dtype=None):
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise OpError("ops.arange: step must not be zero")
    return np.arange(start, stop, step).astype((dtype or _default_dtype(start, stop, step)).numpy)


arange = OpDef(
    name="arange", inputs=(),
    params={"start": Param(kind="scalar"), "stop": Param(kind="scalar", default=None, optional=True),
            "step": Param(kind="scalar", default=1),
            "dtype": Param(kind="dtype", default=None, optional=True,
                           doc="default: f32 if any bound is a float, else i64")},
    kernel=_arange, infer=_arange_infer, vjp=None,
    samples=lambda rng: [Sample(args=(), params={"start": 5}, name="stop_only"),
                         Sample(args=(), params={"start": 1, "stop": 8, "step": 3, "dtype": "f32"},
                                name="step"),
                         Sample(args=(), params={"start": 2.0, "stop": -1.0, "step": -0.5},
                                name="float_negative_step")],
    methods=("__arange__",),
    doc="Evenly spaced values in [start, stop) (numpy.arange; Tensor.arange with symbolic "
        "bounds while tracing). No inputs, so no gradient (vjp=None).",
)


# -- fill_ / zero_ / copy_ / clone ------------------------------------------------------------------
def _fill(x, value):
    return np.full(x.shape, value, dtype=x.dtype)


def _zero_grad(ctx, g):
    return (np.zeros_like(g),)  # every element was overwritten by a constant


fill = OpDef(
    name="fill", inputs=("x",), params={"value": Param(kind="scalar")},
    kernel=_fill, infer=lambda x, value: TensorType(x.dtype, x.shape), vjp=_zero_grad,
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),), params={"value": -1.5}),
                         Sample(args=(np.array([1, 2], dtype=np.int32),), params={"value": 7},
                                name="int")],
    inplace=("fill_",),
    doc="A tensor like x filled with value (in place: x.fill_(value)); the gradient wrt x is 0.",
)

zeros_like = OpDef(
    name="zeros_like", inputs=("x",),
    kernel=lambda x: np.zeros(x.shape, dtype=x.dtype),
    infer=lambda x: TensorType(x.dtype, x.shape), vjp=_zero_grad,
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),)),
                         Sample(args=(np.array([True, False]),), name="bool")],
    inplace=("zero_",),
    doc="Zeros of x's shape and dtype (in place: x.zero_()); the gradient wrt x is 0.",
)


def _copy_infer(x, src):
    b = broadcast_shapes(x.shape, src.shape, op="ops.copy")
    if len(b) != x.ndim or not all(same_dim(p, q) for p, q in zip(b, x.shape)):
        raise OpError(f"ops.copy: a source of shape {src} cannot be broadcast to {x}")
    return TensorType(x.dtype, x.shape)


def _copy(x, src):
    out = np.empty(x.shape, dtype=x.dtype)
    np.copyto(out, src, casting="unsafe")
    return out


copy = OpDef(
    name="copy", inputs=("x", "src"), kernel=_copy, infer=_copy_infer,
    vjp=lambda ctx, g: (np.zeros_like(g) if ctx.needs_grad[0] else None,
                        g if ctx.needs_grad[1] else None),
    samples=lambda rng: [Sample(args=(rng.standard_normal((3, 4)), rng.standard_normal((3, 4)))),
                         Sample(args=(rng.standard_normal((3, 4)), rng.standard_normal((4,))),
                                name="broadcast"),
                         Sample(args=(np.zeros((2, 2), dtype=np.int64), np.array([1.7, -2.2])),
                                grad=False, name="cast")],
    inplace=("copy_",),
    doc="src broadcast to x's shape and cast to x's dtype (in place: x.copy_(src)); the "
        "gradient flows to src, x's is 0.",
)

identity = OpDef(
    name="identity", inputs=("x",), kernel=lambda x: x.copy(),
    infer=lambda x: TensorType(x.dtype, x.shape), vjp=lambda ctx, g: (g,),
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),))],
    methods=("clone",), traits=OpTraits(view="reshape"),  # a graph never writes in place
    doc="A copy of x (x.clone()); the gradient passes through.",
)

OPS = (full, arange, fill, zeros_like, copy, identity)
