"""triu and tril (torch.triu / torch.tril, ONNX Trilu): the upper or lower triangle of the last
two axes, the rest zero. Here for attention masks: ``triu(full((t, t), -inf), 1)`` is how PyTorch
code and exporters build a causal mask over a symbolic sequence length."""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.errors import OpError
from onemodel.registry import OpDef, Param, Sample


def _infer(op):
    def infer(x, diagonal):
        if x.ndim < 2:
            raise OpError(f"ops.{op}: x must have at least 2 axes, got {x}")
        return TensorType(x.dtype, x.shape)
    return infer


def _kernel(upper):
    fn = np.triu if upper else np.tril

    def kernel(x, diagonal):
        return fn(x, int(diagonal))
    return kernel


def _vjp(upper):
    fn = np.triu if upper else np.tril

    def vjp(ctx, g):
        return (fn(g, int(ctx.params["diagonal"])),)
    return vjp


def _samples(rng):
    yield Sample(args=(rng.standard_normal((4, 5)),), name="default")
    yield Sample(args=(rng.standard_normal((2, 3, 3)),), params={"diagonal": 1}, name="batched")
    yield Sample(args=(rng.standard_normal((3, 6)),), params={"diagonal": -2}, name="below")
    yield Sample(args=(rng.integers(-5, 5, (4, 4)),), params={"diagonal": 1}, grad=False,
                 name="ints")


def _op(name, upper):
    return OpDef(
        name=name, inputs=("x",), params={"diagonal": Param(kind="int", default=0)},
        kernel=_kernel(upper), infer=_infer(name), vjp=_vjp(upper), samples=_samples,
        methods=(name,),
        doc=f"The {'upper' if upper else 'lower'} triangle of the last two axes from "
            f"``diagonal`` (torch.{name}); the other elements are zero.",
    )


OPS = (_op("triu", True), _op("tril", False))
