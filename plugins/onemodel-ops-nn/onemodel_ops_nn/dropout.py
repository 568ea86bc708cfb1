"""dropout(x, p=0.5, training=True): inverted dropout with a mask from the seeded generator."""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.core.random import generator
from onemodel.registry import OpDef, OpTraits, Param, Sample

from ._common import float_dtype


def _infer(x: TensorType, p, training) -> TensorType:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    return TensorType(float_dtype("dropout", x), x.shape)


def scaled_mask(shape, p: float, dtype) -> np.ndarray:
    """Keep each element with probability 1 - p, scaled by 1 / (1 - p); drawn as
    ``generator().random(shape, dtype=float32) >= p`` so that ``om.manual_seed`` reproduces it."""
    if p >= 1.0:
        return np.zeros(shape, dtype=dtype)
    keep = generator().random(shape, dtype=np.float32) >= np.float32(p)
    return keep.astype(dtype) * dtype.type(1.0 / (1.0 - p))


def _forward(x, p, training):
    if not training or p == 0.0:
        return x.copy(), None
    mask = scaled_mask(x.shape, p, x.dtype)
    return x * mask, mask


def _kernel(x, p, training):
    return _forward(x, p, training)[0]


def _vjp(ctx, g):
    mask = ctx.saved
    return (g if mask is None else g * mask,)


def _samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 4)),), params={"training": False}, name="eval")
    yield Sample(args=(r((3, 4)),), params={"p": 0.0}, name="p0")
    yield Sample(args=(r((3, 4)),), params={"p": 1.0}, name="p1")
    yield Sample(args=(r((4, 5)),), params={"p": 0.3}, grad=False, name="train")


dropout = OpDef(
    name="dropout", inputs=("x",),
    params={"p": Param(kind="float", default=0.5), "training": Param(kind="bool", default=True)},
    kernel=_kernel, forward=_forward, infer=_infer, vjp=_vjp, samples=_samples,
    traits=OpTraits(noop_when_same_type=lambda p: p.get("training", True) is False
                    or p.get("p", 0.5) == 0),
    untraceable=lambda params: (
        "dropout in training mode draws a random mask at every call; trace the model in eval mode "
        "(model.eval()) or with training=False" if params["training"] and params["p"] > 0
        else None),
    doc="Zero each element with probability p and scale the rest by 1/(1-p) when training "
        "(torch.nn.functional.dropout); the identity when not training or p == 0. The mask comes "
        "from the generator seeded by om.manual_seed.",
)

OPS = (dropout,)
