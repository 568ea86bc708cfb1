"""More losses in PyTorch's functional forms: binary_cross_entropy(_with_logits), nll_loss,
l1_loss, smooth_l1_loss, huber_loss and kl_div. Training-only, so untraceable like mse_loss.

Each kernel computes the per-element loss and reduces it (`reduce_loss`); each gradient is the
per-element derivative times the reduction's spread of the upstream gradient
(`loss_grad_scale`); the core sums a gradient over the axes an input was broadcast along.
"""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType, broadcast_shapes
from onemodel.errors import OpError
from onemodel.registry import OpDef, Param, Sample

from ._common import (LOSS_UNTRACEABLE, REDUCTIONS, as_dtype, check_dim, float_dtype,
                      loss_grad_scale, loss_infer, reduce_loss, result_dtype)

_REDUCTION = Param(kind="str", default="mean", choices=REDUCTIONS)
_LOG_FLOOR = -100.0  # PyTorch clamps BCE's logs at -100 so that a 0 or 1 gives a finite loss
_BCE_EPS = 1e-12  # and divides its gradient by max(x (1 - x), 1e-12)


def _same_shape(op, what, a: TensorType, b: TensorType) -> None:
    if a.ndim != b.ndim:
        raise OpError(f"ops.{op}: {what} {b} must have the shape of input {a}")
    for x, y in zip(a.shape, b.shape):
        check_dim(op, f"the shape of {what} {b} (input {a}); an axis", y, x)


def _broadcasts_to(op, what, t: TensorType | None, shape) -> None:
    if t is None:
        return
    try:
        fits = tuple(broadcast_shapes(t.shape, shape, op=f"ops.{op}")) == tuple(shape)
    except OpError:
        fits = False
    if not fits:
        raise OpError(f"ops.{op}: {what} {t} does not broadcast to the input's shape {shape}")


def _diff(input, target):
    dt = result_dtype(input, target)
    return as_dtype(input, dt) - as_dtype(target, dt), dt


def _pointwise_loss(name, per_elem, derivative, doc, extra=None, samples_extra=()):
    """A loss of ``d = input - target`` alone (l1, smooth_l1, huber): ``per_elem(d, **p)`` and
    ``derivative(d, **p)``; input and target broadcast like PyTorch's."""
    extra = extra or {}

    def infer(input, target, reduction, **p):
        dtype = float_dtype(name, input, target)
        shape = broadcast_shapes(input.shape, target.shape, op=f"ops.{name}")
        for k, v in p.items():
            if v < 0:
                raise OpError(f"ops.{name}: {k} must be >= 0, got {v}")
        return loss_infer(shape, reduction, dtype)

    def kernel(input, target, reduction, **p):
        d, _ = _diff(input, target)
        return reduce_loss(per_elem(d, **p), reduction)

    def vjp(ctx, g):
        input, target = ctx.inputs
        p = {k: ctx.params[k] for k in extra}
        d, dt = _diff(input, target)
        gd = loss_grad_scale(g, d.shape, ctx.params["reduction"], dt) * derivative(d, **p)
        return (gd if ctx.needs_grad[0] else None), (-gd if ctx.needs_grad[1] else None)

    def samples(rng):
        r = rng.standard_normal
        for red in REDUCTIONS:
            yield Sample(args=(r((3, 4)) * 2, r((3, 4)) * 2), params={"reduction": red},
                         name=red)
        yield Sample(args=(r((2, 3)), r(3)), name="broadcast")
        yield from samples_extra

    params = {"reduction": _REDUCTION, **extra}
    return OpDef(name=name, inputs=("input", "target"), params=params, kernel=kernel,
                 infer=infer, vjp=vjp, samples=samples, untraceable=LOSS_UNTRACEABLE, doc=doc)


# -- l1 / smooth_l1 / huber ---------------------------------------------------------------------
def _smooth_l1(d, beta):
    a = np.abs(d)
    if beta == 0:
        return a
    return np.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


def _smooth_l1_grad(d, beta):
    if beta == 0:
        return np.sign(d)
    return np.where(np.abs(d) < beta, d / beta, np.sign(d))


def _huber(d, delta):
    a = np.abs(d)
    return np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))


