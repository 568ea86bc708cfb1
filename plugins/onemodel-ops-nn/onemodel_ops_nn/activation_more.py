"""The activations of torch.nn.functional a ported model reaches for, with PyTorch's semantics:
softplus (beta, threshold), silu, mish, elu (alpha), selu, leaky_relu (negative_slope), prelu
(one weight per channel, axis 1), relu6, hardtanh (min_val, max_val), glu (halves along an axis),
log_sigmoid and softsign. Float inputs only, as torch, except relu6 and hardtanh (ints keep their
dtype, bounds cast to it) and softsign (ints give f32). Kernels avoid overflow: exp only ever sees
-|x| or a clamped x. Gradients at kinks follow torch (0 at the bounds of hardtanh, the negative
side's slope at 0 for elu and leaky_relu)."""
from __future__ import annotations

import attrs
import numpy as np

from onemodel.core import DType, TensorType, normalize_axis
from onemodel.core.types import same_dim
from onemodel.errors import OpError
from onemodel.registry import OpDef, OpTraits, Param, Pointwise, Sample

from ._common import float_dtype
from .activation import along_axis

#: torch.nn.functional.selu's constants (Klambauer et al.)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _pointwise(formula) -> OpTraits:
    return OpTraits(pointwise=Pointwise(formula=formula))


def _float_infer(op):
    def infer(x: TensorType, **params) -> TensorType:
        return TensorType(float_dtype(op, x), x.shape)
    return infer


def _c(x, v):
    """``v`` as a scalar of x's dtype (keeps float32 arithmetic in float32)."""
    return x.dtype.type(v)


def _sigmoid(x):
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


def _softplus1(z):
    """log(1 + exp(z)) without overflow."""
    return np.maximum(z, _c(z, 0)) + np.log1p(np.exp(-np.abs(z)))


def _activation(name, kernel, vjp, samples, formula, doc, params=None, infer=None,
                epilogue=None):
    traits = _pointwise(formula)
    if epilogue is not None:
        traits = attrs.evolve(traits, epilogue=epilogue)
    return OpDef(name=name, inputs=("x",), params=params or {}, kernel=kernel,
                 infer=infer or _float_infer(name), vjp=vjp, samples=samples, methods=(name,),
                 traits=traits, doc=doc)


def _normal(rng, scale=2.0):
    yield Sample(args=(rng.standard_normal((3, 5)) * scale,))
    yield Sample(args=(np.array([-800.0, -30.0, -1.0, 0.0, 1.0, 30.0, 800.0]),), grad=False,
                 name="extreme")


def _away_from_zero(rng, shape=(3, 5), margin=0.1):
    x = rng.standard_normal(shape) * 2
    return np.where(np.abs(x) < margin, x + 2 * margin * np.sign(x + 1e-12), x)


def _kinked(rng):
    yield Sample(args=(_away_from_zero(rng),))
    yield Sample(args=(np.array([-30.0, -1.0, 0.0, 1.0, 30.0]),), grad=False, name="kink")


# -- softplus -------------------------------------------------------------------------------------
def _softplus(x, beta=1.0, threshold=20.0):
    z = x * _c(x, beta)
    with np.errstate(over="ignore"):
        soft = _softplus1(z) / _c(x, beta)
    return np.where(z > threshold, x, soft).astype(x.dtype, copy=False)


def _softplus_vjp(ctx, g):
    x = ctx.inputs[0]
    beta, threshold = ctx.params["beta"], ctx.params["threshold"]
    z = x * beta
    return (g * np.where(z > threshold, 1.0, _sigmoid(z)),)


def _softplus_infer(x, beta=1.0, threshold=20.0):
    if beta == 0:
        raise OpError("ops.softplus: beta must not be 0 (it divides)")
    return TensorType(float_dtype("softplus", x), x.shape)


def _softplus_samples(rng):
    yield from _normal(rng)
    x = rng.uniform(-4, 4, (2, 6))
    x = np.where(np.abs(x * 2.0 - 3.0) < 0.1, x + 0.2, x)  # not at the threshold itself
    yield Sample(args=(x,), params={"beta": 2.0, "threshold": 3.0}, name="beta_threshold")
    yield Sample(args=(np.array([10.0, 19.5, 20.0, 20.5, 25.0]),), grad=False, name="threshold")


