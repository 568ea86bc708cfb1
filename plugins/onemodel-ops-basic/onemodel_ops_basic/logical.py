"""logical_and, logical_or, logical_not (any dtype, nonzero is true, a bool result, as in torch)
and isclose (torch.isclose: ``|a - b| <= atol + rtol * |b|`` where that error is finite, or
a == b; NaNs equal only with ``equal_nan``). None is differentiable (bool results)."""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import DType, OpError, TensorType, binary_infer, broadcast_shapes, common, float_of
from .elementwise import pointwise


def _logical_samples(rng):
    yield Sample(args=(rng.standard_normal((3, 4)) > 0, rng.standard_normal((3, 4)) > 0),
                 name="bools")
    yield Sample(args=(np.array([[0.0, 1.5, -2.0, np.nan]]), np.array([[3, 0, 0, 1]])),
                 name="numbers")
    yield Sample(args=(rng.standard_normal((2, 1)) > 0, np.array([0.0, 2.0, 0.0])),
                 name="broadcast")


def _binary(name, ufunc):
    return OpDef(
        name=name, inputs=("a", "b"), kernel=lambda a, b: ufunc(a, b),
        infer=binary_infer(name, result_dtype=DType.BOOL), vjp=None, samples=_logical_samples,
        methods=(name,), traits=pointwise(f"np.{name}(a, b)"),
        doc=f"Elementwise {name.split('_')[1]} of the truth of a and b (nonzero is true), a bool "
            f"tensor with broadcasting.",
    )


logical_and = _binary("logical_and", np.logical_and)
logical_or = _binary("logical_or", np.logical_or)

logical_not = OpDef(
    name="logical_not", inputs=("x",), kernel=lambda x: np.logical_not(x),
    infer=lambda x: TensorType(DType.BOOL, x.shape), vjp=None,
    samples=lambda rng: [Sample(args=(rng.standard_normal((3, 4)) > 0,), name="bools"),
                         Sample(args=(np.array([0.0, -1.0, np.nan, 2.0]),), name="floats"),
                         Sample(args=(np.array([0, 3, -1], dtype=np.int32),), name="ints")],
    methods=("logical_not",), traits=pointwise("np.logical_not(x)"),
    doc="True where x is zero (false), a bool tensor.",
)


# -- isclose --------------------------------------------------------------------------------------
def _check_tolerances(rtol, atol):
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not v >= 0:
            raise OpError(f"ops.isclose: {name} must be >= 0, got {v!r}")


def _isclose_infer(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    _check_tolerances(rtol, atol)
    return TensorType(DType.BOOL, broadcast_shapes(a.shape, b.shape, op="ops.isclose"))


def _isclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    _check_tolerances(rtol, atol)
    dt = common(a, b)
    a, b = a.astype(dt, copy=False), b.astype(dt, copy=False)
    close = a == b
    if equal_nan and dt.kind == "f":
        close |= np.isnan(a) & np.isnan(b)
    if rtol == 0 and atol == 0:
        return np.asarray(close)
    ft = float_of(DType.from_numpy(dt)).numpy  # ints compare their error in f32, as torch
    fa, fb = a.astype(ft, copy=False), b.astype(ft, copy=False)
    err = np.abs(fa - fb)
    close |= np.isfinite(err) & (err <= atol + rtol * np.abs(fb))
    return np.asarray(close)


def _isclose_formula(params):
    base = ("np.logical_or(a == b, np.logical_and(np.isfinite(a - b), "
            "np.abs(a - b) <= atol + rtol * np.abs(b)))")
    if params.get("equal_nan"):
        return f"np.logical_or({base}, np.logical_and(np.isnan(a), np.isnan(b)))"
    return base


def _isclose_samples(rng):
    a = rng.standard_normal((3, 4))
    b = a + rng.choice([0.0, 1e-9, 1e-6, 1e-4, 1e-2], size=(3, 4)) * np.abs(a)
    yield Sample(args=(a, b), name="near")
    special = np.array([np.inf, -np.inf, np.inf, np.nan, np.nan, 1.0, 1e-9, 0.0])
    other = np.array([np.inf, np.inf, 1.0, np.nan, 1.0, np.inf, 0.0, 1e-7])
    yield Sample(args=(special, other), name="special")
    yield Sample(args=(special, other), params={"equal_nan": True}, name="equal_nan")
    yield Sample(args=(a, np.round(a, 1)), params={"rtol": 0.0, "atol": 0.05}, name="atol")
    yield Sample(args=(np.array([100000, 100001, 5], dtype=np.int64),
                       np.array([100001, 100001, 6], dtype=np.int64)), name="int")


isclose = OpDef(
    name="isclose", inputs=("a", "b"),
    params={"rtol": Param(kind="float", default=1e-5, doc="relative tolerance (of |b|)"),
            "atol": Param(kind="float", default=1e-8, doc="absolute tolerance"),
            "equal_nan": Param(kind="bool", default=False, doc="NaN equals NaN")},
    kernel=_isclose, infer=_isclose_infer, vjp=None, samples=_isclose_samples,
    methods=("isclose",), traits=pointwise(_isclose_formula),
    doc="a == b, or |a - b| <= atol + rtol * |b| with a finite error (torch.isclose; the inputs "
        "are promoted to one dtype, where torch asks for one); a bool tensor.",
)

OPS = (logical_and, logical_or, logical_not, isclose)
