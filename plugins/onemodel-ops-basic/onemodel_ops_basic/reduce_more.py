"""More reductions, as PyTorch names them: logsumexp, var, std, norm, amax, amin, prod, argmin.

``axis`` is None (every axis), an int or a tuple of ints, as for `reduce.sum`; ``keepdims``
keeps reduced axes with size 1. PyTorch's ``dim`` / ``keepdim`` are accepted by the core.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import DType, OpError, TensorType, float_of, norm_axes
from .reduce import _extreme, _grad_keepdims, _params, _reduce_infer, _reduce_samples, \
    _reduced_shape, arg_infer, arg_kernel


def _count(shape, axes) -> int:
    return int(math.prod(shape[a] for a in axes)) if axes else 1


def _float_only(op, x):
    if not x.dtype.is_float:
        raise OpError(f"ops.{op}: input x must be a float tensor (as in PyTorch), got {x}")


# -- logsumexp ------------------------------------------------------------------------------------
def _logsumexp(x, axis=None, keepdims=False):
    axes = norm_axes(axis, x.ndim, "logsumexp")
    dt = float_of(DType.from_numpy(x.dtype)).numpy
    xf = x.astype(np.float64)
    if x.size == 0:
        return np.full(_reduced_shape(x.shape, axes, keepdims), -np.inf, dt)
    m = np.max(xf, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)  # all -inf (or an inf) stays -inf (inf) as in torch
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        out = np.log(np.sum(np.exp(xf - m), axis=axes, keepdims=True)) + m
    return (out if keepdims else np.squeeze(out, axes)).astype(dt)


def _logsumexp_vjp(ctx, g):
    x, out = ctx.inputs[0], ctx.outputs[0]
    axes = norm_axes(ctx.params["axis"], x.ndim, "logsumexp")
    keep = ctx.params["keepdims"]
    with np.errstate(invalid="ignore"):
        soft = np.exp(x - _grad_keepdims(out, x, axes, keep))
    return (_grad_keepdims(g, x, axes, keep) * np.nan_to_num(soft),)


logsumexp = OpDef(
    name="logsumexp", inputs=("x",), params=_params(), kernel=_logsumexp,
    infer=_reduce_infer("logsumexp", float_of), vjp=_logsumexp_vjp,
    samples=lambda rng: [*_reduce_samples(rng),
                         Sample(args=(np.array([[1000.0, 1000.0], [-1000.0, -1001.0]]),),
                                params={"axis": 1}, name="large"),
                         Sample(args=(np.array([[1, 2, 3]], dtype=np.int64),), params={"axis": -1},
                                grad=False, name="int")],
    methods=("logsumexp",),
    doc="log(sum(exp(x))) over axis (None: every axis), computed without overflow "
        "(torch.logsumexp); int inputs give f32. The gradient is softmax(x) over the axes.",
)


# -- var / std ------------------------------------------------------------------------------------
def _correction(op, correction, unbiased):
    """PyTorch's two spellings: ``correction`` (new API, default 1) and ``unbiased`` (old)."""
    if unbiased is not None:
        if correction is not None:
            raise OpError(f"ops.{op}: give 'correction' or 'unbiased', not both")
        return 1 if unbiased else 0
    if correction is None:
        return 1
    if isinstance(correction, (bool, np.bool_)):  # torch.var(x, dim, True): the old unbiased
        return 1 if correction else 0
    if not isinstance(correction, numbers.Real):
        raise OpError(f"ops.{op}: parameter 'correction' must be a number, got {correction!r}")
    return correction


def _var_params():
    return {"axis": Param(kind="axes", default=None, optional=True,
                          doc="None, an int or a tuple of ints"),
            "correction": Param(kind="scalar", default=None, optional=True,
                                doc="divide by N - correction (default 1, Bessel's)"),
            "keepdims": Param(kind="bool", default=False),
            "unbiased": Param(kind="bool", default=None, optional=True,
                              doc="PyTorch's older spelling: True is correction=1, False 0")}


def _var_infer(op):
    def infer(x, axis=None, correction=None, keepdims=False, unbiased=None):
        _float_only(op, x)
        _correction(op, correction, unbiased)
        axes = norm_axes(axis, x.ndim, op)
        return TensorType(x.dtype, _reduced_shape(x.shape, axes, keepdims))
    return infer