softplus = _activation(
    "softplus", _softplus, _softplus_vjp, _softplus_samples,
    "np.where(beta * x > threshold, x, (np.maximum(beta * x, 0) + "
    "np.log1p(np.exp(-np.abs(beta * x)))) / beta)",
    "log(1 + exp(beta * x)) / beta, and x where beta * x > threshold "
    "(torch.nn.functional.softplus).",
    params={"beta": Param(kind="float", default=1.0),
            "threshold": Param(kind="float", default=20.0,
                               doc="above it (in beta * x) the result is x")},
    infer=_softplus_infer)


# -- silu, mish, log_sigmoid, softsign ------------------------------------------------------------
def _silu_vjp(ctx, g):
    x = ctx.inputs[0]
    s = _sigmoid(x)
    return (g * (s + x * s * (1.0 - s)),)


silu = _activation(
    "silu", lambda x: x * _sigmoid(x), _silu_vjp, _normal,
    "x * (0.5 * np.tanh(0.5 * x) + 0.5)",
    "x * sigmoid(x) (torch.nn.functional.silu, swish with beta 1).",
    epilogue=lambda p: ("swish", 1.0))


def _mish(x):
    return x * np.tanh(_softplus1(x))


def _mish_vjp(ctx, g):
    x = ctx.inputs[0]
    t = np.tanh(_softplus1(x))
    return (g * (t + x * (1.0 - t * t) * _sigmoid(x)),)


mish = _activation(
    "mish", _mish, _mish_vjp, _normal,
    "x * np.tanh(np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))))",
    "x * tanh(softplus(x)) (torch.nn.functional.mish).")


def _log_sigmoid(x):
    return np.minimum(x, _c(x, 0)) - np.log1p(np.exp(-np.abs(x)))


log_sigmoid = _activation(
    "log_sigmoid", _log_sigmoid, lambda ctx, g: (g * _sigmoid(-ctx.inputs[0]),), _normal,
    "np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))",
    "log(sigmoid(x)), finite for every finite x (torch.nn.functional.logsigmoid).")


def _softsign_infer(x):
    if x.dtype == DType.BOOL:
        raise OpError(f"ops.softsign: expects a numeric tensor, got {x}")
    return TensorType(x.dtype if x.dtype.is_float else DType.F32, x.shape)


def _softsign(x):
    x = x if x.dtype.kind == "f" else x.astype(np.float32)
    return x / (_c(x, 1) + np.abs(x))


softsign = _activation(
    "softsign", _softsign, lambda ctx, g: (g / (1.0 + np.abs(ctx.inputs[0])) ** 2,),
    lambda rng: [*_normal(rng), Sample(args=(np.array([-3, 0, 2], dtype=np.int64),),
                                       grad=False, name="int")],
    "x / (1 + np.abs(x))",
    "x / (1 + |x|) (torch.nn.functional.softsign; int inputs give f32).",
    infer=_softsign_infer)


# -- elu, selu, leaky_relu ------------------------------------------------------------------------
def _elu(x, alpha=1.0):
    neg = _c(x, alpha) * np.expm1(np.minimum(x, _c(x, 0)))
    return np.where(x > 0, x, neg).astype(x.dtype, copy=False)


def _elu_vjp(ctx, g):
    x = ctx.inputs[0]
    alpha = ctx.params["alpha"]
    return (g * np.where(x > 0, 1.0, alpha * np.exp(np.minimum(x, 0.0))),)


def _elu_samples(rng):
    yield from _kinked(rng)
    yield Sample(args=(_away_from_zero(rng, (2, 4)),), params={"alpha": 0.3}, name="alpha")


elu = _activation(
    "elu", _elu, _elu_vjp, _elu_samples,
    "np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))",
    "x where x > 0, else alpha * (exp(x) - 1) (torch.nn.functional.elu).",
    params={"alpha": Param(kind="float", default=1.0)})


def _selu(x):
    return (_c(x, SELU_SCALE) * _elu(x, SELU_ALPHA)).astype(x.dtype, copy=False)


def _selu_vjp(ctx, g):
    x = ctx.inputs[0]
    return (g * SELU_SCALE * np.where(x > 0, 1.0, SELU_ALPHA * np.exp(np.minimum(x, 0.0))),)


selu = _activation(
    "selu", _selu, _selu_vjp, _kinked,
    f"{SELU_SCALE!r} * np.where(x > 0, x, {SELU_ALPHA!r} * np.expm1(np.minimum(x, 0)))",
    "scale * elu(x, alpha) with torch's scale = 1.0507009873554805 and alpha = "
    "1.6732632423543772 (torch.nn.functional.selu).")


def _leaky_relu(x, negative_slope=0.01):
    return np.where(x > 0, x, x * _c(x, negative_slope)).astype(x.dtype, copy=False)


