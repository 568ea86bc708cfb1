"""group_norm, instance_norm, rms_norm, normalize and cosine_similarity (PyTorch's functional
forms). Each carries a `decomposition` into basic ops: ONNX export lowers group_norm, normalize
and cosine_similarity through it (and rms_norm below opset 23), so they need no lowering code.
"""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType, broadcast_shapes
from onemodel.core.symbolic import Dim
from onemodel.errors import OpError
from onemodel.registry import OpDef, OpTraits, Param, Sample

from ._common import as_dtype, check_dim, float_dtype, result_dtype
from .costs import passes


def _channel_vector(op, name, t, c, x):
    if t is not None:
        if t.ndim != 1:
            raise OpError(f"ops.{op}: {name} must be 1-d (C,), got {t}")
        check_dim(op, f"the size of {name} {t} (input {x})", t.shape[0], c)


def _bcast(v, ndim):
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def _grouped_stats(x, groups, eps):
    """xhat and invstd of x (N, C, *) normalised over each of ``groups`` channel groups."""
    n = x.shape[0]
    g = x.reshape(n, groups, -1)
    mean = g.mean(axis=-1, keepdims=True)
    d = g - mean
    var = (d * d).mean(axis=-1, keepdims=True)
    invstd = 1.0 / np.sqrt(var + eps)
    return (d * invstd).reshape(x.shape), invstd


def _affine(xhat, weight, bias, dt):
    out = xhat * _bcast(as_dtype(weight, dt), xhat.ndim) if weight is not None else xhat.copy()
    if bias is not None:
        out += _bcast(as_dtype(bias, dt), xhat.ndim)
    return out


def _grouped_vjp(g, xhat, invstd, weight, groups, needs_w, needs_b):
    """Gradients of ``affine(normalise over groups)`` for x, weight and bias."""
    axes = (0,) + tuple(range(2, xhat.ndim))
    gw = (g * xhat).sum(axis=axes) if needs_w and weight is not None else None
    gb = g.sum(axis=axes) if needs_b else None
    gxhat = g * _bcast(as_dtype(weight, g.dtype), g.ndim) if weight is not None else g
    n = xhat.shape[0]
    gh = gxhat.reshape(n, groups, -1)
    xh = xhat.reshape(n, groups, -1)
    gx = (gh - gh.mean(axis=-1, keepdims=True)
          - xh * (gh * xh).mean(axis=-1, keepdims=True)) * invstd
    return gx.reshape(xhat.shape), gw, gb


# -- group_norm ---------------------------------------------------------------------------------
def _gn_infer(x, weight, bias, num_groups, eps):
    dtype = float_dtype("group_norm", x, weight, bias)
    if x.ndim < 2:
        raise OpError(f"ops.group_norm: expects input (N, C, ...) with at least 2 axes, got {x}")
    c = x.shape[1]
    if num_groups < 1:
        raise OpError(f"ops.group_norm: num_groups must be >= 1, got {num_groups}")
    if not isinstance(c, Dim) and c % num_groups:
        raise OpError(f"ops.group_norm: the {c} channels of input {x} are not divisible by "
                      f"num_groups={num_groups}")
    _channel_vector("group_norm", "weight", weight, c, x)
    _channel_vector("group_norm", "bias", bias, c, x)
    return TensorType(dtype, x.shape)


def _gn_forward(x, weight, bias, num_groups, eps):
    dt = result_dtype(x, weight, bias)
    xhat, invstd = _grouped_stats(as_dtype(x, dt), num_groups, eps)
    return _affine(xhat, weight, bias, dt), (xhat, invstd)


def _gn_kernel(*args, **params):
    return _gn_forward(*args, **params)[0]


def _gn_vjp(ctx, g):
    x, weight, bias = ctx.inputs
    xhat, invstd = ctx.saved
    nx, nw, nb = ctx.needs_grad
    gx, gw, gb = _grouped_vjp(as_dtype(g, xhat.dtype), xhat, invstd, weight,
                              ctx.params["num_groups"], nw, nb and bias is not None)
    return (gx if nx else None), gw, gb


