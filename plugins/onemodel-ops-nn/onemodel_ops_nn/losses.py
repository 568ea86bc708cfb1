"""mse_loss and cross_entropy (PyTorch's functional forms; training-only, so untraceable)."""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType, broadcast_shapes
from onemodel.errors import OpError
from onemodel.registry import OpDef, Param, Sample

from ._common import (LOSS_UNTRACEABLE, REDUCTIONS, as_dtype, check_dim, float_dtype,
                      loss_grad_scale, loss_infer, reduce_loss, result_dtype)
from .activation import log_softmax_array

IGNORE_INDEX = -100  # PyTorch's default ignore_index: such targets add nothing to the loss


# -- mse_loss -----------------------------------------------------------------------------------
def _mse_infer(input: TensorType, target: TensorType, reduction) -> TensorType:
    dtype = float_dtype("mse_loss", input, target)
    shape = broadcast_shapes(input.shape, target.shape, op="ops.mse_loss")
    return loss_infer(shape, reduction, dtype)


def _mse(input, target, reduction):
    dt = result_dtype(input, target)
    d = as_dtype(input, dt) - as_dtype(target, dt)
    return reduce_loss(d * d, reduction)


def _mse_vjp(ctx, g):
    input, target = ctx.inputs
    dt = result_dtype(input, target)
    d = as_dtype(input, dt) - as_dtype(target, dt)
    gd = 2.0 * loss_grad_scale(g, d.shape, ctx.params["reduction"], dt) * d
    return (gd if ctx.needs_grad[0] else None), (-gd if ctx.needs_grad[1] else None)


def _mse_samples(rng):
    r = rng.standard_normal
    for red in REDUCTIONS:
        yield Sample(args=(r((3, 4)), r((3, 4))), params={"reduction": red}, name=red)
    yield Sample(args=(r((2, 3)), r(3)), params={"reduction": "mean"}, name="broadcast")


mse_loss = OpDef(
    name="mse_loss", inputs=("input", "target"),
    params={"reduction": Param(kind="str", default="mean", choices=REDUCTIONS)},
    kernel=_mse, infer=_mse_infer, vjp=_mse_vjp, samples=_mse_samples,
    untraceable=LOSS_UNTRACEABLE,
    doc="(input - target)^2, averaged ('mean'), summed ('sum') or per element ('none') "
        "(torch.nn.functional.mse_loss).",
)


# -- cross_entropy ------------------------------------------------------------------------------
def _class_axis(ndim: int) -> int:
    return 0 if ndim == 1 else 1


def _ce_infer(logits: TensorType, target: TensorType, weight: TensorType | None, ignore_index,
              reduction, label_smoothing) -> TensorType:
    dtype = float_dtype("cross_entropy", logits)
    if logits.ndim < 1:
        raise ValueError(f"logits must be (C,), (N, C) or (N, C, d1, ...), got {logits}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise OpError(f"ops.cross_entropy: label_smoothing must be between 0.0 and 1.0, got "
                      f"{label_smoothing}")
    axis = _class_axis(logits.ndim)
    if weight is not None:
        float_dtype("cross_entropy", weight)
        if weight.ndim != 1:
            raise OpError(f"ops.cross_entropy: weight must be 1-D, one value per class, got "
                          f"{weight}")
        check_dim("cross_entropy", f"the size of weight {weight} (logits {logits})",
                  weight.shape[0], logits.shape[axis])
    per_elem = logits.shape[:axis] + logits.shape[axis + 1:]
    if target.dtype.is_float:  # class probabilities, same shape as logits
        float_dtype("cross_entropy", logits, target)
        if target.ndim != logits.ndim:
            raise ValueError(f"probability targets {target} must have the shape of logits "
                             f"{logits}")
        for a, b in zip(target.shape, logits.shape):
            check_dim("cross_entropy", f"the shape of probability target {target} (logits "
                      f"{logits}); an axis", a, b)
    elif target.dtype.is_int:
        if target.ndim != len(per_elem):
            raise ValueError(f"class-index target {target} must have the shape of logits {logits} "
                             f"without the class axis {axis}")
        for a, b in zip(target.shape, per_elem):
            check_dim("cross_entropy", f"the shape of target {target} (logits {logits}); an "
                      f"axis", a, b)
    else:
        raise ValueError(f"target must hold class indices (int) or probabilities (float), got "
                         f"{target}")
    return loss_infer(per_elem, reduction, dtype)


