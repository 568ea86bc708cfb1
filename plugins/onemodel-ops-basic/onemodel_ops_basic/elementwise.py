"""Broadcasting elementwise ops: arithmetic, unary math, selection and comparisons, one record
each. Binary ops follow PyTorch promotion (``i64 + f32 -> f32``; Python scalars are weak and take
the tensor's dtype); ``div`` is true division (ints give f32)."""
from __future__ import annotations

import math

import numpy as np

from onemodel.core.special import erf as _erf_np
from onemodel.registry import OpCost, OpDef, OpTraits, Param, Pointwise, Sample

from ._common import (DType, OpError, TensorType, binary_infer, broadcast_shapes, cast_to,
                      common, float_infer, float_of, promote_types, same_infer)

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def pointwise(formula, neutral=None) -> OpTraits:
    """Traits of a pointwise op with ``formula`` (see `onemodel.registry.Pointwise`)."""
    return OpTraits(pointwise=Pointwise(formula=formula, neutral=neutral or {}))


def _need(ctx, i: int) -> bool:
    return bool(ctx.needs_grad[i]) if ctx.needs_grad else True


def _randn(rng, *shape):
    return rng.standard_normal(shape)


def _away_from_zero(rng, *shape, margin=0.2):
    x = rng.standard_normal(shape)
    return np.where(x >= 0, x + margin, x - margin)


def _binary_samples(rng, positive_b=False):
    def b(*shape):
        x = rng.standard_normal(shape)
        return np.abs(x) + 0.5 if positive_b else x
    yield Sample(args=(_randn(rng, 3, 4), b(3, 4)), name="same")
    yield Sample(args=(_randn(rng, 2, 3, 4), b(4)), name="broadcast")
    yield Sample(args=(_randn(rng, 3, 1), b(1, 4)), name="outer")


# -- arithmetic ------------------------------------------------------------------------------------
def _add(a, b):
    return np.add(a, b, dtype=common(a, b))


def _add_vjp(ctx, g):
    return (g if _need(ctx, 0) else None, g if _need(ctx, 1) else None)


add = OpDef(
    name="add", inputs=("a", "b"), kernel=_add, infer=binary_infer("add"), vjp=_add_vjp,
    samples=_binary_samples,
    methods=("add", "__add__"), reflected=("__radd__",), inplace=("add_",),
    traits=pointwise("a + b", neutral={0: 0.0, 1: 0.0}),
    doc="a + b with broadcasting and PyTorch type promotion.",
)


def _sub_infer(a, b):
    if a.dtype == DType.BOOL and b.dtype == DType.BOOL:
        raise OpError("ops.sub: subtracting two bool tensors is not supported; use a logical op")
    return binary_infer("sub")(a, b)


def _sub(a, b):
    return np.subtract(a, b, dtype=common(a, b))


sub = OpDef(
    name="sub", inputs=("a", "b"), kernel=_sub, infer=_sub_infer,
    vjp=lambda ctx, g: (g if _need(ctx, 0) else None, np.negative(g) if _need(ctx, 1) else None),
    samples=_binary_samples,
    methods=("sub", "__sub__"), reflected=("__rsub__",), inplace=("sub_",),
    traits=pointwise("a - b", neutral={1: 0.0}),
    doc="a - b with broadcasting.",
)


def _mul(a, b):
    return np.multiply(a, b, dtype=common(a, b))


mul = OpDef(
    name="mul", inputs=("a", "b"), kernel=_mul, infer=binary_infer("mul"),
    vjp=lambda ctx, g: (g * ctx.inputs[1] if _need(ctx, 0) else None,
                        g * ctx.inputs[0] if _need(ctx, 1) else None),
    samples=_binary_samples,
    methods=("mul", "__mul__"), reflected=("__rmul__",), inplace=("mul_",),
    traits=pointwise("a * b", neutral={0: 1.0, 1: 1.0}),
    doc="a * b with broadcasting.",
)


def _div_dtype(a, b):
    return float_of(promote_types(a, b))


def _div_infer(a, b):
    t = binary_infer("div")(a, b)
    return TensorType(_div_dtype(a.dtype, b.dtype), t.shape)


