"""``rms_norm_last(x, weight=None, eps=1e-6)``: x / sqrt(mean(x^2 over the last axis) + eps) * weight.

OneModel's own ``rms_norm`` (PyTorch's signature, any trailing axes) lives in onemodel-ops-nn; this
example keeps the simpler form under a name of its own, so both packages install side by side.
"""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.core.types import same_dim
from onemodel.registry import OpDef, Param, Sample


def kernel(x, weight, eps):
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    y = x * r
    if weight is not None:
        y = y * weight
    return y.astype(x.dtype, copy=False)


def vjp(ctx, grad):
    x, weight = ctx.inputs
    eps = ctx.params["eps"]
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    gx = grad if weight is None else grad * weight
    dx = r * gx - x * r**3 * np.mean(gx * x, axis=-1, keepdims=True)
    dw = None
    if weight is not None:
        dw = (grad * x * r).reshape(-1, x.shape[-1]).sum(axis=0)
    return dx, dw


def infer(x, weight, eps):
    if not x.dtype.is_float:
        raise ValueError(f"rms_norm_last needs a float tensor, got {x.dtype}")
    if x.ndim < 1:
        raise ValueError("rms_norm_last needs at least one axis")
    if weight is not None and (weight.ndim != 1 or not same_dim(weight.shape[0], x.shape[-1])):
        raise ValueError(f"weight must have shape [{x.shape[-1]}], got {list(weight.shape)}")
    return TensorType(x.dtype, x.shape)


def decomposition(ops, x, weight, eps):
    """The op in basic ops, written once: ONNX export uses it below opset 23 (onnx_mapping.py),
    and any backend without a kernel for the op can expand it (onemodel.passes.decompose)."""
    mean_square = ops.mean(ops.mul(x, x), axis=-1, keepdims=True)
    y = ops.div(x, ops.sqrt(ops.add(mean_square, eps)))
    return y if weight is None else ops.mul(y, weight)


def samples(rng):
    yield Sample(args=(rng.standard_normal((3, 4)), None), name="plain")
    yield Sample(args=(rng.standard_normal((2, 3, 5)), rng.standard_normal(5)), params={"eps": 1e-5},
                 name="weight")


RMS_NORM = OpDef(name="rms_norm_last", inputs=("x", "weight?"),
                 params={"eps": Param(kind="float", default=1e-6)},
                 kernel=kernel, infer=infer, vjp=vjp, samples=samples,
                 decomposition=decomposition, methods=("rms_norm_last",),
                 torch=None,   # F.rms_norm takes normalized_shape: om.ops.rms_norm is that one
                 doc="root-mean-square normalisation over the last axis")
