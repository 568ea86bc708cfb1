"""linear(x, weight, bias=None): y = x @ weight.T + bias (weight is out x in, any leading dims)."""
from __future__ import annotations

import math

import numpy as np

from onemodel.core import TensorType
from onemodel.registry import OpDef, OpTraits, Sample

from ._common import as_dtype, check_dim, float_dtype, result_dtype
from .costs import linear_cost


def _infer(x: TensorType, weight: TensorType, bias: TensorType | None) -> TensorType:
    dtype = float_dtype("linear", x, weight, bias)
    if x.ndim < 1 or weight.ndim != 2:
        raise ValueError(f"expects x with at least 1 axis and a 2-d weight (out x in), got x {x}, "
                         f"weight {weight}")
    check_dim("linear", f"the last axis of x {x}", x.shape[-1], weight.shape[1])
    if bias is not None:
        if bias.ndim != 1:
            raise ValueError(f"bias must be 1-d (out,), got {bias}")
        check_dim("linear", f"the size of bias {bias}", bias.shape[0], weight.shape[0])
    return TensorType(dtype, x.shape[:-1] + (weight.shape[0],))


def _rows(a: np.ndarray) -> np.ndarray:
    """``a`` as a matrix of its last axis (``reshape(-1, n)`` fails on an empty ``a``)."""
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def _kernel(x, weight, bias):
    dt = result_dtype(x, weight, bias)
    x, weight = as_dtype(x, dt), as_dtype(weight, dt)
    lead = x.shape[:-1]
    y = np.matmul(_rows(x), weight.T)
    if bias is not None:
        y += as_dtype(bias, dt)
    return y.reshape(lead + (weight.shape[0],))


def _vjp(ctx, g):
    x, weight, bias = ctx.inputs
    need_x, need_w, need_b = ctx.needs_grad
    dt = g.dtype
    g2 = _rows(g)
    gx = gw = gb = None
    if need_x:
        gx = np.matmul(g2, as_dtype(weight, dt)).reshape(x.shape)
    if need_w:
        gw = np.matmul(g2.T, _rows(as_dtype(x, dt)))
    if need_b and bias is not None:
        gb = g2.sum(axis=0)
    return gx, gw, gb


def _samples(rng):
    yield Sample(args=(rng.standard_normal((3, 4)), rng.standard_normal((5, 4)),
                       rng.standard_normal(5)), name="2d")
    yield Sample(args=(rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4)), None),
                 name="3d_nobias")
    yield Sample(args=(rng.standard_normal(4), rng.standard_normal((3, 4)),
                       rng.standard_normal(3)), name="1d")


linear = OpDef(
    name="linear", inputs=("x", "weight", "bias?"), kernel=_kernel, infer=_infer, vjp=_vjp,
    samples=_samples, traits=OpTraits(batch="rows", cost=linear_cost),
    doc="y = x @ weight.T + bias; weight is (out, in), x has any leading axes (torch.nn.functional"
        ".linear).",
)

OPS = (linear,)