def _gn_decomposition(ops, x, weight, bias, num_groups, eps):
    n, c = x.shape[0], x.shape[1]
    g = ops.reshape(x, (n, num_groups, -1))
    d = ops.sub(g, ops.mean(g, axis=-1, keepdims=True))
    var = ops.mean(ops.mul(d, d), axis=-1, keepdims=True)
    y = ops.reshape(ops.div(d, ops.sqrt(ops.add(var, eps))), tuple(x.shape))
    per_channel = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = ops.mul(y, ops.reshape(weight, per_channel))
    if bias is not None:
        y = ops.add(y, ops.reshape(bias, per_channel))
    return y


def _gn_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 6, 3, 3)), r(6), r(6)), params={"num_groups": 3}, name="4d")
    yield Sample(args=(r((3, 4, 5)), None, None), params={"num_groups": 2, "eps": 1e-3},
                 name="3d_noaffine")
    yield Sample(args=(r((2, 4)), r(4), None), params={"num_groups": 4}, name="2d_per_channel")
    yield Sample(args=(r((2, 4, 3)), None, r(4)), params={"num_groups": 1}, name="one_group")


group_norm = OpDef(
    name="group_norm", inputs=("input", "weight?", "bias?"),
    params={"num_groups": Param(kind="int"), "eps": Param(kind="float", default=1e-5)},
    signature=("input", "num_groups", "weight", "bias", "eps"),
    kernel=_gn_kernel, forward=_gn_forward, infer=_gn_infer, vjp=_gn_vjp, samples=_gn_samples,
    decomposition=_gn_decomposition, traits=OpTraits(batch="rows", cost=passes(7)),
    doc="Normalise each of num_groups channel groups of (N, C, ...) input over its channels and "
        "positions, then scale and shift per channel (torch.nn.functional.group_norm).",
)


# -- instance_norm ------------------------------------------------------------------------------
def _in_infer(x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps):
    dtype = float_dtype("instance_norm", x, running_mean, running_var, weight, bias)
    if x.ndim < 3:
        raise OpError(f"ops.instance_norm: expects input (N, C, *spatial) with at least 3 axes, "
                      f"got {x}")
    if (running_mean is None) != (running_var is None):
        raise OpError("ops.instance_norm: running_mean and running_var must be given together")
    if not use_input_stats and running_mean is None:
        raise OpError("ops.instance_norm: use_input_stats=False needs running_mean and "
                      "running_var")
    if use_input_stats and running_mean is not None:
        raise OpError("ops.instance_norm: running_mean and running_var are read with "
                      "use_input_stats=False; updating them in place (use_input_stats=True) is "
                      "not supported")
    c = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _channel_vector("instance_norm", name, t, c, x)
    return TensorType(dtype, x.shape)


def _in_forward(x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps):
    dt = result_dtype(x, weight, bias)
    x = as_dtype(x, dt)
    c = x.shape[1]
    if not use_input_stats:  # the running statistics, an affine map per channel
        invstd = 1.0 / np.sqrt(as_dtype(running_var, dt) + eps)
        xhat = (x - _bcast(as_dtype(running_mean, dt), x.ndim)) * _bcast(invstd, x.ndim)
        return _affine(xhat, weight, bias, dt), (xhat, invstd)
    xhat, invstd = _grouped_stats(x, c, eps)
    return _affine(xhat, weight, bias, dt), (xhat, invstd)


def _in_kernel(*args, **params):
    return _in_forward(*args, **params)[0]


def _in_vjp(ctx, g):
    x, running_mean, running_var, weight, bias = ctx.inputs
    xhat, invstd = ctx.saved
    nx, nm, nv, nw, nb = ctx.needs_grad
    g = as_dtype(g, xhat.dtype)
    if ctx.params["use_input_stats"]:
        gx, gw, gb = _grouped_vjp(g, xhat, invstd, weight, x.shape[1], nw, nb and bias is not None)
        return (gx if nx else None), None, None, gw, gb
    axes = (0,) + tuple(range(2, x.ndim))
    gw = (g * xhat).sum(axis=axes) if nw and weight is not None else None
    gb = g.sum(axis=axes) if nb and bias is not None else None
    gxhat = g * _bcast(as_dtype(weight, g.dtype), g.ndim) if weight is not None else g
    grm = -(gxhat.sum(axis=axes)) * invstd if nm else None
    grv = -0.5 * (gxhat * xhat).sum(axis=axes) * invstd * invstd if nv else None
    return gxhat * _bcast(invstd, g.ndim), grm, grv, gw, gb


