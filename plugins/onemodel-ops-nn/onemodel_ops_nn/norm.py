"""batch_norm and layer_norm (PyTorch's functional forms)."""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.registry import OpDef, OpTraits, Param, Sample

from ._common import as_dtype, check_dim, float_dtype, result_dtype
from .costs import passes


# -- batch_norm ---------------------------------------------------------------------------------
def _bn_infer(x, running_mean, running_var, weight, bias, training, momentum, eps):
    dtype = float_dtype("batch_norm", x, running_mean, running_var, weight, bias)
    if x.ndim < 2:
        raise ValueError(f"expects x (N, C, ...) with at least 2 axes, got {x}")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must be given together")
    if running_mean is None and not training:
        raise ValueError("running_mean and running_var must be given in evaluation mode "
                         "(training=False)")
    c = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None:
            if t.ndim != 1:
                raise ValueError(f"{name} must be 1-d (C,), got {t}")
            check_dim("batch_norm", f"the size of {name} {t} (x {x})", t.shape[0], c)
    return TensorType(dtype, x.shape)


def _bn_axes(x):
    return (0,) + tuple(range(2, x.ndim))


def _bcast(v, ndim):
    """A (C,) vector shaped to broadcast along axis 1 of an ndim-d tensor."""
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def _bn_forward(x, running_mean, running_var, weight, bias, training, momentum, eps):
    dt = result_dtype(x, weight, bias)
    x = as_dtype(x, dt)
    nd = x.ndim
    if training:
        axes = _bn_axes(x)
        count = x.size // x.shape[1]
        if count <= 1:
            raise ValueError(f"expected more than 1 value per channel when training, got input "
                             f"of shape {list(x.shape)}")
        mean = x.mean(axis=axes, dtype=dt)
        xc = x - _bcast(mean, nd)
        var = (xc * xc).mean(axis=axes, dtype=dt)
        if running_mean is not None:  # in-place update, unbiased variance (PyTorch)
            m = float(momentum)
            running_mean *= 1.0 - m
            running_mean += (m * mean).astype(running_mean.dtype, copy=False)
            running_var *= 1.0 - m
            running_var += (m * var * (count / (count - 1))).astype(running_var.dtype, copy=False)
    else:
        mean = as_dtype(running_mean, dt)
        var = as_dtype(running_var, dt)
        xc = x - _bcast(mean, nd)
    invstd = 1.0 / np.sqrt(var + eps)
    xhat = xc * _bcast(invstd, nd)
    if weight is not None:
        out = xhat * _bcast(as_dtype(weight, dt), nd)
    else:
        out = xhat.copy()
    if bias is not None:
        out += _bcast(as_dtype(bias, dt), nd)
    return out, (xhat, invstd)


def _bn_kernel(*args, **params):
    return _bn_forward(*args, **params)[0]


def _bn_vjp(ctx, g):
    x, running_mean, running_var, weight, bias = ctx.inputs
    xhat, invstd = ctx.saved
    need_x, need_rm, need_rv, need_w, need_b = ctx.needs_grad
    training = ctx.params["training"]
    nd = x.ndim
    axes = _bn_axes(x)
    g = as_dtype(g, xhat.dtype)
    gw = (g * xhat).sum(axis=axes) if need_w and weight is not None else None
    gb = g.sum(axis=axes) if need_b and bias is not None else None
    gxhat = g * _bcast(as_dtype(weight, g.dtype), nd) if weight is not None else g
    gx = grm = grv = None
    if training:
        if need_x:
            count = x.size // x.shape[1]
            s1 = gxhat.sum(axis=axes)
            s2 = (gxhat * xhat).sum(axis=axes)
            gx = (gxhat - _bcast(s1 / count, nd) - xhat * _bcast(s2 / count, nd)) \
                * _bcast(invstd, nd)
    else:  # eval: y depends on the running statistics, a plain affine map of x
        if need_x:
            gx = gxhat * _bcast(invstd, nd)
        if need_rm:
            grm = -(gxhat.sum(axis=axes)) * invstd
        if need_rv:
            grv = -0.5 * (gxhat * xhat).sum(axis=axes) * invstd * invstd
    return gx, grm, grv, gw, gb


def _bn_samples(rng):
    r = rng.standard_normal
    c = 3

    def stats():
        return r(c) * 0.1, rng.uniform(0.5, 1.5, c)

    yield Sample(args=(r((4, c)), *stats(), r(c), r(c)), params={"training": True},
                 name="train_2d")
    yield Sample(args=(r((2, c, 3, 3)), *stats(), r(c), r(c)), params={"training": True},
                 name="train_4d")
    yield Sample(args=(r((2, c, 2, 2)), *stats(), r(c), r(c)), params={"training": False},
                 name="eval_4d")
    yield Sample(args=(r((4, c)), *stats(), None, None), params={"training": False, "eps": 1e-3},
                 name="eval_noaffine")
    yield Sample(args=(r((2, c, 5)), None, None, r(c), None), params={"training": True},
                 name="train_nostats_3d")


