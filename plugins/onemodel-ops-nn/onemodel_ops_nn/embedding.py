"""embedding(indices, weight): rows of weight picked by integer indices."""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.errors import OpError
from onemodel.registry import OpDef, Sample

from ._common import float_dtype, int_dtype


def _infer(indices: TensorType, weight: TensorType) -> TensorType:
    int_dtype("embedding", "indices", indices)
    dtype = float_dtype("embedding", weight)
    if weight.ndim != 2:
        raise ValueError(f"weight must be 2-d (num_embeddings, embedding_dim), got {weight}")
    return TensorType(dtype, indices.shape + (weight.shape[1],))


def _kernel(indices, weight):
    if indices.size:
        lo, hi = indices.min(), indices.max()
        if lo < 0 or hi >= weight.shape[0]:
            raise OpError(f"ops.embedding: index {lo if lo < 0 else hi} is out of range for "
                          f"{weight.shape[0]} embeddings")
    return weight[indices]


def _vjp(ctx, g):
    indices, weight = ctx.inputs
    if not ctx.needs_grad[1]:
        return None, None
    gw = np.zeros(weight.shape, dtype=g.dtype)
    np.add.at(gw, indices.reshape(-1), g.reshape(-1, weight.shape[1]))
    return None, gw


def _samples(rng):
    yield Sample(args=(np.array([[0, 2, 1], [2, 2, 4]], dtype=np.int64),
                       rng.standard_normal((5, 3))), name="2d_repeated")
    yield Sample(args=(np.array([3, 0], dtype=np.int32), rng.standard_normal((4, 2))),
                 name="1d_int32")
    yield Sample(args=(np.array(1, dtype=np.int64), rng.standard_normal((3, 4))), name="scalar")


embedding = OpDef(
    name="embedding", inputs=("indices", "weight"), kernel=_kernel, infer=_infer, vjp=_vjp,
    samples=_samples,
    doc="weight[indices] (torch.nn.functional.embedding): output shape indices.shape + (dim,); "
        "the gradient is scattered (summed) into the rows of weight.",
)

OPS = (embedding,)