def _in_samples(rng):
    r = rng.standard_normal
    c = 3
    yield Sample(args=(r((2, c, 4, 3)), None, None, r(c), r(c)), name="4d")
    yield Sample(args=(r((2, c, 5)), None, None, None, None), params={"eps": 1e-3},
                 name="3d_noaffine")
    yield Sample(args=(r((2, c, 4)), r(c) * 0.1, rng.uniform(0.5, 1.5, c), r(c), None),
                 params={"use_input_stats": False}, name="running_stats")


instance_norm = OpDef(
    name="instance_norm",
    inputs=("input", "running_mean?", "running_var?", "weight?", "bias?"),
    params={"use_input_stats": Param(kind="bool", default=True),
            "momentum": Param(kind="float", default=0.1),
            "eps": Param(kind="float", default=1e-5)},
    kernel=_in_kernel, forward=_in_forward, infer=_in_infer, vjp=_in_vjp, samples=_in_samples,
    traits=OpTraits(batch="rows", cost=passes(7)),
    doc="Normalise each channel of each sample of (N, C, *spatial) input over its positions "
        "(torch.nn.functional.instance_norm); use_input_stats=False normalises with the given "
        "running statistics instead (momentum is accepted for PyTorch's signature; the running "
        "statistics are not updated).",
)


# -- rms_norm -----------------------------------------------------------------------------------
def _rms_axes(ndim, normalized_shape):
    return tuple(range(ndim - len(normalized_shape), ndim))


def _rms_infer(x, weight, normalized_shape, eps):
    dtype = float_dtype("rms_norm", x, weight)
    k = len(normalized_shape)
    if k == 0 or k > x.ndim:
        raise OpError(f"ops.rms_norm: normalized_shape {tuple(normalized_shape)} does not fit "
                      f"input {x}")
    for a, b in zip(x.shape[x.ndim - k:], normalized_shape):
        check_dim("rms_norm", f"the trailing axes of input {x} vs normalized_shape "
                  f"{tuple(normalized_shape)}; an axis", a, b)
    if weight is not None:
        if weight.ndim != k:
            raise OpError(f"ops.rms_norm: weight {weight} must have the shape normalized_shape "
                          f"{tuple(normalized_shape)}")
        for a, b in zip(weight.shape, normalized_shape):
            check_dim("rms_norm", f"the shape of weight {weight}; an axis", a, b)
    if eps is not None and eps < 0:
        raise OpError(f"ops.rms_norm: eps must be >= 0, got {eps}")
    return TensorType(dtype, x.shape)


def _rms_eps(eps, dt):
    return float(np.finfo(dt).eps) if eps is None else eps  # PyTorch: the dtype's epsilon


def _rms_forward(x, weight, normalized_shape, eps):
    dt = result_dtype(x, weight)
    x = as_dtype(x, dt)
    axes = _rms_axes(x.ndim, normalized_shape)
    r = 1.0 / np.sqrt((x * x).mean(axis=axes, keepdims=True) + _rms_eps(eps, dt))
    xhat = x * r
    out = xhat * as_dtype(weight, dt) if weight is not None else xhat
    return out, (xhat, r, axes)


def _rms_kernel(*args, **params):
    return _rms_forward(*args, **params)[0]


def _rms_vjp(ctx, g):
    x, weight = ctx.inputs
    xhat, r, axes = ctx.saved
    g = as_dtype(g, xhat.dtype)
    gw = None
    if weight is not None and ctx.needs_grad[1]:
        gw = (g * xhat).sum(axis=tuple(range(x.ndim - len(axes))))
    gxhat = g * as_dtype(weight, g.dtype) if weight is not None else g
    gx = (gxhat - xhat * (gxhat * xhat).mean(axis=axes, keepdims=True)) * r
    return gx, gw


def rms_norm_decomposition(ops, x, weight, normalized_shape, eps):
    axes = _rms_axes(x.ndim, normalized_shape)
    ms = ops.mean(ops.mul(x, x), axis=axes, keepdims=True)
    y = ops.div(x, ops.sqrt(ops.add(ms, _rms_eps(eps, x.dtype.numpy))))
    return y if weight is None else ops.mul(y, weight)


