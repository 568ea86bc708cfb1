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


def _ce_infer(logits: TensorType, target: TensorType, reduction) -> TensorType:
    dtype = float_dtype("cross_entropy", logits)
    if logits.ndim < 1:
        raise ValueError(f"logits must be (C,), (N, C) or (N, C, d1, ...), got {logits}")
    axis = _class_axis(logits.ndim)
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


def _ce_forward(logits, target, reduction):
    axis = _class_axis(logits.ndim)
    logp = log_softmax_array(logits, axis)
    if target.dtype.kind == "f":
        t = as_dtype(target, logp.dtype)
        per = -(t * logp).sum(axis=axis)
        out = reduce_loss(per, reduction)
        return out, (logp, None, per.size)
    valid = target != IGNORE_INDEX
    safe = np.where(valid, target, 0)
    c = logits.shape[axis]
    if safe.size and (safe.min() < 0 or safe.max() >= c):
        bad = safe.min() if safe.min() < 0 else safe.max()
        raise OpError(f"ops.cross_entropy: target {bad} is out of range for {c} classes")
    picked = np.take_along_axis(logp, np.expand_dims(safe, axis), axis=axis)
    per = -np.squeeze(picked, axis=axis) * valid
    count = int(valid.sum())
    if reduction == "none":
        out = per
    elif reduction == "sum":
        out = per.sum(dtype=per.dtype)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            out = per.sum(dtype=per.dtype) / np.asarray(count, dtype=per.dtype)
    return out, (logp, (safe, valid), count)


def _ce_kernel(logits, target, reduction):
    return _ce_forward(logits, target, reduction)[0]


def _ce_vjp(ctx, g):
    logits, target = ctx.inputs
    logp, index, count = ctx.saved
    reduction = ctx.params["reduction"]
    axis = _class_axis(logits.ndim)
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
    if index is None:  # probability targets
        t = as_dtype(target, dt)
        glogits = (p * t.sum(axis=axis, keepdims=True) - t) * ge if ctx.needs_grad[0] else None
        gtarget = -logp * ge if ctx.needs_grad[1] else None
        return glogits, gtarget
    safe, valid = index
    gl = p
    np.put_along_axis(gl, np.expand_dims(safe, axis),
                      np.take_along_axis(gl, np.expand_dims(safe, axis), axis=axis) - 1, axis=axis)
    gl *= ge * np.expand_dims(valid, axis)
    return gl, None


def _ce_samples(rng):
    r = rng.standard_normal
    t = np.array([1, 0, 3], dtype=np.int64)
    for red in REDUCTIONS:
        yield Sample(args=(r((3, 4)), t), params={"reduction": red}, name=red)
    yield Sample(args=(r((2, 3, 2, 2)), rng.integers(0, 3, (2, 2, 2))), name="spatial")
    yield Sample(args=(r(5), np.array(2, dtype=np.int64)), name="unbatched")
    yield Sample(args=(r((4, 3)), np.array([0, -100, 2, 1], dtype=np.int64)),
                 name="ignore_index")
    probs = rng.dirichlet(np.ones(4), size=3)
    yield Sample(args=(r((3, 4)), probs), params={"reduction": "sum"}, name="probabilities")
    big = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 1e4 - 3.0]])
    yield Sample(args=(big, np.array([1, 2], dtype=np.int64)), grad=False, name="huge_logits")


cross_entropy = OpDef(
    name="cross_entropy", inputs=("logits", "target"),
    params={"reduction": Param(kind="str", default="mean", choices=REDUCTIONS)},
    kernel=_ce_kernel, forward=_ce_forward, infer=_ce_infer, vjp=_ce_vjp, samples=_ce_samples,
    untraceable=LOSS_UNTRACEABLE,
    doc="-log_softmax(logits)[target] over the class axis 1 (axis 0 for unbatched (C,) logits) "
        "(torch.nn.functional.cross_entropy): integer targets are class indices (-100 is "
        "ignored, as PyTorch's default ignore_index; 'mean' divides by the targets not "
        "ignored); float targets are class probabilities of the logits' shape.",
)

OPS = (mse_loss, cross_entropy)