def _moments(op, x, axis, correction, unbiased):
    axes = norm_axes(axis, x.ndim, op)
    c = _correction(op, correction, unbiased)
    xf = x.astype(np.float64)
    mean = np.mean(xf, axis=axes, keepdims=True) if x.size else np.zeros(
        _reduced_shape(x.shape, axes, True))
    dof = max(_count(x.shape, axes) - c, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = np.sum((xf - mean) ** 2, axis=axes, keepdims=True) / dof
    return axes, xf - mean, dof, var


def _var(x, axis=None, correction=None, keepdims=False, unbiased=None):
    axes, _d, _n, var = _moments("var", x, axis, correction, unbiased)
    return (var if keepdims else np.squeeze(var, axes)).astype(x.dtype)


def _std(x, axis=None, correction=None, keepdims=False, unbiased=None):
    axes, _d, _n, var = _moments("std", x, axis, correction, unbiased)
    out = np.sqrt(var)
    return (out if keepdims else np.squeeze(out, axes)).astype(x.dtype)


def _var_vjp(ctx, g):
    x = ctx.inputs[0]
    p = ctx.params
    axes, d, dof, _v = _moments("var", x, p["axis"], p["correction"], p["unbiased"])
    with np.errstate(divide="ignore", invalid="ignore"):
        return (_grad_keepdims(g, x, axes, p["keepdims"]) * 2.0 * d / dof,)


def _std_vjp(ctx, g):
    x, out = ctx.inputs[0], ctx.outputs[0]
    p = ctx.params
    axes, d, dof, _v = _moments("std", x, p["axis"], p["correction"], p["unbiased"])
    s = _grad_keepdims(out, x, axes, p["keepdims"])
    with np.errstate(divide="ignore", invalid="ignore"):
        return (_grad_keepdims(g, x, axes, p["keepdims"]) * d / (dof * s),)


def _var_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 4)),), name="all")
    yield Sample(args=(r((2, 3, 4)),), params={"axis": (0, -1), "keepdims": True},
                 name="axes_keepdims")
    yield Sample(args=(r((2, 5)),), params={"axis": 1, "correction": 0}, name="population")
    yield Sample(args=(r((4, 3)),), params={"axis": 0, "unbiased": False}, name="unbiased_false")
    yield Sample(args=(r((3, 4)).astype(np.float32),), params={"axis": -1, "correction": 2},
                 name="f32_correction2")


var = OpDef(
    name="var", inputs=("x",), params=_var_params(), kernel=_var, infer=_var_infer("var"),
    vjp=_var_vjp, samples=_var_samples, methods=("var",),
    doc="Variance over axis (None: every axis), divided by N - correction (torch.var; "
        "correction=1 by default, unbiased=True/False is the older spelling). Float inputs only.",
)

std = OpDef(
    name="std", inputs=("x",), params=_var_params(), kernel=_std, infer=_var_infer("std"),
    vjp=_std_vjp, samples=_var_samples, methods=("std",),
    doc="Standard deviation over axis: the square root of ops.var with the same arguments "
        "(torch.std). Float inputs only.",
)


# -- norm -----------------------------------------------------------------------------------------
def norm_order(p) -> float:
    """The vector norm order of ``p``: a number, inf / -inf, or 'fro' (2, over the axes)."""
    if isinstance(p, str):
        if p == "fro":
            return 2.0
        raise OpError(f"ops.norm: parameter 'p' must be a number, inf or 'fro', got {p!r} "
                      f"('nuc' and other matrix norms are not supported)")
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real):
        raise OpError(f"ops.norm: parameter 'p' must be a number, inf or 'fro', got {p!r}")
    return float(p)


def _norm_infer(x, p=2, axis=None, keepdims=False):
    norm_order(p)
    _float_only("norm", x)
    axes = norm_axes(axis, x.ndim, "norm")
    return TensorType(x.dtype, _reduced_shape(x.shape, axes, keepdims))


def _norm(x, p=2, axis=None, keepdims=False):
    order = norm_order(p)
    axes = norm_axes(axis, x.ndim, "norm")
    a = np.abs(x.astype(np.float64))
    if order == np.inf:
        out = np.max(a, axis=axes, keepdims=keepdims, initial=0.0)
    elif order == -np.inf:
        out = np.min(a, axis=axes, keepdims=keepdims, initial=np.inf)
    elif order == 0:
        out = np.sum(a != 0, axis=axes, keepdims=keepdims).astype(np.float64)
    elif order == 1:
        out = np.sum(a, axis=axes, keepdims=keepdims)
    elif order == 2:
        out = np.sqrt(np.sum(a * a, axis=axes, keepdims=keepdims))
    else:
        with np.errstate(divide="ignore", over="ignore"):
            out = np.sum(a ** order, axis=axes, keepdims=keepdims) ** (1.0 / order)
    return np.asarray(out).astype(x.dtype)


def _norm_vjp(ctx, g):
    x, out = ctx.inputs[0], ctx.outputs[0]
    p = ctx.params
    order = norm_order(p["p"])
    axes = norm_axes(p["axis"], x.ndim, "norm")
    n = _grad_keepdims(out, x, axes, p["keepdims"])
    gk = _grad_keepdims(g, x, axes, p["keepdims"])
    a = np.abs(x)
    if order in (np.inf, -np.inf):
        mask = a == n
        count = np.maximum(mask.sum(axis=axes, keepdims=True), 1)
        return (gk * np.sign(x) * mask / count,)  # ties share the gradient, as torch
    if order == 0:
        return (np.zeros_like(x),)
    if order == 1:
        return (gk * np.sign(x),)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(n > 0, a ** (order - 1) / n ** (order - 1), 0.0)
    return (gk * np.sign(x) * scale,)


