"""hardsigmoid and hardswish (MobileNetV3's piecewise-linear activations), PyTorch's semantics.

``hardsigmoid(x) = clip(alpha * x + beta, 0, 1)`` with PyTorch's alpha = 1/6, beta = 1/2 by default
(ONNX HardSigmoid's own defaults, 0.2 and 0.5, arrive as params); ``hardswish(x) = x *
hardsigmoid(x)``. Gradients follow PyTorch at the kinks: hardsigmoid's is alpha strictly inside
(-3, 3), hardswish's is x/3 + 1/2 on [-3, 3] (PyTorch includes both ends there).
"""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.registry import OpDef, OpTraits, Param, Pointwise, Sample

from ._common import float_dtype

SIXTH = 1.0 / 6.0


def _float_infer(op):
    def infer(x: TensorType, **params) -> TensorType:
        return TensorType(float_dtype(op, x), x.shape)

    return infer


def _hardsigmoid(x, alpha, beta):
    y = x * x.dtype.type(alpha) + x.dtype.type(beta)
    return np.clip(y, 0, 1).astype(x.dtype, copy=False)


def _hardsigmoid_vjp(ctx, g):
    x = ctx.inputs[0]
    alpha, beta = ctx.params["alpha"], ctx.params["beta"]
    y = alpha * x + beta
    return (g * np.where((y > 0) & (y < 1), alpha, 0.0),)


def _hardswish(x):
    t = x + x.dtype.type(3.0)
    np.clip(t, 0, 6, out=t)
    return x * t * x.dtype.type(SIXTH)


def _hardswish_vjp(ctx, g):
    x = ctx.inputs[0]
    d = np.where(x < -3.0, 0.0, np.where(x <= 3.0, x / 3.0 + 0.5, 1.0))
    return (g * d,)


def _samples(rng):
    # away from the kinks at -3 and 3 so central differences see one linear piece
    x = rng.uniform(-5, 5, (3, 7))
    x = np.where(np.abs(np.abs(x) - 3.0) < 0.05, x + 0.2, x)
    yield Sample(args=(x,), name="range")
    yield Sample(args=(np.array([-6.0, -3.0, -1.5, 0.0, 1.5, 3.0, 6.0]),), grad=False,
                 name="kinks")


def _hardsigmoid_samples(rng):
    yield from _samples(rng)
    x = rng.uniform(-4, 4, (2, 5))
    x = np.where(np.abs(np.abs(x) - 2.5) < 0.05, x + 0.2, x)
    yield Sample(args=(x,), params={"alpha": 0.2, "beta": 0.5}, name="onnx_defaults")


hardsigmoid = OpDef(
    name="hardsigmoid", inputs=("x",),
    params={"alpha": Param(kind="float", default=SIXTH), "beta": Param(kind="float", default=0.5)},
    kernel=_hardsigmoid, infer=_float_infer("hardsigmoid"), vjp=_hardsigmoid_vjp,
    samples=_hardsigmoid_samples, methods=("hardsigmoid",),
    traits=OpTraits(pointwise=Pointwise(formula="np.minimum(np.maximum(alpha * x + beta, 0), 1)"),
                    epilogue=lambda p: ("hardsigmoid", p["alpha"], p["beta"])),
    doc="clip(alpha * x + beta, 0, 1); alpha=1/6, beta=1/2 is torch.nn.functional.hardsigmoid.",
)

hardswish = OpDef(
    name="hardswish", inputs=("x",), kernel=_hardswish, infer=_float_infer("hardswish"),
    vjp=_hardswish_vjp, samples=_samples, methods=("hardswish",),
    traits=OpTraits(pointwise=Pointwise(
        formula="x * np.minimum(np.maximum(x + 3.0, 0), 6.0) * 0.16666666666666666"),
        epilogue="hardswish"),
    doc="x * relu6(x + 3) / 6 (torch.nn.functional.hardswish, MobileNetV3).",
)

OPS = (hardsigmoid, hardswish)
