"""Unary math and rounding as PyTorch has them: sin, cos, tan, atan, asin, acos, log1p, expm1,
rsqrt, atan2 (int and bool inputs give f32, as torch.sin on an int tensor), and floor, ceil,
round, sign (an int input keeps its dtype; torch refuses bools there except for sign). ``round``
is half to even, with torch's ``decimals``; ``sign`` is 0 at NaN and at -0.0, as torch.sign. The
rounding ops have zero gradients (piecewise constant), as in PyTorch."""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import DType, OpError, TensorType, binary_infer, common, float_infer, float_of
from .elementwise import _float_in, _need, _randn, pointwise


def _unary(name, kernel, vjp, samples, formula, doc, infer=float_infer, methods=()):
    return OpDef(name=name, inputs=("x",), kernel=kernel, infer=infer, vjp=vjp, samples=samples,
                 methods=(name, *methods), traits=pointwise(formula), doc=doc)


def _int_sample(values=(0, 1, 2)):
    return Sample(args=(np.array(values, dtype=np.int64),), grad=False, name="int")


def _smooth(rng):
    yield Sample(args=(_randn(rng, 3, 4),))
    yield Sample(args=(np.array(0.7),), name="scalar")
    yield _int_sample()
    yield Sample(args=(np.array([True, False]),), grad=False, name="bool")


def _tan_samples(rng):
    yield Sample(args=(rng.uniform(-1.2, 1.2, (3, 4)),))  # away from the poles at +-pi/2
    yield _int_sample((0, 1, -1))


def _above_minus_one(rng):
    yield Sample(args=(rng.uniform(-0.9, 3.0, (3, 4)),))
    yield Sample(args=(np.array([1e-10, -1e-12, 0.0]),), name="tiny")  # where log(1 + x) fails
    yield _int_sample()


def _positive(rng):
    yield Sample(args=(np.abs(_randn(rng, 3, 4)) + 0.3,))
    yield _int_sample((1, 4, 9))


sin = _unary("sin", lambda x: np.sin(_float_in(x)), lambda ctx, g: (g * np.cos(ctx.inputs[0]),),
             _smooth, "np.sin(x)", "Sine (int and bool inputs give f32).")
cos = _unary("cos", lambda x: np.cos(_float_in(x)), lambda ctx, g: (-g * np.sin(ctx.inputs[0]),),
             _smooth, "np.cos(x)", "Cosine (int and bool inputs give f32).")
tan = _unary("tan", lambda x: np.tan(_float_in(x)),
             lambda ctx, g: (g * (1.0 + ctx.outputs[0] * ctx.outputs[0]),),
             _tan_samples, "np.tan(x)", "Tangent (int and bool inputs give f32).")
log1p = _unary("log1p", lambda x: np.log1p(_float_in(x)),
               lambda ctx, g: (g / (1.0 + ctx.inputs[0]),), _above_minus_one, "np.log1p(x)",
               "log(1 + x), accurate for small x (int inputs give f32).")
expm1 = _unary("expm1", lambda x: np.expm1(_float_in(x)),
               lambda ctx, g: (g * (ctx.outputs[0] + 1.0),),
               lambda rng: [*_smooth(rng), Sample(args=(np.array([1e-10, -1e-12]),),
                                                  name="tiny")],
               "np.expm1(x)", "exp(x) - 1, accurate for small x (int inputs give f32).")

atan = _unary("atan", lambda x: np.arctan(_float_in(x)),
              lambda ctx, g: (g / (1.0 + ctx.inputs[0] * ctx.inputs[0]),), _smooth,
              "np.arctan(x)", methods=("arctan",),
              doc="Arctangent in (-pi/2, pi/2) (int and bool inputs give f32).")


def _unit_interval(rng):
    yield Sample(args=(rng.uniform(-0.9, 0.9, (3, 4)),))
    yield Sample(args=(np.array([-1.0, 0.0, 1.0]),), grad=False, name="ends")
    yield _int_sample((0, 1, -1))


asin = _unary("asin", lambda x: np.arcsin(_float_in(x)),
              lambda ctx, g: (g / np.sqrt(1.0 - ctx.inputs[0] * ctx.inputs[0]),),
              _unit_interval, "np.arcsin(x)", methods=("arcsin",),
              doc="Arcsine (int and bool inputs give f32).")
acos = _unary("acos", lambda x: np.arccos(_float_in(x)),
              lambda ctx, g: (-g / np.sqrt(1.0 - ctx.inputs[0] * ctx.inputs[0]),),
              _unit_interval, "np.arccos(x)", methods=("arccos",),
              doc="Arccosine (int and bool inputs give f32).")


def _rsqrt(x):
    x = _float_in(x)
    return np.reciprocal(np.sqrt(x))


rsqrt = _unary("rsqrt", _rsqrt, lambda ctx, g: (-0.5 * g * ctx.outputs[0] ** 3,), _positive,
               "np.reciprocal(np.sqrt(x))", "1 / sqrt(x) (int inputs give f32).")


# -- atan2 ----------------------------------------------------------------------------------------
def _atan2_infer(a, b):
    t = binary_infer("atan2")(a, b)
    return TensorType(float_of(t.dtype), t.shape)


def _atan2(a, b):
    dt = float_of(DType.from_numpy(common(a, b))).numpy
    return np.arctan2(a.astype(dt, copy=False), b.astype(dt, copy=False))


def _atan2_vjp(ctx, g):
    a, b = ctx.inputs
    r2 = a * a + b * b
    return (g * b / r2 if _need(ctx, 0) else None, -g * a / r2 if _need(ctx, 1) else None)