def _div(a, b):
    dt = _div_dtype(DType.from_numpy(a.dtype), DType.from_numpy(b.dtype)).numpy
    return np.true_divide(a, b, dtype=dt)


def _div_vjp(ctx, g):
    a, b = ctx.inputs
    ga = g / b if _need(ctx, 0) else None
    gb = -g * ctx.outputs[0] / b if _need(ctx, 1) else None
    return ga, gb


def _div_samples(rng):
    yield from _binary_samples(rng, positive_b=True)
    yield Sample(args=(np.array([[7, -7, 3]], dtype=np.int64), np.array([2, 2, -4], dtype=np.int64)),
                 grad=False, name="int_true_division")


div = OpDef(
    name="div", inputs=("a", "b"), kernel=_div, infer=_div_infer, vjp=_div_vjp,
    samples=_div_samples,
    methods=("div", "__truediv__"), reflected=("__rtruediv__",),
    traits=pointwise("a / b", neutral={1: 1.0}),
    doc="a / b, true division with broadcasting (integer inputs give f32, as in PyTorch).",
)


def _neg(x):
    return np.negative(x)


def _neg_infer(x):
    if x.dtype == DType.BOOL:
        raise OpError("ops.neg: negating a bool tensor is not supported; use a logical not")
    return TensorType(x.dtype, x.shape)


neg = OpDef(
    name="neg", inputs=("x",), kernel=_neg, infer=_neg_infer,
    vjp=lambda ctx, g: (np.negative(g),),
    samples=lambda rng: [Sample(args=(_randn(rng, 3, 4),)),
                         Sample(args=(np.array([1, -2, 3], dtype=np.int32),), name="int")],
    methods=("neg", "__neg__"), doc="-x.", traits=pointwise("-x"),
)


def _pow(a, b):
    return np.power(a, b, dtype=common(a, b))


def _pow_vjp(ctx, g):
    a, b = ctx.inputs
    out = ctx.outputs[0]
    ga = gb = None
    if _need(ctx, 0):
        ga = g * b * np.power(a, b - 1)
    if _need(ctx, 1):
        # d(a**b)/db = a**b * log(a); 0 where a == 0 (PyTorch's convention), nan for a < 0
        with np.errstate(divide="ignore", invalid="ignore"):
            log_a = np.log(np.where(a == 0, 1, a))
        gb = g * out * log_a
    return ga, gb


def _pow_samples(rng):
    yield Sample(args=(np.abs(_randn(rng, 3, 4)) + 0.5, _randn(rng, 3, 4)), name="same")
    yield Sample(args=(_randn(rng, 2, 3), np.array(2, dtype=np.int64)), name="square")
    yield Sample(args=(np.abs(_randn(rng, 3, 1)) + 0.5, _randn(rng, 1, 4)), name="broadcast")
    yield Sample(args=(np.array([1, 2, 3], dtype=np.int64), np.array(3, dtype=np.int64)),
                 grad=False, name="int")


pow = OpDef(  # noqa: A001 - the op is called pow
    name="pow", inputs=("a", "b"), kernel=_pow, infer=binary_infer("pow"), vjp=_pow_vjp,
    samples=_pow_samples,
    methods=("pow", "__pow__"), reflected=("__rpow__",), traits=pointwise("a ** b"),
    doc="a ** b with broadcasting. The gradient wrt b is a**b * log(a) (0 where a == 0).",
)


def _maxmin(name, ufunc, prefer, formula):
    def kernel(a, b):
        return ufunc(a, b, dtype=common(a, b))

    def vjp(ctx, g):
        a, b = ctx.inputs
        # the input that wins gets the gradient; ties split it evenly (as PyTorch)
        wa = prefer(a, b) + 0.5 * (a == b)
        ga = g * wa if _need(ctx, 0) else None
        gb = g * (1.0 - wa) if _need(ctx, 1) else None
        return ga, gb

    def samples(rng):
        yield Sample(args=(_randn(rng, 3, 4), _randn(rng, 3, 4)), name="same")
        yield Sample(args=(_randn(rng, 2, 3, 4), _randn(rng, 4)), name="broadcast")
        yield Sample(args=(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])), grad=False,
                     name="tie")

    return OpDef(
        name=name, inputs=("a", "b"), kernel=kernel, infer=binary_infer(name), vjp=vjp,
        samples=samples, methods=(name,), traits=pointwise(formula),
        doc=f"Elementwise {name} with broadcasting (NaN propagates); ties split the gradient.",
    )