def _huber_grad(d, delta):
    return np.where(np.abs(d) < delta, d, delta * np.sign(d))


l1_loss = _pointwise_loss(
    "l1_loss", lambda d: np.abs(d), lambda d: np.sign(d),
    "|input - target|, reduced (torch.nn.functional.l1_loss); the gradient at 0 is 0.")

smooth_l1_loss = _pointwise_loss(
    "smooth_l1_loss", _smooth_l1, _smooth_l1_grad,
    "0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, for d = input - target "
    "(torch.nn.functional.smooth_l1_loss; beta=0 is l1_loss).",
    extra={"beta": Param(kind="float", default=1.0)},
    samples_extra=(Sample(args=(np.array([0.1, -0.4, 2.0, -3.0]), np.zeros(4)),
                          params={"beta": 0.5}, name="beta"),
                   Sample(args=(np.array([0.1, -0.4, 2.0, -3.0]), np.zeros(4)),
                          params={"beta": 0.0}, name="beta0")))

huber_loss = _pointwise_loss(
    "huber_loss", _huber, _huber_grad,
    "0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), for d = input - target "
    "(torch.nn.functional.huber_loss).",
    extra={"delta": Param(kind="float", default=1.0)},
    samples_extra=(Sample(args=(np.array([0.1, -0.4, 2.0, -3.0]), np.zeros(4)),
                          params={"delta": 1.5}, name="delta"),))


# -- binary_cross_entropy -----------------------------------------------------------------------
def _bce_infer(input, target, weight, reduction):
    dtype = float_dtype("binary_cross_entropy", input, target, weight)
    _same_shape("binary_cross_entropy", "target", input, target)
    _broadcasts_to("binary_cross_entropy", "weight", weight, input.shape)
    return loss_infer(input.shape, reduction, dtype)


def _bce_parts(input, target, weight):
    dt = result_dtype(input, target, weight)
    x, t = as_dtype(input, dt), as_dtype(target, dt)
    if x.size and (x.min() < 0 or x.max() > 1):
        raise OpError("ops.binary_cross_entropy: input must hold probabilities in [0, 1]")
    with np.errstate(divide="ignore"):
        logx = np.maximum(np.log(x), _LOG_FLOOR)
        log1mx = np.maximum(np.log1p(-x), _LOG_FLOOR)
    return x, t, logx, log1mx, dt


def _bce(input, target, weight, reduction):
    x, t, logx, log1mx, dt = _bce_parts(input, target, weight)
    per = -(t * logx + (1 - t) * log1mx)
    if weight is not None:
        per = per * as_dtype(weight, dt)
    return reduce_loss(per, reduction)


def _bce_vjp(ctx, g):
    input, target, weight = ctx.inputs
    x, t, logx, log1mx, dt = _bce_parts(input, target, weight)
    ge = loss_grad_scale(g, x.shape, ctx.params["reduction"], dt)
    w = as_dtype(weight, dt) if weight is not None else 1.0
    gx = gt = gw = None
    if ctx.needs_grad[0]:
        gx = ge * w * (x - t) / np.maximum(x * (1 - x), _BCE_EPS)
    if ctx.needs_grad[1]:
        gt = ge * w * (log1mx - logx)
    if weight is not None and ctx.needs_grad[2]:
        gw = ge * -(t * logx + (1 - t) * log1mx)
    return gx, gt, gw


def _bce_samples(rng):
    def p(shape):
        return rng.uniform(0.05, 0.95, shape)

    for red in REDUCTIONS:
        yield Sample(args=(p((3, 4)), p((3, 4)), None), params={"reduction": red}, name=red)
    yield Sample(args=(p((2, 3)), rng.integers(0, 2, (2, 3)).astype(float), p(3)),
                 name="weight")
    yield Sample(args=(np.array([0.0, 1.0, 0.5]), np.array([1.0, 0.0, 0.5]), None),
                 params={"reduction": "sum"}, grad=False, name="clamped_logs")


binary_cross_entropy = OpDef(
    name="binary_cross_entropy", inputs=("input", "target", "weight?"),
    params={"reduction": _REDUCTION},
    kernel=_bce, infer=_bce_infer, vjp=_bce_vjp, samples=_bce_samples,
    untraceable=LOSS_UNTRACEABLE,
    doc="-weight (target log(input) + (1 - target) log(1 - input)) with the logs clamped at "
        "-100 (torch.nn.functional.binary_cross_entropy); input holds probabilities.",
)


