"""Reductions over axes: sum, mean, max, min (values only), argmax, any and all.

``axis`` is None (every axis), an int or a tuple of ints; an empty tuple also reduces every axis
(PyTorch's and ONNX's convention). ``keepdims`` keeps reduced axes with size 1.
"""
from __future__ import annotations

import builtins

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import DType, OpError, TensorType, float_of, norm_axes, norm_axis


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _params():
    return {"axis": Param(kind="axes", default=None, optional=True,
                          doc="None, an int or a tuple of ints"),
            "keepdims": Param(kind="bool", default=False)}


def _reduce_infer(name, dtype_rule):
    def infer(x, axis=None, keepdims=False):
        axes = norm_axes(axis, x.ndim, name)
        return TensorType(dtype_rule(x.dtype), _reduced_shape(x.shape, axes, keepdims))
    return infer


def _grad_keepdims(g, x, axes, keepdims):
    """The output gradient with reduced axes restored as size 1 (broadcastable to x)."""
    return g if keepdims else np.expand_dims(g, axes)


def _sum_dtype(dtype: DType) -> DType:
    return dtype if dtype.is_float else DType.I64  # PyTorch sums ints and bools into int64


def _sum(x, axis=None, keepdims=False):
    axes = norm_axes(axis, x.ndim, "sum")
    if x.dtype == np.float16:  # accumulate in f32 as PyTorch does
        return np.sum(x, axis=axes, keepdims=keepdims, dtype=np.float32).astype(np.float16)
    return np.sum(x, axis=axes, keepdims=keepdims, dtype=_sum_dtype(DType.from_numpy(x.dtype)).numpy)


def _sum_vjp(ctx, g):
    x = ctx.inputs[0]
    axes = norm_axes(ctx.params["axis"], x.ndim, "sum")
    return (np.broadcast_to(_grad_keepdims(g, x, axes, ctx.params["keepdims"]), x.shape),)


def _reduce_samples(rng, ties=False):
    yield Sample(args=(rng.standard_normal((3, 4)),), name="all")
    yield Sample(args=(rng.standard_normal((2, 3, 4)),), params={"axis": (0, -1), "keepdims": True},
                 name="axes_keepdims")
    yield Sample(args=(rng.standard_normal((2, 3, 4)),), params={"axis": -2}, name="negative")


def _sum_samples(rng):
    yield from _reduce_samples(rng)
    yield Sample(args=(np.array([[1, 2], [3, 4]], dtype=np.int32),), params={"axis": 1},
                 name="int")


sum = OpDef(  # noqa: A001 - the op is called sum
    name="sum", inputs=("x",), params=_params(), kernel=_sum,
    infer=_reduce_infer("sum", _sum_dtype), vjp=_sum_vjp, samples=_sum_samples,
    methods=("sum",),
    doc="Sum over axis (None: every axis); ints and bools sum to i64 as in PyTorch.",
)


def _mean(x, axis=None, keepdims=False):
    axes = norm_axes(axis, x.ndim, "mean")
    dt = float_of(DType.from_numpy(x.dtype)).numpy
    acc = np.float32 if dt == np.float16 else dt
    return np.mean(x, axis=axes, keepdims=keepdims, dtype=acc).astype(dt, copy=False)


def _mean_vjp(ctx, g):
    x = ctx.inputs[0]
    axes = norm_axes(ctx.params["axis"], x.ndim, "mean")
    count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    gk = _grad_keepdims(g, x, axes, ctx.params["keepdims"])
    return (np.broadcast_to(gk / builtins.max(count, 1), x.shape),)


mean = OpDef(
    name="mean", inputs=("x",), params=_params(), kernel=_mean,
    infer=_reduce_infer("mean", float_of), vjp=_mean_vjp,
    samples=lambda rng: [*_reduce_samples(rng),
                         Sample(args=(np.array([1, 2, 4], dtype=np.int64),), grad=False,
                                name="int")],
    methods=("mean",),
    doc="Mean over axis (None: every axis); int inputs give f32.",
)