batch_norm = OpDef(
    name="batch_norm", inputs=("x", "running_mean?", "running_var?", "weight?", "bias?"),
    params={"training": Param(kind="bool", default=False),
            "momentum": Param(kind="float", default=0.1),
            "eps": Param(kind="float", default=1e-5)},
    kernel=_bn_kernel, forward=_bn_forward, infer=_bn_infer, vjp=_bn_vjp, samples=_bn_samples,
    traits=OpTraits(batch=lambda params, types: None if params.get("training") else "rows",
                    cost=passes(2)),
    untraceable=lambda params: (
        "batch_norm in training mode uses batch statistics and updates the running statistics "
        "in place; trace the model in eval mode (model.eval())" if params["training"] else None),
    pure=lambda params: not params.get("training", False),  # eval mode has no effects
    doc="Batch normalisation over axis 1 of (N, C, ...) input (torch.nn.functional.batch_norm). "
        "training=True normalises with the batch statistics (biased variance) and updates "
        "running_mean / running_var in place (momentum rule, unbiased variance); training=False "
        "uses the running statistics.",
)


# -- layer_norm ---------------------------------------------------------------------------------
def _ln_infer(x, weight, bias, normalized_shape, eps):
    dtype = float_dtype("layer_norm", x, weight, bias)
    k = len(normalized_shape)
    if k == 0 or k > x.ndim:
        raise ValueError(f"normalized_shape {tuple(normalized_shape)} does not fit x {x}")
    for a, b in zip(x.shape[x.ndim - k:], normalized_shape):
        check_dim("layer_norm", f"the trailing axes of x {x} vs normalized_shape "
                  f"{tuple(normalized_shape)}; an axis", a, b)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            if t.ndim != k:
                raise ValueError(f"{name} {t} must have the shape normalized_shape "
                                 f"{tuple(normalized_shape)}")
            for a, b in zip(t.shape, normalized_shape):
                check_dim("layer_norm", f"the shape of {name} {t}; an axis", a, b)
    return TensorType(dtype, x.shape)


def _ln_forward(x, weight, bias, normalized_shape, eps):
    dt = result_dtype(x, weight, bias)
    x = as_dtype(x, dt)
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True, dtype=dt)
    xc = x - mean
    var = (xc * xc).mean(axis=axes, keepdims=True, dtype=dt)
    invstd = 1.0 / np.sqrt(var + eps)
    xhat = xc * invstd
    out = xhat * as_dtype(weight, dt) if weight is not None else xhat.copy()
    if bias is not None:
        out += as_dtype(bias, dt)
    return out, (xhat, invstd, axes)


def _ln_kernel(*args, **params):
    return _ln_forward(*args, **params)[0]


def _ln_vjp(ctx, g):
    x, weight, bias = ctx.inputs
    xhat, invstd, axes = ctx.saved
    need_x, need_w, need_b = ctx.needs_grad
    g = as_dtype(g, xhat.dtype)
    lead = tuple(range(x.ndim - len(axes)))
    gw = (g * xhat).sum(axis=lead) if need_w and weight is not None else None
    gb = g.sum(axis=lead) if need_b and bias is not None else None
    gx = None
    if need_x:
        gxhat = g * as_dtype(weight, g.dtype) if weight is not None else g
        m1 = gxhat.mean(axis=axes, keepdims=True)
        m2 = (gxhat * xhat).mean(axis=axes, keepdims=True)
        gx = (gxhat - m1 - xhat * m2) * invstd
    return gx, gw, gb


def _ln_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 5)), r(5), r(5)), params={"normalized_shape": (5,)}, name="last")
    yield Sample(args=(r((2, 3, 4)), r((3, 4)), r((3, 4))), params={"normalized_shape": (3, 4)},
                 name="two_axes")
    yield Sample(args=(r((2, 2, 4)), None, None), params={"normalized_shape": 4, "eps": 1e-3},
                 name="noaffine")


def _ln_batch(params, types):
    """Rows of axis 0 are independent unless axis 0 is among the normalised axes."""
    ns = params.get("normalized_shape")
    return "rows" if (len(ns) if isinstance(ns, (tuple, list)) else 1) < len(
        types[0].shape) else None


layer_norm = OpDef(
    name="layer_norm", inputs=("x", "weight?", "bias?"),
    params={"normalized_shape": Param(kind="shape", doc="the trailing axes to normalise"),
            "eps": Param(kind="float", default=1e-5)},
    kernel=_ln_kernel, forward=_ln_forward, infer=_ln_infer, vjp=_ln_vjp, samples=_ln_samples,
    signature=("x", "normalized_shape", "weight", "bias", "eps"),
    traits=OpTraits(batch=lambda params, types: _ln_batch(params, types), cost=passes(7)),
    doc="Normalise over the trailing normalized_shape axes, then scale and shift "
        "(torch.nn.functional.layer_norm).",
)

OPS = (batch_norm, layer_norm)