def _leaky_relu_samples(rng):
    yield from _kinked(rng)
    yield Sample(args=(_away_from_zero(rng, (2, 4)),), params={"negative_slope": 0.2},
                 name="slope")


leaky_relu = _activation(
    "leaky_relu", _leaky_relu,
    lambda ctx, g: (g * np.where(ctx.inputs[0] > 0, 1.0, ctx.params["negative_slope"]),),
    _leaky_relu_samples, "np.where(x > 0, x, x * negative_slope)",
    "x where x > 0, else negative_slope * x (torch.nn.functional.leaky_relu).",
    params={"negative_slope": Param(kind="float", default=0.01)})


# -- relu6, hardtanh ------------------------------------------------------------------------------
def _hardtanh_check(op, x, min_val, max_val):
    if x.dtype == DType.BOOL:
        raise OpError(f"ops.{op}: expects a numeric tensor, got {x}")
    if min_val > max_val:
        raise OpError(f"ops.{op}: min_val ({min_val}) must not be greater than max_val "
                      f"({max_val})")


def _hardtanh_infer(x, min_val=-1.0, max_val=1.0):
    _hardtanh_check("hardtanh", x, min_val, max_val)
    return TensorType(x.dtype, x.shape)


def _clamp(x, lo, hi):
    if x.dtype.kind == "f":
        lo, hi = _c(x, lo), _c(x, hi)
    else:  # an int tensor's bounds are cast to its dtype, as torch does
        lo, hi = x.dtype.type(int(lo)), x.dtype.type(int(hi))
    return np.minimum(np.maximum(x, lo), hi)


def _hardtanh_vjp(ctx, g):
    x = ctx.inputs[0]
    lo, hi = ctx.params.get("min_val", 0.0), ctx.params.get("max_val", 6.0)
    return (g * ((x > lo) & (x < hi)),)


def _bounded_samples(lo, hi):
    def samples(rng):
        x = rng.uniform(lo - 2, hi + 2, (3, 6))
        x = np.where((np.abs(x - lo) < 0.1) | (np.abs(x - hi) < 0.1), x + 0.25, x)
        yield Sample(args=(x,))
        yield Sample(args=(np.array([lo - 1.0, lo, (lo + hi) / 2, hi, hi + 1.0, np.nan]),),
                     grad=False, name="bounds")
        yield Sample(args=(np.array([-7, 0, 1, 3, 9], dtype=np.int64),), grad=False, name="int")
    return samples


def _hardtanh_samples(rng):
    yield from _bounded_samples(-1.0, 1.0)(rng)
    x = rng.uniform(-3, 3, (2, 5))
    x = np.where((np.abs(x + 0.5) < 0.1) | (np.abs(x - 2.0) < 0.1), x + 0.25, x)
    yield Sample(args=(x,), params={"min_val": -0.5, "max_val": 2.0}, name="bounds_params")


hardtanh = OpDef(
    name="hardtanh", inputs=("x",),
    params={"min_val": Param(kind="float", default=-1.0),
            "max_val": Param(kind="float", default=1.0)},
    kernel=lambda x, min_val=-1.0, max_val=1.0: _clamp(x, min_val, max_val),
    infer=_hardtanh_infer, vjp=_hardtanh_vjp, samples=_hardtanh_samples, methods=("hardtanh",),
    traits=_pointwise("np.minimum(np.maximum(x, min_val), max_val)"),
    doc="x clamped to [min_val, max_val] (torch.nn.functional.hardtanh; NaN stays NaN, ints keep "
        "their dtype); the gradient passes strictly inside.",
)


def _relu6_infer(x):
    _hardtanh_check("relu6", x, 0.0, 6.0)
    return TensorType(x.dtype, x.shape)


relu6 = OpDef(
    name="relu6", inputs=("x",), kernel=lambda x: _clamp(x, 0.0, 6.0), infer=_relu6_infer,
    vjp=_hardtanh_vjp, samples=_bounded_samples(0.0, 6.0), methods=("relu6",),
    traits=_pointwise("np.minimum(np.maximum(x, 0), 6.0)"),
    doc="min(max(x, 0), 6) (torch.nn.functional.relu6, hardtanh(x, 0, 6)).",
)


# -- prelu ----------------------------------------------------------------------------------------
def _channels(x):
    return x.shape[1] if len(x.shape) >= 2 else 1