def _extreme(name, fn):
    def kernel(x, axis=None, keepdims=False):
        axes = norm_axes(axis, x.ndim, name)
        if x.size == 0:
            raise OpError(f"ops.{name}: cannot reduce an empty tensor of shape {x.shape}")
        return fn(x, axis=axes, keepdims=keepdims)

    def vjp(ctx, g):
        x, out = ctx.inputs[0], ctx.outputs[0]
        axes = norm_axes(ctx.params["axis"], x.ndim, name)
        keep = ctx.params["keepdims"]
        ok = _grad_keepdims(out, x, axes, keep)
        gk = _grad_keepdims(g, x, axes, keep)
        mask = x == ok
        count = mask.sum(axis=axes, keepdims=True)
        return (np.where(mask, gk / np.maximum(count, 1), 0),)  # ties share the gradient

    def samples(rng):
        yield from _reduce_samples(rng)
        yield Sample(args=(np.array([[1.0, 3.0, 3.0], [2.0, -1.0, -1.0]]),), params={"axis": 1},
                     grad=False, name="ties")
        yield Sample(args=(np.array([[5, -2], [7, 1]], dtype=np.int64),), params={"axis": 0},
                     name="int")

    return OpDef(
        name=name, inputs=("x",), params=_params(), kernel=kernel,
        infer=_reduce_infer(name, lambda d: d), vjp=vjp, samples=samples, methods=(name,),
        doc=f"{name.capitalize()} over axis (None: every axis), values only (use argmax for "
            f"positions). The gradient is split evenly among tied elements.",
    )


max = _extreme("max", np.max)  # noqa: A001
min = _extreme("min", np.min)  # noqa: A001


def arg_infer(name: str):
    """``infer`` of an index reduction (argmax, argmin): an i64 position along ``axis``."""
    def infer(x, axis=None, keepdims=False):
        if axis is None:
            shape = (1,) * x.ndim if keepdims else ()
        else:
            a = norm_axis(axis, x.ndim, name)
            shape = _reduced_shape(x.shape, (a,) if x.ndim else (), keepdims)
        return TensorType(DType.I64, shape)
    return infer


def arg_kernel(name: str, fn):
    """The kernel of an index reduction by numpy's ``fn`` (np.argmax, np.argmin)."""
    def kernel(x, axis=None, keepdims=False):
        if x.size == 0:
            raise OpError(f"ops.{name}: cannot reduce an empty tensor of shape {x.shape}")
        if axis is None:
            out = fn(x)
            return np.reshape(out, (1,) * x.ndim) if keepdims else out
        if x.ndim == 0:
            return np.zeros((), np.int64)
        return fn(x, axis=norm_axis(axis, x.ndim, name), keepdims=keepdims)
    return kernel


_argmax_infer = arg_infer("argmax")
_argmax = arg_kernel("argmax", np.argmax)


def _argmax_samples(rng):
    yield Sample(args=(rng.standard_normal((3, 4)),), params={"axis": 1})
    yield Sample(args=(rng.standard_normal((2, 3, 4)),), params={"axis": -2, "keepdims": True},
                 name="negative_keepdims")
    yield Sample(args=(np.array([[1, 5, 5], [0, 0, -1]], dtype=np.int32),), name="flat_ties")


argmax = OpDef(
    name="argmax", inputs=("x",),
    params={"axis": Param(kind="axis", default=None, optional=True),
            "keepdims": Param(kind="bool", default=False)},
    kernel=_argmax, infer=_argmax_infer, vjp=None, samples=_argmax_samples, methods=("argmax",),
    doc="Index (i64) of the largest value along axis (None: of the flattened tensor); the first "
        "one among ties. Not differentiable (vjp=None): the result is an integer position.",
)

def _truth(name, fn):
    def kernel(x, axis=None, keepdims=False):
        return fn(x, axis=norm_axes(axis, x.ndim, name), keepdims=keepdims)

    def samples(rng):
        yield Sample(args=(np.array([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0]]),), grad=False, name="all")
        yield Sample(args=(np.array([[0.0, 1.5, 0.0], [2.0, -1.0, 3.0]]),), params={"axis": 1},
                     grad=False, name="rows")
        yield Sample(args=(np.array([[[True, False]], [[True, True]]]),),
                     params={"axis": (0, 2), "keepdims": True}, grad=False, name="bool_keepdims")
        yield Sample(args=(np.array([[3, 0], [1, 2]], dtype=np.int32),), params={"axis": 0},
                     grad=False, name="int")
        yield Sample(args=(np.array([[np.nan, 0.0]]),), params={"axis": -1}, grad=False,
                     name="nan_is_true")

    which = "any element" if name == "any" else "every element"
    return OpDef(
        name=name, inputs=("x",), params=_params(), kernel=kernel,
        infer=_reduce_infer(name, lambda d: DType.BOOL), vjp=None, samples=samples,
        methods=(name,),
        doc=f"Whether {which} along axis (None: every axis) is nonzero (NaN counts as nonzero), "
            f"as a bool tensor; what bool(x) asks of a tensor with several elements. Not "
            f"differentiable (vjp=None): the result is a bool.",
    )


any = _truth("any", np.any)  # noqa: A001
all = _truth("all", np.all)  # noqa: A001

OPS = (sum, mean, max, min, argmax, any, all)
