"""More factories, as PyTorch names them: ones_like, full_like and linspace."""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import DType, OpError, TensorType
from .factory import _zero_grad


def _like_infer(x, value=None, dtype=None):
    return TensorType(dtype or x.dtype, x.shape)


ones_like = OpDef(
    name="ones_like", inputs=("x",),
    params={"dtype": Param(kind="dtype", default=None, optional=True, doc="default: x's")},
    kernel=lambda x, dtype=None: np.ones(x.shape, dtype=(dtype.numpy if dtype else x.dtype)),
    infer=lambda x, dtype=None: _like_infer(x, dtype=dtype), vjp=_zero_grad,
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),)),
                         Sample(args=(np.array([1, 2], dtype=np.int32),), params={"dtype": "f32"},
                                name="dtype")],
    doc="Ones of x's shape and dtype (or dtype) (torch.ones_like); the gradient wrt x is 0.",
)

full_like = OpDef(
    name="full_like", inputs=("x",),
    params={"value": Param(kind="scalar"),
            "dtype": Param(kind="dtype", default=None, optional=True, doc="default: x's")},
    kernel=lambda x, value, dtype=None: np.full(x.shape, value,
                                                dtype=(dtype.numpy if dtype else x.dtype)),
    infer=_like_infer, vjp=_zero_grad,
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),), params={"value": -2.5}),
                         Sample(args=(np.array([[True, False]]),),
                                params={"value": 3, "dtype": "i64"}, name="dtype")],
    doc="x's shape filled with value, in x's dtype (or dtype) (torch.full_like); the gradient "
        "wrt x is 0.",
)


def _linspace_infer(start, end, steps, dtype=None):
    if steps < 0:
        raise OpError(f"ops.linspace: parameter 'steps' must be non-negative, got {steps}")
    return TensorType(dtype or DType.F32, (steps,))


def _linspace(start, end, steps, dtype=None):
    _linspace_infer(start, end, steps, dtype)
    return np.linspace(start, end, steps, dtype=np.float64).astype((dtype or DType.F32).numpy)


linspace = OpDef(
    name="linspace", inputs=(),
    params={"start": Param(kind="scalar"), "end": Param(kind="scalar"),
            "steps": Param(kind="int"),
            "dtype": Param(kind="dtype", default=None, optional=True, doc="default: f32")},
    kernel=_linspace, infer=_linspace_infer, vjp=None,
    samples=lambda rng: [Sample(args=(), params={"start": 0, "end": 1, "steps": 5}),
                         Sample(args=(), params={"start": 3.0, "end": -2.0, "steps": 4,
                                                 "dtype": "f64"}, name="down"),
                         Sample(args=(), params={"start": 2, "end": 2, "steps": 1},
                                name="one")],
    doc="steps evenly spaced values from start to end, both included (torch.linspace; f32 by "
        "default). No inputs, so no gradient.",
)

OPS = (ones_like, full_like, linspace)