def _prelu_infer(x, weight):
    dtype = float_dtype("prelu", x)
    if weight.dtype != x.dtype:
        raise OpError(f"ops.prelu: weight is {weight.dtype}, x is {x.dtype}; they must have one "
                      f"dtype (torch does not promote here)")
    if len(weight.shape) > 1:
        raise OpError(f"ops.prelu: weight must be a scalar or 1-D, got shape "
                      f"{list(weight.shape)}")
    n = weight.shape[0] if weight.shape else 1
    if not (same_dim(n, 1) or same_dim(n, _channels(x))):
        raise OpError(f"ops.prelu: weight has {n} values; x (shape {list(x.shape)}) has "
                      f"{_channels(x)} channels on axis 1: give 1 or {_channels(x)}")
    return TensorType(dtype, x.shape)


def _as_channels(w, x):
    """weight shaped to broadcast along x's axis 1."""
    w = w.reshape(-1)
    if x.ndim >= 2 and w.size != 1:
        return w.reshape((-1,) + (1,) * (x.ndim - 2))
    return w.reshape(()) if w.size == 1 else w


def _prelu(x, weight):
    w = _as_channels(weight, x)
    return np.where(x > 0, x, w * x).astype(x.dtype, copy=False)


def _prelu_vjp(ctx, g):
    x, weight = ctx.inputs
    w = _as_channels(weight, x)
    need = ctx.needs_grad or (True, True)
    gx = np.where(x > 0, g, w * g) if need[0] else None
    gw = None
    if need[1]:
        contrib = np.where(x > 0, 0.0, x * g)
        if weight.size == 1 or x.ndim < 2:
            gw = np.asarray(contrib.sum()).reshape(weight.shape)
        else:
            axes = tuple(a for a in range(x.ndim) if a != 1)
            gw = contrib.sum(axis=axes).reshape(weight.shape)
    return gx, gw


def _prelu_samples(rng):
    yield Sample(args=(_away_from_zero(rng, (2, 3, 4, 4)), rng.uniform(0.05, 0.5, 3)),
                 name="channels")
    yield Sample(args=(_away_from_zero(rng, (4, 3)), np.array([0.25])), name="shared")
    yield Sample(args=(_away_from_zero(rng, (5,)), np.array(0.1)), name="scalar_weight")
    yield Sample(args=(_away_from_zero(rng, (2, 3, 5)), rng.uniform(0.05, 0.5, 3)),
                 name="sequence")


prelu = OpDef(
    name="prelu", inputs=("x", "weight"), kernel=_prelu, infer=_prelu_infer, vjp=_prelu_vjp,
    samples=_prelu_samples, methods=("prelu",),
    traits=OpTraits(batch=lambda params, types: "rows" if len(types[0].shape) >= 1 else None),
    doc="x where x > 0, else weight * x, weight holding one value or one per channel (axis 1 "
        "of x), as torch.nn.functional.prelu.",
)


# -- glu ------------------------------------------------------------------------------------------
def _glu_infer(x, axis=-1):
    float_dtype("glu", x)
    if not x.shape:
        raise OpError("ops.glu: x must have at least one axis, got a scalar")
    a = normalize_axis(axis, len(x.shape), op="ops.glu")
    n = x.shape[a]
    if isinstance(n, int) and n % 2:
        raise OpError(f"ops.glu: axis {axis} has size {n}; glu halves it, so it must be even")
    shape = list(x.shape)
    shape[a] = n // 2
    return TensorType(x.dtype, tuple(shape))


def _glu(x, axis=-1):
    a, b = np.split(x, 2, axis=normalize_axis(axis, x.ndim))
    return a * _sigmoid(b)


def _glu_vjp(ctx, g):
    x = ctx.inputs[0]
    axis = normalize_axis(ctx.params["axis"], x.ndim)
    a, b = np.split(x, 2, axis=axis)
    s = _sigmoid(b)
    return (np.concatenate([g * s, g * a * s * (1.0 - s)], axis=axis),)


def _glu_samples(rng):
    yield Sample(args=(rng.standard_normal((3, 6)) * 2,), name="last")
    yield Sample(args=(rng.standard_normal((2, 4, 3)),), params={"axis": 1}, name="axis1")
    yield Sample(args=(rng.standard_normal((4, 3)),), params={"axis": 0}, name="axis0")


glu = OpDef(
    name="glu", inputs=("x",), params={"axis": Param(kind="axis", default=-1)},
    kernel=_glu, infer=_glu_infer, vjp=_glu_vjp, samples=_glu_samples, methods=("glu",),
    traits=OpTraits(batch=along_axis),
    doc="a * sigmoid(b), a and b the first and second halves of x along axis "
        "(torch.nn.functional.glu; dim=-1 by default).",
)

OPS = (softplus, silu, mish, log_sigmoid, softsign, elu, selu, leaky_relu, hardtanh, relu6,
       prelu, glu)