def _class_weights(weight, logp, axis: int):
    """The class weights broadcast along the class axis of ``logp`` (ones without weight)."""
    c = logp.shape[axis]
    w = np.ones(c, logp.dtype) if weight is None else as_dtype(weight, logp.dtype)
    return w, w.reshape((c,) + (1,) * (logp.ndim - axis - 1))


def _ce_forward(logits, target, weight, ignore_index, reduction, label_smoothing):
    axis = _class_axis(logits.ndim)
    logp = log_softmax_array(logits, axis)
    c = logits.shape[axis]
    eps = float(label_smoothing)
    w, wc = _class_weights(weight, logp, axis)
    if target.dtype.kind == "f":
        t = as_dtype(target, logp.dtype)
        if eps:
            t = t * (1.0 - eps) + eps / c
        per = -(t * wc * logp).sum(axis=axis)
        out = reduce_loss(per, reduction)
        return out, (logp, t, None, per.size)
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    if safe.size and (safe.min() < 0 or safe.max() >= c):
        bad = safe.min() if safe.min() < 0 else safe.max()
        raise OpError(f"ops.cross_entropy: target {bad} is out of range for {c} classes")
    picked = np.squeeze(np.take_along_axis(logp, np.expand_dims(safe, axis), axis=axis), axis)
    wy = w[safe] * valid
    per = -picked * wy
    if eps:
        per = per * (1.0 - eps) - (logp * wc).sum(axis=axis) * valid * (eps / c)
    per = per.astype(logp.dtype, copy=False)
    denominator = wy.sum(dtype=per.dtype)
    if reduction == "none":
        out = per
    elif reduction == "sum":
        out = per.sum(dtype=per.dtype)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            out = per.sum(dtype=per.dtype) / denominator
    return out, (logp, None, (safe, valid, wy), denominator)


def _ce_kernel(logits, target, weight, ignore_index, reduction, label_smoothing):
    return _ce_forward(logits, target, weight, ignore_index, reduction, label_smoothing)[0]


def _ce_vjp(ctx, g):
    logits, target, weight = ctx.inputs
    logp, soft, index, count = ctx.saved
    reduction, eps = ctx.params["reduction"], float(ctx.params["label_smoothing"])
    axis = _class_axis(logits.ndim)
    c = logits.shape[axis]
    dt = logp.dtype
    g = np.asarray(g, dtype=dt)
    per_shape = logp.shape[:axis] + logp.shape[axis + 1:]
    if reduction == "none":
        ge = g
    else:
        ge = g / count if reduction == "mean" and count else g
        ge = np.broadcast_to(ge, per_shape)
    ge = np.expand_dims(ge, axis)
    p = np.exp(logp)
    _, wc = _class_weights(weight, logp, axis)
    if index is None:  # probability targets: d/dlogits of -sum_c w_c t_c logp_c
        tw = soft * wc
        glogits = (p * tw.sum(axis=axis, keepdims=True) - tw) * ge if ctx.needs_grad[0] else None
        gtarget = -(1.0 - eps) * wc * logp * ge if ctx.needs_grad[1] else None
        gweight = _per_class(-soft * logp * ge, axis) if ctx.needs_grad[2] else None
        return glogits, gtarget, gweight
    safe, valid, wy = index
    gweight = None
    if ctx.needs_grad[2]:  # per_n = sum_j w_j mix_nj (-logp_nj), mix = (1-eps) onehot + eps/c
        hot = np.zeros_like(logp)
        np.put_along_axis(hot, np.expand_dims(safe, axis), 1.0, axis=axis)
        hot *= np.expand_dims(valid, axis)
        mix = hot * (1.0 - eps) + np.expand_dims(valid, axis) * (eps / c)
        gweight = _per_class(-logp * mix * ge, axis)
        if reduction == "mean" and count:  # the mean's denominator is sum_n w[y_n] too
            gweight = gweight - np.asarray(ctx.outputs[0], dt) * g / count * _per_class(hot, axis)
    gl = p * np.expand_dims(wy, axis)  # w_y (p - onehot(y))
    np.put_along_axis(gl, np.expand_dims(safe, axis),
                      np.take_along_axis(gl, np.expand_dims(safe, axis), axis=axis)
                      - np.expand_dims(wy, axis), axis=axis)
    if eps:  # the uniform part: sum_c w_c (p - onehot(c)) = p * sum(w) - w
        smooth = (p * wc.sum() - wc) * np.expand_dims(valid, axis)
        gl = gl * (1.0 - eps) + smooth * (eps / c)
    return (gl * ge).astype(dt, copy=False), None, gweight


