"""gather_nd (ONNX GatherND, TensorFlow's gather_nd): index the leading axes of x with the tuples
in the last axis of ``indices``; ``batch_dims`` leading axes are shared by x and indices. GPT-2
exported by torch.onnx's default exporter uses it to pick the last token of each sequence."""
from __future__ import annotations

import numpy as np

from onemodel.core.types import same_dim
from onemodel.registry import OpDef, Param, Sample

from ._common import Dim, OpError, TensorType


def _infer(x: TensorType, indices: TensorType, batch_dims=0) -> TensorType:
    if not indices.dtype.is_int:
        raise OpError(f"ops.gather_nd: indices must be an integer tensor, got {indices}")
    b = int(batch_dims)
    if indices.ndim < 1 or b < 0 or b >= min(x.ndim, indices.ndim):
        raise OpError(f"ops.gather_nd: batch_dims={b} must be below the ranks of x {x} and "
                      f"indices {indices}")
    k = indices.shape[-1]
    if isinstance(k, Dim) or not 1 <= b + k <= x.ndim:
        raise OpError(f"ops.gather_nd: the last axis of indices {indices} must be a fixed size "
                      f"from 1 to {x.ndim - b}")
    for i in range(b):
        if not same_dim(x.shape[i], indices.shape[i]):
            raise OpError(f"ops.gather_nd: batch axis {i} differs: x {x}, indices {indices}")
    return TensorType(x.dtype, tuple(indices.shape[:-1]) + tuple(x.shape[b + k:]))


def _where(x, indices, b):
    """Flattened (batch, index tuple) coordinates: the positions gather_nd reads."""
    k = indices.shape[-1]
    batch = int(np.prod(x.shape[:b], dtype=np.int64))
    idx = indices.reshape(batch, -1, k).astype(np.int64)
    sizes = np.array(x.shape[b:b + k], dtype=np.int64)
    if ((idx < -sizes) | (idx >= sizes)).any():
        raise IndexError(f"ops.gather_nd: an index is out of range for the axes {tuple(sizes)}")
    idx = np.where(idx < 0, idx + sizes, idx)
    xs = x.reshape((batch,) + x.shape[b:])
    return xs, (np.arange(batch)[:, None],) + tuple(idx[..., j] for j in range(k))


def _kernel(x, indices, batch_dims=0):
    b = int(batch_dims)
    xs, where = _where(x, indices, b)
    out = xs[where]
    return out.reshape(indices.shape[:-1] + x.shape[b + indices.shape[-1]:])


def _vjp(ctx, g):
    x, indices = ctx.inputs
    b = int(ctx.params["batch_dims"])
    xs, where = _where(x, indices, b)
    gx = np.zeros(xs.shape, dtype=g.dtype)
    n_idx = where[1].shape[1]
    np.add.at(gx, where, g.reshape((where[0].shape[0], n_idx) + x.shape[b + indices.shape[-1]:]))
    return gx.reshape(x.shape), None


def _samples(rng):
    x = rng.standard_normal((3, 4, 5))
    yield Sample(args=(x, np.array([[0, 1], [2, 3], [0, 1]])), name="pairs_repeat")
    yield Sample(args=(x, np.array([[[2]], [[-1]]])), name="leading_axis")
    yield Sample(args=(x, np.array([[1], [3], [0]])), params={"batch_dims": 1}, name="batch")
    yield Sample(args=(x, np.array([[[1, 4]], [[0, 0]], [[3, 2]]])), params={"batch_dims": 1},
                 name="batch_scalars")


gather_nd = OpDef(
    name="gather_nd", inputs=("x", "indices"),
    params={"batch_dims": Param(kind="int", default=0)},
    kernel=_kernel, infer=_infer, vjp=_vjp, samples=_samples,
    doc="x[batch..., *indices[batch..., i, :]] for every index tuple (ONNX GatherND); negative "
        "indices count from the end. No gradient for indices.",
)

OPS = (gather_nd,)