# -- binary_cross_entropy_with_logits -----------------------------------------------------------
def _bcel_infer(input, target, weight, pos_weight, reduction):
    op = "binary_cross_entropy_with_logits"
    dtype = float_dtype(op, input, target, weight, pos_weight)
    _same_shape(op, "target", input, target)
    _broadcasts_to(op, "weight", weight, input.shape)
    _broadcasts_to(op, "pos_weight", pos_weight, input.shape)
    return loss_infer(input.shape, reduction, dtype)


def _softplus_neg(x):
    """log(1 + exp(-x)), stable for every x."""
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)


def _bcel_parts(input, target, weight, pos_weight):
    dt = result_dtype(input, target, weight, pos_weight)
    x, t = as_dtype(input, dt), as_dtype(target, dt)
    sp = _softplus_neg(x)
    lw = 1.0 if pos_weight is None else (as_dtype(pos_weight, dt) - 1) * t + 1
    per = (1 - t) * x + lw * sp
    return x, t, sp, lw, per, dt


def _bcel(input, target, weight, pos_weight, reduction):
    *_, per, dt = _bcel_parts(input, target, weight, pos_weight)
    if weight is not None:
        per = per * as_dtype(weight, dt)
    return reduce_loss(per, reduction)


def _bcel_vjp(ctx, g):
    input, target, weight, pos_weight = ctx.inputs
    x, t, sp, lw, per, dt = _bcel_parts(input, target, weight, pos_weight)
    ge = loss_grad_scale(g, x.shape, ctx.params["reduction"], dt)
    if weight is not None:
        gw = ge * per if ctx.needs_grad[2] else None
        ge = ge * as_dtype(weight, dt)
    else:
        gw = None
    sig_neg = 0.5 - 0.5 * np.tanh(0.5 * x)  # sigmoid(-x), stable
    gx = ge * ((1 - t) - lw * sig_neg) if ctx.needs_grad[0] else None
    gt = gpw = None
    if ctx.needs_grad[1]:
        gt = ge * (-x + (0.0 if pos_weight is None else (as_dtype(pos_weight, dt) - 1) * sp))
    if pos_weight is not None and ctx.needs_grad[3]:
        gpw = ge * t * sp
    return gx, gt, gw, gpw


def _bcel_samples(rng):
    r = rng.standard_normal

    def p(shape):
        return rng.uniform(0.0, 1.0, shape)

    for red in REDUCTIONS:
        yield Sample(args=(r((3, 4)) * 3, p((3, 4)), None, None), params={"reduction": red},
                     name=red)
    yield Sample(args=(r((2, 3)), p((2, 3)), p(3) + 0.5, None), name="weight")
    yield Sample(args=(r((2, 3)), p((2, 3)), None, p(3) * 3), name="pos_weight")
    yield Sample(args=(r((2, 3)), p((2, 3)), p((2, 1)), p(3) * 3), params={"reduction": "sum"},
                 name="both")
    yield Sample(args=(np.array([-800.0, 800.0, 0.0]), np.array([1.0, 0.0, 0.5]), None, None),
                 grad=False, name="huge_logits")


binary_cross_entropy_with_logits = OpDef(
    name="binary_cross_entropy_with_logits",
    inputs=("input", "target", "weight?", "pos_weight?"),
    params={"reduction": _REDUCTION},
    signature=("input", "target", "weight", "reduction", "pos_weight"),
    kernel=_bcel, infer=_bcel_infer, vjp=_bcel_vjp, samples=_bcel_samples,
    untraceable=LOSS_UNTRACEABLE,
    doc="binary_cross_entropy(sigmoid(input), target) computed stably from logits, with "
        "pos_weight scaling the positive term (torch.nn.functional."
        "binary_cross_entropy_with_logits).",
)


# -- nll_loss -----------------------------------------------------------------------------------
def _class_axis(ndim):
    return 0 if ndim == 1 else 1