def _per_class(a: np.ndarray, axis: int) -> np.ndarray:
    """``a`` summed over every axis but the class axis."""
    return np.moveaxis(a, axis, 0).reshape(a.shape[axis], -1).sum(axis=1)


def _ce_samples(rng):
    r = rng.standard_normal
    t = np.array([1, 0, 3], dtype=np.int64)
    for red in REDUCTIONS:
        yield Sample(args=(r((3, 4)), t, None), params={"reduction": red}, name=red)
    yield Sample(args=(r((2, 3, 2, 2)), rng.integers(0, 3, (2, 2, 2)), None), name="spatial")
    yield Sample(args=(r(5), np.array(2, dtype=np.int64), None), name="unbatched")
    yield Sample(args=(r((4, 3)), np.array([0, -100, 2, 1], dtype=np.int64), None),
                 name="ignore_index")
    probs = rng.dirichlet(np.ones(4), size=3)
    yield Sample(args=(r((3, 4)), probs, None), params={"reduction": "sum"}, name="probabilities")
    big = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 1e4 - 3.0]])
    yield Sample(args=(big, np.array([1, 2], dtype=np.int64), None), grad=False,
                 name="huge_logits")
    w = rng.uniform(0.5, 2.0, 4)
    yield Sample(args=(r((3, 4)), np.array([1, 2, 3], dtype=np.int64), w),
                 params={"ignore_index": 2, "label_smoothing": 0.2}, name="weight_smoothing")
    yield Sample(args=(r((2, 4, 3)), rng.integers(0, 4, (2, 3)), w),
                 params={"label_smoothing": 0.1, "reduction": "sum"}, name="spatial_weighted")
    yield Sample(args=(r((3, 4)), probs, w), params={"label_smoothing": 0.3},
                 name="probabilities_weighted_smoothing")


cross_entropy = OpDef(
    name="cross_entropy", inputs=("logits", "target", "weight?"),
    params={"ignore_index": Param(kind="int", default=IGNORE_INDEX,
                                  doc="class-index targets equal to it add nothing (and are left "
                                      "out of the mean)"),
            "reduction": Param(kind="str", default="mean", choices=REDUCTIONS),
            "label_smoothing": Param(kind="float", default=0.0,
                                     doc="mixes the target with the uniform distribution over "
                                         "the classes, in [0, 1]")},
    signature=("logits", "target", "weight", "ignore_index", "reduction", "label_smoothing"),
    kernel=_ce_kernel, forward=_ce_forward, infer=_ce_infer, vjp=_ce_vjp, samples=_ce_samples,
    untraceable=LOSS_UNTRACEABLE,
    doc="-log_softmax(logits)[target] over the class axis 1 (axis 0 for unbatched (C,) logits) "
        "(torch.nn.functional.cross_entropy): integer targets are class indices (ignore_index, "
        "-100 by default, adds nothing; 'mean' divides by the summed weights of the targets "
        "not ignored); float targets are class probabilities of the logits' shape. weight (C,) "
        "rescales each class; label_smoothing as PyTorch's.",
)

OPS = (mse_loss, cross_entropy)