def _atan2_samples(rng):
    yield Sample(args=(_randn(rng, 3, 4), _randn(rng, 3, 4)), name="same")
    yield Sample(args=(_randn(rng, 2, 3), np.abs(_randn(rng, 3)) + 0.2), name="broadcast")
    # every quadrant and the axes (b == 0, a == 0)
    yield Sample(args=(np.array([1.0, 1.0, -1.0, -1.0, 2.0, -2.0, 0.0, 0.0]),
                       np.array([1.0, -1.0, 1.0, -1.0, 0.0, 0.0, 3.0, -3.0])),
                 grad=False, name="quadrants")
    yield Sample(args=(np.array([1, -2], dtype=np.int64), np.array([3, 0], dtype=np.int64)),
                 grad=False, name="int")


atan2 = OpDef(
    name="atan2", inputs=("a", "b"), kernel=_atan2, infer=_atan2_infer, vjp=_atan2_vjp,
    samples=_atan2_samples, methods=("atan2", "arctan2"), traits=pointwise("np.arctan2(a, b)"),
    doc="The angle of the point (b, a) in (-pi, pi], as torch.atan2(input=a, other=b); int "
        "inputs give f32.",
)


# -- rounding -------------------------------------------------------------------------------------
def _rounding_infer(op, allow_bool=False):
    def infer(x, **params):
        if x.dtype == DType.BOOL and not allow_bool:
            raise OpError(f"ops.{op}: x is a bool tensor; {op} takes numbers (cast it first)")
        return TensorType(x.dtype, x.shape)
    return infer


def _zero_grad(ctx, g):
    return (np.zeros_like(g),)


def _rounding_samples(rng):
    # away from the integers, where finite differences would cross a step
    x = rng.uniform(-4, 4, (3, 5))
    x = np.where(np.abs(x - np.round(x)) < 0.1, x + 0.3, x)
    yield Sample(args=(x,))
    yield Sample(args=(np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.2, 3.7]),), grad=False,
                 name="halves")
    yield Sample(args=(np.array([3, -4, 0], dtype=np.int32),), grad=False, name="int")


def _keep_int(fn):
    def kernel(x):
        return fn(x) if x.dtype.kind == "f" else x.copy()
    return kernel


floor = _unary("floor", _keep_int(np.floor), _zero_grad, _rounding_samples, "np.floor(x)",
               "The largest integer <= x (an int tensor is returned as it is); zero gradient.",
               infer=_rounding_infer("floor"))
ceil = _unary("ceil", _keep_int(np.ceil), _zero_grad, _rounding_samples, "np.ceil(x)",
              "The smallest integer >= x (an int tensor is returned as it is); zero gradient.",
              infer=_rounding_infer("ceil"))


def _round(x, decimals=0):
    if x.dtype.kind != "f":
        if decimals:
            raise OpError(f"ops.round: decimals={decimals} needs a float tensor, got {x.dtype}")
        return x.copy()
    if decimals == 0:
        return np.rint(x)
    if decimals > 0:
        scale = x.dtype.type(10.0 ** decimals)
        return np.rint(x * scale) / scale
    scale = x.dtype.type(10.0 ** -decimals)
    return np.rint(x / scale) * scale


def _round_infer(x, decimals=0):
    t = _rounding_infer("round")(x)
    if decimals and not x.dtype.is_float:
        raise OpError(f"ops.round: decimals={decimals} needs a float tensor, got {x}")
    return t


def _round_formula(params):
    d = params.get("decimals", 0)
    if not isinstance(d, int):
        return None
    if d == 0:
        return "np.rint(x)"
    if d > 0:
        return f"np.rint(x * {10.0 ** d!r}) / {10.0 ** d!r}"
    return f"np.rint(x / {10.0 ** -d!r}) * {10.0 ** -d!r}"


def _round_samples(rng):
    yield from _rounding_samples(rng)
    yield Sample(args=(np.array([0.125, 2.675, -1.005, 3.14159]),), params={"decimals": 2},
                 grad=False, name="decimals")
    yield Sample(args=(np.array([1234.5, -1250.0, 49.0]),), params={"decimals": -2},
                 grad=False, name="negative_decimals")


round = OpDef(  # noqa: A001 - the op is called round
    name="round", inputs=("x",), params={"decimals": Param(kind="int", default=0,
                                                           doc="digits after the point")},
    kernel=_round, infer=_round_infer, vjp=_zero_grad, samples=_round_samples,
    methods=("round",), traits=pointwise(_round_formula),
    doc="x rounded half to even (0.5 -> 0, 1.5 -> 2, as torch.round), to ``decimals`` digits "
        "(negative: tens, hundreds...); an int tensor is returned as it is; zero gradient.",
)


def _sign(x):
    if x.dtype.kind == "b":
        return x.copy()
    if x.dtype.kind != "f":
        return np.sign(x)
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)  # 0 at NaN and +0 at -0.0


def _sign_samples(rng):
    yield Sample(args=(np.where(np.abs(x := _randn(rng, 3, 4)) < 0.1, 0.5, x),))
    yield Sample(args=(np.array([-2.0, -0.0, 0.0, 3.0, np.nan, -np.inf]),), grad=False,
                 name="special")
    yield Sample(args=(np.array([-5, 0, 7], dtype=np.int64),), grad=False, name="int")
    yield Sample(args=(np.array([True, False]),), grad=False, name="bool")


sign = _unary("sign", _sign, _zero_grad, _sign_samples,
              "np.where(x > 0, 1.0, 0.0) - np.where(x < 0, 1.0, 0.0)",
              "-1, 0 or 1 by the sign of x; 0 at NaN (as torch.sign); bool stays bool; zero "
              "gradient.", infer=_rounding_infer("sign", allow_bool=True))

OPS = (sin, cos, tan, atan, asin, acos, log1p, expm1, rsqrt, atan2, floor, ceil, round, sign)