def _norm_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 4)),), name="all_p2")
    yield Sample(args=(r((2, 3, 4)),), params={"axis": -1, "keepdims": True}, name="last_keep")
    yield Sample(args=(r((3, 4)),), params={"p": 1, "axis": 0}, name="p1")
    yield Sample(args=(r((3, 4)),), params={"p": math.inf, "axis": 1}, name="inf")
    yield Sample(args=(r((2, 3, 4)),), params={"p": "fro", "axis": (1, 2)}, name="fro")
    yield Sample(args=(np.abs(r((3, 4))) + 0.5,), params={"p": 3, "axis": 1}, name="p3")


norm = OpDef(
    name="norm", inputs=("x",),
    params={"p": Param(kind="any", default=2, doc="a number, inf, -inf or 'fro'"),
            "axis": Param(kind="axes", default=None, optional=True,
                          doc="None, an int or a tuple of ints"),
            "keepdims": Param(kind="bool", default=False)},
    kernel=_norm, infer=_norm_infer, vjp=_norm_vjp, samples=_norm_samples, methods=("norm",),
    doc="The vector p-norm over axis (None: every axis), as torch.norm / "
        "torch.linalg.vector_norm: p=2 (default), 1, inf (largest |x|), -inf, 0 (count of "
        "nonzeros) or any other number; 'fro' is p=2 over the given axes. Float inputs only.",
)


# -- amax / amin / prod / argmin ------------------------------------------------------------------
amax = _extreme("amax", np.max)
amin = _extreme("amin", np.min)


def _prod_dtype(dtype: DType) -> DType:
    return dtype if dtype.is_float else DType.I64  # PyTorch multiplies ints and bools in int64


def _prod(x, axis=None, keepdims=False):
    axes = norm_axes(axis, x.ndim, "prod")
    dt = _prod_dtype(DType.from_numpy(x.dtype)).numpy
    acc = np.float32 if dt == np.float16 else dt
    return np.prod(x, axis=axes, keepdims=keepdims, dtype=acc).astype(dt, copy=False)


def _prod_others(x, axes):
    """For each element, the product of the other elements of its reduced group (zeros safe):
    the group flattened last, exclusive prefix times exclusive suffix products."""
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, rest + list(axes))
    lead = moved.shape[:len(rest)]
    flat = moved.reshape(lead + (-1,))
    ones = np.ones(lead + (1,), x.dtype)
    pre = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
    suf = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], -1), -1)[..., ::-1]
    out = (pre * suf).reshape(moved.shape)
    return np.transpose(out, np.argsort(rest + list(axes)))


def _prod_vjp(ctx, g):
    x = ctx.inputs[0]
    axes = norm_axes(ctx.params["axis"], x.ndim, "prod")
    if x.ndim == 0:
        return (g * np.ones_like(x),)
    return (_grad_keepdims(g, x, axes, ctx.params["keepdims"]) * _prod_others(x, axes),)


def _prod_samples(rng):
    yield from _reduce_samples(rng)
    yield Sample(args=(np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5], [1.0, -2.0, 0.5]]),),
                 params={"axis": 1}, name="zeros")
    yield Sample(args=(np.array([[1, 2], [3, 4]], dtype=np.int32),), params={"axis": 0},
                 name="int")


prod = OpDef(
    name="prod", inputs=("x",), params=_params(), kernel=_prod,
    infer=_reduce_infer("prod", _prod_dtype), vjp=_prod_vjp, samples=_prod_samples,
    methods=("prod",),
    doc="Product over axis (None: every axis); ints and bools multiply to i64 as in PyTorch. "
        "The gradient is the product of the other elements (exact with zeros).",
)


argmin = OpDef(
    name="argmin", inputs=("x",),
    params={"axis": Param(kind="axis", default=None, optional=True),
            "keepdims": Param(kind="bool", default=False)},
    kernel=arg_kernel("argmin", np.argmin), infer=arg_infer("argmin"), vjp=None,
    samples=lambda rng: [Sample(args=(rng.standard_normal((3, 4)),), params={"axis": 1}),
                         Sample(args=(rng.standard_normal((2, 3, 4)),),
                                params={"axis": -2, "keepdims": True}, name="negative_keepdims"),
                         Sample(args=(np.array([[1, -5, -5], [0, 0, 9]], dtype=np.int32),),
                                name="flat_ties")],
    methods=("argmin",),
    doc="Index (i64) of the smallest value along axis (None: of the flattened tensor); the "
        "first one among ties. Not differentiable (vjp=None): the result is an integer position.",
)

OPS = (logsumexp, var, std, norm, amax, amin, prod, argmin)