def _nll_infer(input, target, weight, ignore_index, reduction):
    dtype = float_dtype("nll_loss", input, weight)
    if input.ndim < 1:
        raise OpError(f"ops.nll_loss: input must be (C,), (N, C) or (N, C, d1, ...), got {input}")
    if not target.dtype.is_int:
        raise OpError(f"ops.nll_loss: target must hold class indices (an integer tensor), got "
                      f"{target}")
    axis = _class_axis(input.ndim)
    per_elem = input.shape[:axis] + input.shape[axis + 1:]
    if target.ndim != len(per_elem):
        raise OpError(f"ops.nll_loss: target {target} must have the shape of input {input} "
                      f"without the class axis {axis}")
    for a, b in zip(target.shape, per_elem):
        check_dim("nll_loss", f"the shape of target {target} (input {input}); an axis", a, b)
    if weight is not None:
        if weight.ndim != 1:
            raise OpError(f"ops.nll_loss: weight must be 1-d (C,), got {weight}")
        check_dim("nll_loss", f"the size of weight {weight} (input {input})", weight.shape[0],
                  input.shape[axis])
    return loss_infer(per_elem, reduction, dtype)


def _nll_parts(input, target, weight, ignore_index):
    axis = _class_axis(input.ndim)
    dt = result_dtype(input, weight)
    c = input.shape[axis]
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    if safe.size and (safe.min() < 0 or safe.max() >= c):
        bad = safe.min() if safe.min() < 0 else safe.max()
        raise OpError(f"ops.nll_loss: target {bad} is out of range for {c} classes")
    w = as_dtype(weight, dt)[safe] if weight is not None else np.ones(safe.shape, dt)
    w = w * valid
    return axis, dt, safe, w


def _nll(input, target, weight, ignore_index, reduction):
    axis, dt, safe, w = _nll_parts(input, target, weight, ignore_index)
    x = as_dtype(input, dt)
    picked = np.squeeze(np.take_along_axis(x, np.expand_dims(safe, axis), axis=axis), axis)
    per = -picked * w
    if reduction == "none":
        return per
    total = per.sum(dtype=dt)
    if reduction == "sum":
        return total
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / w.sum(dtype=dt)  # PyTorch: nan when every target is ignored


def _nll_vjp(ctx, g):
    input, target, weight = ctx.inputs
    p = ctx.params
    axis, dt, safe, w = _nll_parts(input, target, weight, p["ignore_index"])
    g = np.asarray(g, dtype=dt)
    total = w.sum(dtype=dt)
    if p["reduction"] == "mean":
        g = g / total
    gper = np.broadcast_to(g, safe.shape)
    gx = gw = None
    if ctx.needs_grad[0]:
        gx = np.zeros(input.shape, dt)
        np.put_along_axis(gx, np.expand_dims(safe, axis), np.expand_dims(-gper * w, axis),
                          axis=axis)
    if weight is not None and ctx.needs_grad[2]:
        x = as_dtype(input, dt)
        picked = np.squeeze(np.take_along_axis(x, np.expand_dims(safe, axis), axis=axis), axis)
        valid = (target != p["ignore_index"]).astype(dt)
        c = input.shape[axis]
        gw = np.bincount(safe.ravel(), (-picked * gper * valid).ravel(), minlength=c)
        if p["reduction"] == "mean":  # the divisor depends on the weights too
            mean = _nll(input, target, weight, p["ignore_index"], "mean")
            gw = gw - np.bincount(safe.ravel(), (gper * valid).ravel(), minlength=c) * mean
        gw = gw.astype(dt)
    return gx, None, gw


def _nll_samples(rng):
    r = rng.standard_normal
    t = np.array([1, 0, 3], dtype=np.int64)
    for red in REDUCTIONS:
        yield Sample(args=(r((3, 4)), t, None), params={"reduction": red}, name=red)
    yield Sample(args=(r((3, 4)), t, rng.uniform(0.5, 2, 4)), name="weight")
    yield Sample(args=(r((4, 3)), np.array([0, -100, 2, 1], dtype=np.int64), r(3) ** 2),
                 name="ignore_index")
    yield Sample(args=(r((4, 3)), np.array([0, 1, 2, 1], dtype=np.int64), None),
                 params={"ignore_index": 1, "reduction": "sum"}, name="ignore_1")
    yield Sample(args=(r((2, 3, 2, 2)), rng.integers(0, 3, (2, 2, 2)), None), name="spatial")
    yield Sample(args=(r(5), np.array(2, dtype=np.int64), None), name="unbatched")


