"""``swish(x, beta=1.0) = x * sigmoid(beta * x)`` (SiLU when beta is 1)."""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.registry import OpDef, OpTraits, Param, Pointwise, Sample


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # stable for large |z|


def kernel(x, beta):
    # float16 is computed in float32 and rounded once (a float16 sigmoid then a float16 product
    # rounds twice, 2 ulp from ONNX's SwiGLU reference)
    w = x.astype(np.float32) if x.dtype == np.float16 else x
    return (w * _sigmoid(beta * w)).astype(x.dtype, copy=False)


def vjp(ctx, grad):
    (x,) = ctx.inputs
    beta = ctx.params["beta"]
    s = _sigmoid(beta * x)
    return (grad * (s + beta * x * s * (1.0 - s)),)


def infer(x, beta):
    if not x.dtype.is_float:
        raise ValueError(f"swish needs a float tensor, got {x.dtype}")
    return TensorType(x.dtype, x.shape)


def samples(rng):
    yield Sample(args=(rng.standard_normal((3, 4)),), name="silu")
    yield Sample(args=(rng.standard_normal((2, 5)) * 3,), params={"beta": 1.7}, name="beta")


SWISH = OpDef(name="swish", inputs=("x",), params={"beta": Param(kind="float", default=1.0)},
              kernel=kernel, infer=infer, vjp=vjp, samples=samples, methods=("swish",),
              torch=None,   # F.silu is swish with beta 1; torch has no beta
              # the kernel's formula: passes fuse it into pointwise chains and the compiled
              # backend runs it natively (EfficientNet's SiLU arrives here through fold_swish)
              # and a GEMM or convolution may apply it to its results (epilogue)
              traits=OpTraits(pointwise=Pointwise(
                  formula="x * (0.5 * np.tanh(0.5 * (beta * x)) + 0.5)"),
                  epilogue=lambda p: ("swish", p["beta"])),
              doc="x * sigmoid(beta * x)")