maximum = _maxmin("maximum", np.maximum, lambda a, b: a > b, "np.maximum(a, b)")
minimum = _maxmin("minimum", np.minimum, lambda a, b: a < b, "np.minimum(a, b)")


# -- unary math --------------------------------------------------------------------------------------
def _float_in(x):
    return x if x.dtype.kind == "f" else x.astype(np.float32)


def _exp(x):
    return np.exp(_float_in(x))


def _log(x):
    return np.log(_float_in(x))


def _sqrt(x):
    return np.sqrt(_float_in(x))


def _tanh(x):
    return np.tanh(_float_in(x))


def _sigmoid(x):
    shape = np.shape(x)
    x = _float_in(x).reshape(-1)  # 1-D: numpy returns arrays (not scalars) for the out= steps
    e = np.abs(x)
    np.negative(e, out=e)
    np.exp(e, out=e)  # exp(-|x|) never overflows
    r = e + 1.0
    np.reciprocal(r, out=r)  # 1 / (1 + exp(-|x|)) = sigmoid(|x|)
    e *= r  # exp(-|x|) / (1 + exp(-|x|)) = sigmoid(-|x|)
    return np.where(x >= 0, r, e).reshape(shape)


def _unary(name, kernel, vjp, samples, infer=float_infer, doc="", methods=None, formula=None,
           traits=None):
    return OpDef(name=name, inputs=("x",), kernel=kernel, infer=infer, vjp=vjp, samples=samples,
                 methods=methods or (name,), doc=doc, traits=traits or pointwise(formula))


def _smooth_samples(rng):
    yield Sample(args=(_randn(rng, 3, 4),))
    yield Sample(args=(np.array(0.7),), name="scalar")


def _positive_samples(rng):
    yield Sample(args=(np.abs(_randn(rng, 3, 4)) + 0.3,))
    yield Sample(args=(np.array([1, 4, 9], dtype=np.int64),), grad=False, name="int")


exp = _unary("exp", _exp, lambda ctx, g: (g * ctx.outputs[0],),
             lambda rng: [*_smooth_samples(rng),
                          Sample(args=(np.array([0, 1, 2], dtype=np.int32),), grad=False,
                                 name="int")],
             doc="e ** x (int inputs give f32).", formula="np.exp(x)")
log = _unary("log", _log, lambda ctx, g: (g / ctx.inputs[0],), _positive_samples,
             doc="Natural logarithm (int inputs give f32).", formula="np.log(x)")
sqrt = _unary("sqrt", _sqrt, lambda ctx, g: (g / (2.0 * ctx.outputs[0]),), _positive_samples,
              doc="Square root (int inputs give f32).", formula="np.sqrt(x)")
tanh = _unary("tanh", _tanh, lambda ctx, g: (g * (1.0 - ctx.outputs[0] ** 2),), _smooth_samples,
              doc="Hyperbolic tangent.",
              traits=OpTraits(pointwise=Pointwise(formula="np.tanh(x)"), epilogue="tanh"))
sigmoid = _unary(
    "sigmoid", _sigmoid, lambda ctx, g: (g * ctx.outputs[0] * (1.0 - ctx.outputs[0]),),
    lambda rng: [*_smooth_samples(rng),
                 Sample(args=(np.array([-800.0, -30.0, 0.0, 30.0, 800.0]),), grad=False,
                        name="extreme")],
    doc="1 / (1 + exp(-x)), computed without overflow.",
    # the same function, and overflow-free as a formula
    traits=OpTraits(pointwise=Pointwise(formula="0.5 * np.tanh(0.5 * x) + 0.5"),
                    epilogue="sigmoid"))