def _rms_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 5)), r(5)), params={"normalized_shape": (5,)}, name="last")
    yield Sample(args=(r((2, 3, 4)), r((3, 4))), params={"normalized_shape": (3, 4),
                                                         "eps": 1e-5}, name="two_axes")
    yield Sample(args=(r((2, 2, 4)), None), params={"normalized_shape": 4, "eps": 1e-3},
                 name="noweight")


rms_norm = OpDef(
    name="rms_norm", inputs=("input", "weight?"),
    params={"normalized_shape": Param(kind="shape", doc="the trailing axes to normalise"),
            "eps": Param(kind="float", default=None, optional=True,
                         doc="None: the dtype's machine epsilon (PyTorch)")},
    signature=("input", "normalized_shape", "weight", "eps"),
    kernel=_rms_kernel, forward=_rms_forward, infer=_rms_infer, vjp=_rms_vjp,
    samples=_rms_samples, decomposition=rms_norm_decomposition,
    traits=OpTraits(batch=lambda params, types: "rows" if len(params["normalized_shape"]) < len(
        types[0].shape) else None, cost=passes(5)),
    doc="input / sqrt(mean(input^2 over the trailing normalized_shape axes) + eps) * weight "
        "(torch.nn.functional.rms_norm).",
)


# -- normalize ----------------------------------------------------------------------------------
def _axis(op, axis, ndim):
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise OpError(f"ops.{op}: dim {axis} is out of range for a {ndim}-d input")
    return axis % max(ndim, 1)


def _nz_infer(x, p, axis, eps):
    dtype = float_dtype("normalize", x)
    if not (p > 0 and np.isfinite(p)):
        raise OpError(f"ops.normalize: p must be a positive finite number, got {p}")
    if x.ndim:
        _axis("normalize", axis, x.ndim)
    return TensorType(dtype, x.shape)


def _pnorm(x, p, axis):
    if p == 2:
        return np.sqrt((x * x).sum(axis=axis, keepdims=True))
    if p == 1:
        return np.abs(x).sum(axis=axis, keepdims=True)
    return (np.abs(x) ** p).sum(axis=axis, keepdims=True) ** (1.0 / p)


def _nz_kernel(x, p, axis, eps):
    dt = result_dtype(x)
    x = as_dtype(x, dt)
    if x.ndim == 0:
        return x / max(abs(float(x)), eps)
    return x / np.maximum(_pnorm(x, p, _axis("normalize", axis, x.ndim)), eps)


def _nz_vjp(ctx, g):
    (x,) = ctx.inputs
    p, eps = ctx.params["p"], ctx.params["eps"]
    dt = result_dtype(x)
    x, g = as_dtype(x, dt), as_dtype(g, dt)
    axis = _axis("normalize", ctx.params["axis"], max(x.ndim, 1))
    xx = x.reshape(x.shape or (1,))
    gg = g.reshape(xx.shape)
    n = _pnorm(xx, p, axis)
    big = n > eps
    d = np.maximum(n, eps)
    dn = np.sign(xx) * np.abs(xx) ** (p - 1) / np.where(big, n, 1) ** (p - 1)  # d norm / d x
    gx = gg / d - np.where(big, (gg * xx).sum(axis=axis, keepdims=True) / (d * d), 0) * dn
    return (gx.reshape(x.shape),)


def _nz_decomposition(ops, x, p, axis, eps):
    if p == 2:
        norm = ops.sqrt(ops.sum(ops.mul(x, x), axis=axis, keepdims=True))
    elif p == 1:
        norm = ops.sum(ops.abs(x), axis=axis, keepdims=True)
    else:
        norm = ops.pow(ops.sum(ops.pow(ops.abs(x), float(p)), axis=axis, keepdims=True),
                       1.0 / p)
    return ops.div(x, ops.maximum(norm, eps))


def _nz_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 4)),), name="p2_dim1")
    yield Sample(args=(r((2, 3, 4)),), params={"p": 1.0, "axis": -1}, name="p1_last")
    yield Sample(args=(r((2, 5)) + 0.5,), params={"p": 3.0, "axis": 0}, name="p3_dim0")
    yield Sample(args=(np.array([[0.0, 0.0], [1e-14, 0.0], [3.0, 4.0]]),),
                 params={"eps": 1e-6}, grad=False, name="below_eps")


