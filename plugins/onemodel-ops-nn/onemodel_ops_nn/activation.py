"""softmax, log_softmax (max-shifted, stable at logits of +-1e4) and gelu (exact or tanh)."""
from __future__ import annotations

import math

import numpy as np

from onemodel.core import TensorType, normalize_axis
from onemodel.core.special import erf
from onemodel.registry import OpDef, OpTraits, Param, Pointwise, Sample

from ._common import float_dtype
from .costs import passes


def _axis_infer(op):
    def infer(x: TensorType, axis) -> TensorType:
        dtype = float_dtype(op, x)
        normalize_axis(axis, x.ndim, op=f"ops.{op}")
        return TensorType(dtype, x.shape)

    return infer


def softmax_array(x: np.ndarray, axis: int) -> np.ndarray:
    if x.shape[axis] == 0:  # nothing to normalise (torch gives the empty result)
        return np.empty_like(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


def log_softmax_array(x: np.ndarray, axis: int) -> np.ndarray:
    if x.shape[axis] == 0:
        return np.empty_like(x)
    shifted = x - x.max(axis=axis, keepdims=True)
    shifted -= np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return shifted


def _softmax(x, axis):
    return softmax_array(x, normalize_axis(axis, x.ndim))


def _softmax_vjp(ctx, g):
    y = ctx.outputs[0]
    axis = normalize_axis(ctx.params["axis"], y.ndim)
    gy = g * y
    return (gy - y * gy.sum(axis=axis, keepdims=True),)


def _log_softmax(x, axis):
    return log_softmax_array(x, normalize_axis(axis, x.ndim))


def _log_softmax_vjp(ctx, g):
    y = ctx.outputs[0]
    axis = normalize_axis(ctx.params["axis"], y.ndim)
    return (g - np.exp(y) * g.sum(axis=axis, keepdims=True),)


def _softmax_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 5)),), name="last")
    yield Sample(args=(r((2, 3, 4)),), params={"axis": 1}, name="axis1")
    yield Sample(args=(r(6) * 3,), params={"axis": 0}, name="1d")
    big = np.array([[1e4, -1e4, 0.0, 1e4 - 1.0], [-1e4, -1e4 + 2.0, -1e4 + 1.0, -1e4]])
    yield Sample(args=(big,), grad=False, name="huge_logits")


def along_axis(params, types):
    """Rows of axis 0 are independent unless the op works along axis 0 itself."""
    rank = len(types[0].shape)
    return "rows" if rank >= 2 and int(params.get("axis", -1)) % rank != 0 else None


softmax = OpDef(
    name="softmax", inputs=("x",), params={"axis": Param(kind="axis", default=-1)},
    kernel=_softmax, infer=_axis_infer("softmax"), vjp=_softmax_vjp, samples=_softmax_samples,
    methods=("softmax",), traits=OpTraits(batch=along_axis, cost=passes(5)),
    doc="exp(x) / sum(exp(x)) along axis, computed from x - max(x) (torch.softmax).",
)

log_softmax = OpDef(
    name="log_softmax", inputs=("x",), params={"axis": Param(kind="axis", default=-1)},
    kernel=_log_softmax, infer=_axis_infer("log_softmax"), vjp=_log_softmax_vjp,
    samples=_softmax_samples, methods=("log_softmax",),
    traits=OpTraits(batch=along_axis, cost=passes(6)),
    doc="x - logsumexp(x) along axis, computed from x - max(x) (torch.log_softmax).",
)


# -- gelu ---------------------------------------------------------------------------------------
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_C = math.sqrt(2.0 / math.pi)
_TANH_A = 0.044715


#: gelu's scalar formulas by ``approximate``, the same functions as `_gelu`
GELU_FORMULAS = {
    "none": f"0.5 * x * (1.0 + special.erf(x * {_SQRT_HALF!r}))",
    "tanh": f"0.5 * x * (1.0 + np.tanh({_TANH_C!r} * (x + {_TANH_A!r} * (x * x * x))))",
}


def _gelu_infer(x: TensorType, approximate) -> TensorType:
    return TensorType(float_dtype("gelu", x), x.shape)


def _gelu(x, approximate):
    if approximate == "tanh":
        t = np.tanh(_TANH_C * (x + _TANH_A * (x * x * x)))
        return 0.5 * x * (1.0 + t)
    return 0.5 * x * (1.0 + erf(x * _SQRT_HALF))


def _gelu_vjp(ctx, g):
    x = ctx.inputs[0]
    if ctx.params["approximate"] == "tanh":
        x2 = x * x
        t = np.tanh(_TANH_C * (x + _TANH_A * x2 * x))
        d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _TANH_C * (1.0 + 3.0 * _TANH_A * x2)
    else:
        d = 0.5 * (1.0 + erf(x * _SQRT_HALF)) + x * np.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return (g * d,)


def _gelu_samples(rng):
    yield Sample(args=(rng.standard_normal((3, 4)) * 2,), name="exact")
    yield Sample(args=(rng.standard_normal((3, 4)) * 2,), params={"approximate": "tanh"},
                 name="tanh")
    yield Sample(args=(np.array([-30.0, -6.0, 0.0, 6.0, 30.0]),), grad=False, name="tails")


gelu = OpDef(
    name="gelu", inputs=("x",),
    params={"approximate": Param(kind="str", default="none", choices=("none", "tanh"))},
    kernel=_gelu, infer=_gelu_infer, vjp=_gelu_vjp, samples=_gelu_samples,
    traits=OpTraits(pointwise=Pointwise(formula=lambda p: GELU_FORMULAS.get(
        p.get("approximate", "none"))), cost=passes(15),
        epilogue=lambda p: {"none": "gelu", "tanh": "gelu_tanh"}.get(p.get("approximate"))),
    doc="x * Phi(x) with the exact normal CDF, or PyTorch's tanh approximation "
        "(torch.nn.functional.gelu).",
)

OPS = (softmax, log_softmax, gelu)