erf = _unary(
    "erf", lambda x: _erf_np(_float_in(x)),
    lambda ctx, g: (g * _TWO_OVER_SQRT_PI * np.exp(-np.square(ctx.inputs[0])),),
    lambda rng: [*_smooth_samples(rng),
                 Sample(args=(np.array([-6.0, -1.0, 0.0, 0.3, 2.5, 6.0]),), name="range")],
    doc="The error function (W. J. Cody's rational approximations, onemodel.core.special).",
    traits=OpTraits(pointwise=Pointwise(formula="special.erf(x)"),
                    cost=lambda ins, outs, params: OpCost.passes(outs[0], 12)))


def _abs(x):
    return np.abs(x)


abs = _unary(  # noqa: A001 - the op is called abs
    "abs", _abs, lambda ctx, g: (g * np.sign(ctx.inputs[0]),),
    lambda rng: [Sample(args=(_away_from_zero(rng, 3, 4),)),
                 Sample(args=(np.array([-3, 0, 2], dtype=np.int64),), name="int")],
    infer=same_infer, methods=("abs", "__abs__"), formula="np.abs(x)",
    doc="|x|; the gradient at 0 is 0 (sign(x)).")


def _relu(x):
    return np.maximum(x, np.zeros((), x.dtype))


relu = _unary(
    "relu", _relu, lambda ctx, g: (g * (ctx.inputs[0] > 0),),
    lambda rng: [Sample(args=(_away_from_zero(rng, 3, 5),)),
                 Sample(args=(np.array([-2, 0, 3], dtype=np.int64),), name="int")],
    infer=same_infer, doc="max(x, 0); the gradient at 0 is 0.",
    traits=OpTraits(pointwise=Pointwise(formula="np.maximum(x, 0)"), epilogue="relu"))


# -- selection ---------------------------------------------------------------------------------------
def _where_infer(cond, x, y):
    if cond.dtype != DType.BOOL:
        raise OpError(f"ops.where: condition must be a bool tensor, got {cond.dtype}")
    shape = broadcast_shapes(cond.shape, x.shape, y.shape, op="ops.where")
    return TensorType(promote_types(x.dtype, y.dtype), shape)


def _where(cond, x, y):
    dt = common(x, y)
    return np.where(cond, cast_to(x, dt), cast_to(y, dt))


def _where_vjp(ctx, g):
    cond = ctx.inputs[0]
    gx = np.where(cond, g, 0) if _need(ctx, 1) else None
    gy = np.where(cond, 0, g) if _need(ctx, 2) else None
    return None, gx, gy


def _where_samples(rng):
    yield Sample(args=(rng.standard_normal((3, 4)) > 0, _randn(rng, 3, 4), _randn(rng, 3, 4)),
                 name="same")
    yield Sample(args=(rng.standard_normal((3, 1)) > 0, _randn(rng, 4), _randn(rng, 2, 1, 1)),
                 name="broadcast")
    yield Sample(args=(np.array([True, False, True]), np.array([1, 2, 3], dtype=np.int32),
                       np.array(0.5)), grad=False, name="promote")


where = OpDef(
    name="where", inputs=("condition", "x", "y"), kernel=_where, infer=_where_infer,
    vjp=_where_vjp, samples=_where_samples, traits=pointwise("np.where(condition, x, y)"),
    doc="x where condition else y, broadcasting all three (condition must be bool; no gradient).",
)


def _clip_infer(x, min=None, max=None):  # noqa: A002 - PyTorch's names
    bound_float = any(isinstance(v, float) for v in (min, max))
    dtype = x.dtype if x.dtype.is_float or not bound_float else DType.F32
    return TensorType(dtype, x.shape)


def _clip(x, min=None, max=None):  # noqa: A002
    if min is None and max is None:
        raise OpError("ops.clip: at least one of min and max must be given")
    dt = _clip_infer(TensorType(DType.from_numpy(x.dtype), x.shape), min, max).dtype.numpy
    out = cast_to(x, dt)
    if min is not None:
        out = np.maximum(out, np.asarray(min, dtype=dt))
    if max is not None:
        out = np.minimum(out, np.asarray(max, dtype=dt))
    return out if out is not x else out.copy()