normalize = OpDef(
    name="normalize", inputs=("input",),
    params={"p": Param(kind="float", default=2.0), "axis": Param(kind="axis", default=1),
            "eps": Param(kind="float", default=1e-12)},
    kernel=_nz_kernel, infer=_nz_infer, vjp=_nz_vjp, samples=_nz_samples,
    decomposition=_nz_decomposition,
    traits=OpTraits(batch=lambda params, types: "rows" if params["axis"] % max(
        len(types[0].shape), 1) != 0 else None, cost=passes(3)),
    doc="input / max(||input||_p over dim, eps) (torch.nn.functional.normalize; ``dim`` is "
        "PyTorch's name for axis).",
)


# -- cosine_similarity --------------------------------------------------------------------------
def _cs_infer(x1, x2, axis, eps):
    dtype = float_dtype("cosine_similarity", x1, x2)
    shape = tuple(broadcast_shapes(x1.shape, x2.shape, op="ops.cosine_similarity"))
    if not shape:
        raise OpError("ops.cosine_similarity: inputs must have at least one axis")
    a = _axis("cosine_similarity", axis, len(shape))
    return TensorType(dtype, shape[:a] + shape[a + 1:])


def _cs_parts(x1, x2, axis, eps):
    dt = result_dtype(x1, x2)
    a, b = np.broadcast_arrays(as_dtype(x1, dt), as_dtype(x2, dt))
    ax = _axis("cosine_similarity", axis, a.ndim)
    n1 = np.sqrt((a * a).sum(axis=ax, keepdims=True))
    n2 = np.sqrt((b * b).sum(axis=ax, keepdims=True))
    d1, d2 = np.maximum(n1, eps), np.maximum(n2, eps)
    return a, b, ax, n1, n2, d1, d2


def _cs_kernel(x1, x2, axis, eps):
    a, b, ax, _n1, _n2, d1, d2 = _cs_parts(x1, x2, axis, eps)
    return ((a / d1) * (b / d2)).sum(axis=ax)


def _cs_vjp(ctx, g):
    x1, x2 = ctx.inputs
    a, b, ax, n1, n2, d1, d2 = _cs_parts(x1, x2, ctx.params["axis"], ctx.params["eps"])
    g = np.expand_dims(as_dtype(g, a.dtype), ax)
    cos = ((a / d1) * (b / d2)).sum(axis=ax, keepdims=True)
    # d cos / d a = b / (d1 d2) - cos a / (n1 d1) where the norm is above eps (else no slope)
    ga = g * (b / (d1 * d2) - np.where(n1 > ctx.params["eps"], cos / (d1 * d1), 0) * a)
    gb = g * (a / (d1 * d2) - np.where(n2 > ctx.params["eps"], cos / (d2 * d2), 0) * b)
    return ga, gb


def _cs_decomposition(ops, x1, x2, axis, eps):
    shape = tuple(broadcast_shapes(x1.shape, x2.shape, op="ops.cosine_similarity"))
    a = x1 if tuple(x1.shape) == shape else ops.expand(x1, shape)
    b = x2 if tuple(x2.shape) == shape else ops.expand(x2, shape)
    ax = axis % len(shape)

    def unit(v):
        norm = ops.sqrt(ops.sum(ops.mul(v, v), axis=ax, keepdims=True))
        return ops.div(v, ops.maximum(norm, eps))

    return ops.sum(ops.mul(unit(a), unit(b)), axis=ax)


def _cs_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 4)), r((3, 4))), name="dim1")
    yield Sample(args=(r((2, 3, 4)), r(4)), params={"axis": -1}, name="broadcast_last")
    yield Sample(args=(r((3, 5)), r((1, 5))), params={"axis": 0}, name="broadcast_along_dim")
    yield Sample(args=(np.zeros((2, 3)), r((2, 3))), params={"eps": 1e-6}, grad=False,
                 name="zero_vector")


cosine_similarity = OpDef(
    name="cosine_similarity", inputs=("x1", "x2"),
    params={"axis": Param(kind="axis", default=1), "eps": Param(kind="float", default=1e-8)},
    kernel=_cs_kernel, infer=_cs_infer, vjp=_cs_vjp, samples=_cs_samples,
    decomposition=_cs_decomposition, traits=OpTraits(cost=passes(4)),
    doc="sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) over dim, after broadcasting "
        "(torch.nn.functional.cosine_similarity; ``dim`` is PyTorch's name for axis).",
)

OPS = (group_norm, instance_norm, rms_norm, normalize, cosine_similarity)