nll_loss = OpDef(
    name="nll_loss", inputs=("input", "target", "weight?"),
    params={"ignore_index": Param(kind="int", default=-100), "reduction": _REDUCTION},
    kernel=_nll, infer=_nll_infer, vjp=_nll_vjp, samples=_nll_samples,
    untraceable=LOSS_UNTRACEABLE,
    doc="-weight[target] input[target] over the class axis 1 (axis 0 for (C,) input) "
        "(torch.nn.functional.nll_loss); ignore_index targets add nothing, and 'mean' divides "
        "by the summed weights of the targets not ignored.",
)


# -- kl_div -------------------------------------------------------------------------------------
_KL_REDUCTIONS = ("mean", "batchmean", "sum", "none")


def _kl_infer(input, target, reduction, log_target):
    dtype = float_dtype("kl_div", input, target)
    shape = broadcast_shapes(input.shape, target.shape, op="ops.kl_div")
    return loss_infer(shape, reduction, dtype)


def _kl_per(input, target, log_target):
    dt = result_dtype(input, target)
    x, t = as_dtype(input, dt), as_dtype(target, dt)
    if log_target:
        return np.exp(t) * (t - x), x, t, dt
    with np.errstate(divide="ignore", invalid="ignore"):
        logt = np.where(t > 0, np.log(np.where(t > 0, t, 1)), 0)
    return np.where(t > 0, t * (logt - x), 0 * x), x, t, dt  # xlogy: 0 where target is 0


def _kl_divisor(shape, reduction):
    if reduction == "mean":
        return int(np.prod(shape))
    if reduction == "batchmean":
        return shape[0] if shape else 1
    return 1


def _kl(input, target, reduction, log_target):
    per, *_, dt = _kl_per(input, target, log_target)
    if reduction == "none":
        return per
    return (per.sum(dtype=dt) / _kl_divisor(per.shape, reduction)).astype(dt)


def _kl_vjp(ctx, g):
    input, target = ctx.inputs
    p = ctx.params
    per, x, t, dt = _kl_per(input, target, p["log_target"])
    if p["reduction"] == "none":
        ge = np.asarray(g, dt)
    else:
        ge = np.broadcast_to(np.asarray(g, dt) / _kl_divisor(per.shape, p["reduction"]),
                             per.shape)
    if p["log_target"]:
        et = np.exp(t)
        gx, gt = -et, et * (t - x + 1)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            gt = np.where(t > 0, np.log(np.where(t > 0, t, 1)) - x + 1, 0)
        gx = -t
    return ((ge * gx) if ctx.needs_grad[0] else None), ((ge * gt) if ctx.needs_grad[1] else None)


def _kl_samples(rng):
    logp = np.log(rng.dirichlet(np.ones(4), size=3))
    q = rng.dirichlet(np.ones(4), size=3)
    for red in _KL_REDUCTIONS:
        yield Sample(args=(logp, q), params={"reduction": red}, name=red)
    yield Sample(args=(logp, np.log(q)), params={"reduction": "batchmean", "log_target": True},
                 name="log_target")
    yield Sample(args=(logp, np.array([0.5, 0.0, 0.25, 0.25])), params={"reduction": "sum"},
                 grad=False, name="zero_target_broadcast")  # t log t has no slope at t = 0


kl_div = OpDef(
    name="kl_div", inputs=("input", "target"),
    params={"reduction": Param(kind="str", default="mean", choices=_KL_REDUCTIONS),
            "log_target": Param(kind="bool", default=False)},
    kernel=_kl, infer=_kl_infer, vjp=_kl_vjp, samples=_kl_samples,
    untraceable=LOSS_UNTRACEABLE,
    doc="target (log(target) - input) for log-probabilities input (torch.nn.functional.kl_div; "
        "0 where target is 0; log_target=True takes log-probability targets); 'batchmean' "
        "divides the sum by the batch size, 'mean' by the element count.",
)

OPS = (binary_cross_entropy, binary_cross_entropy_with_logits, nll_loss, l1_loss,
       smooth_l1_loss, huber_loss, kl_div)