def _clip_vjp(ctx, g):
    x = ctx.inputs[0]
    lo, hi = ctx.params.get("min"), ctx.params.get("max")
    mask = np.ones(x.shape, dtype=bool)
    if lo is not None:
        mask &= x >= lo
    if hi is not None:
        mask &= x <= hi
    return (g * mask,)


def _clip_formula(params):
    """clip's formula names only the bounds it has; None when it has neither."""
    lo, hi = params.get("min"), params.get("max")
    if lo is None and hi is None:
        return None
    formula = "x" if lo is None else "np.maximum(x, min)"
    return formula if hi is None else f"np.minimum({formula}, max)"


def _clip_epilogue(params):
    """clip as an epilogue: numeric bounds, at least one (a missing one is infinite)."""
    lo, hi = params.get("min"), params.get("max")
    if (lo is None and hi is None) or not all(isinstance(v, (int, float, type(None)))
                                              for v in (lo, hi)):
        return None
    return ("clip", -math.inf if lo is None else lo, math.inf if hi is None else hi)


def _clip_samples(rng):
    x = np.linspace(-2.05, 2.05, 12).reshape(3, 4)
    yield Sample(args=(x,), params={"min": -1.0, "max": 1.0}, name="both")
    yield Sample(args=(x,), params={"min": 0.5}, name="min_only")
    yield Sample(args=(x,), params={"max": -0.5}, name="max_only")


clip = OpDef(
    name="clip", inputs=("x",),
    params={"min": Param(kind="scalar", default=None, optional=True, doc="lower bound"),
            "max": Param(kind="scalar", default=None, optional=True, doc="upper bound")},
    kernel=_clip, infer=_clip_infer, vjp=_clip_vjp, samples=_clip_samples,
    methods=("clip", "clamp"),
    traits=OpTraits(pointwise=Pointwise(formula=_clip_formula), epilogue=_clip_epilogue),
    doc="min(max(x, min), max) as torch.clamp; the gradient passes where min <= x <= max.",
)


# -- comparisons -------------------------------------------------------------------------------------
def _comparison(name, ufunc, methods, symbol):
    formula = f"a {symbol} b"

    def kernel(a, b):
        dt = common(a, b)
        return ufunc(cast_to(a, dt), cast_to(b, dt))

    def samples(rng):
        a = np.round(rng.standard_normal((3, 4)), 0)
        yield Sample(args=(a, np.round(rng.standard_normal((3, 4)), 0)), name="same")
        yield Sample(args=(a, np.array([0.0, 1.0, -1.0, 0.0])), name="broadcast")
        yield Sample(args=(np.array([1, 2, 3], dtype=np.int64), np.array(2.0, dtype=np.float32)),
                     name="promote")

    return OpDef(
        name=name, inputs=("a", "b"), kernel=kernel,
        infer=binary_infer(name, result_dtype=DType.BOOL), vjp=None, samples=samples,
        methods=methods, traits=pointwise(formula),
        doc=f"a {symbol} b elementwise with broadcasting, a bool tensor. Not differentiable "
            f"(vjp=None): the result is boolean and piecewise constant in both inputs.",
    )


less = _comparison("less", np.less, ("less", "lt", "__lt__"), "<")
less_equal = _comparison("less_equal", np.less_equal, ("less_equal", "le", "__le__"), "<=")
greater = _comparison("greater", np.greater, ("greater", "gt", "__gt__"), ">")
greater_equal = _comparison("greater_equal", np.greater_equal,
                            ("greater_equal", "ge", "__ge__"), ">=")
equal = _comparison("equal", np.equal, ("eq", "__eq__"), "==")
not_equal = _comparison("not_equal", np.not_equal, ("not_equal", "ne", "__ne__"), "!=")

OPS = (add, sub, mul, div, neg, pow, exp, log, sqrt, abs, tanh, sigmoid, relu, erf, maximum,
       minimum, where, clip, less, less_equal, greater, greater_equal, equal, not_equal)
