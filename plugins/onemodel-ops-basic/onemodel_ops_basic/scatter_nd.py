"""scatter_nd (ONNX ScatterND, TensorFlow's scatter_nd update; in torch ``x.index_put_`` with
one index tensor per leading axis): a copy of x with ``updates`` written at the index tuples in
the last axis of ``indices``, or combined there by ``reduction`` (add, mul, max, min). The
inverse of gather_nd."""
from __future__ import annotations

import numpy as np

from onemodel.core.types import same_dim
from onemodel.registry import OpDef, Param, Sample

from ._common import Dim, OpError, TensorType

REDUCTIONS = ("none", "add", "mul", "max", "min")
_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _infer(x: TensorType, indices: TensorType, updates: TensorType, reduction="none"):
    if not indices.dtype.is_int:
        raise OpError(f"ops.scatter_nd: indices must be an integer tensor, got {indices}")
    if reduction not in REDUCTIONS:
        raise OpError(f"ops.scatter_nd: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    k = indices.shape[-1] if indices.ndim else None
    if k is None or isinstance(k, Dim) or not 1 <= k <= x.ndim:
        raise OpError(f"ops.scatter_nd: the last axis of indices {indices} must be a fixed size "
                      f"from 1 to {x.ndim}")
    want = tuple(indices.shape[:-1]) + tuple(x.shape[k:])
    if len(want) != updates.ndim or not all(same_dim(a, b) for a, b in zip(want, updates.shape)):
        raise OpError(f"ops.scatter_nd: updates {updates} must have shape "
                      f"{[str(d) for d in want]} (indices {indices}, x {x})")
    return TensorType(x.dtype, x.shape)


def _where(x, indices):
    """The index tuples, negative ones counted from the end, as a numpy key into x."""
    k = indices.shape[-1]
    idx = indices.reshape(-1, k).astype(np.int64)
    sizes = np.array(x.shape[:k], dtype=np.int64)
    if ((idx < -sizes) | (idx >= sizes)).any():
        raise IndexError(f"ops.scatter_nd: an index is out of range for the axes {tuple(sizes)}")
    idx = np.where(idx < 0, idx + sizes, idx)
    return tuple(idx[:, j] for j in range(k))


def _kernel(x, indices, updates, reduction="none"):
    key = _where(x, indices)
    k = indices.shape[-1]
    upd = updates.reshape((-1,) + x.shape[k:]).astype(x.dtype, copy=False)
    out = x.copy()
    if reduction == "none":
        out[key] = upd  # a position written twice keeps one of its updates (ONNX: undefined)
    else:
        _UFUNC[reduction].at(out, key, upd)
    return out


def _vjp(ctx, g):
    x, indices, updates = ctx.inputs
    reduction = ctx.params["reduction"]
    if reduction not in ("none", "add"):
        raise OpError(f"ops.scatter_nd: no gradient for reduction {reduction!r}")
    key = _where(x, indices)
    gu = g[key].reshape(updates.shape)
    if reduction == "add":
        return g, None, gu
    gx = g.copy()
    gx[key] = 0  # overwritten entries carry no gradient to x
    return gx, None, gu


def _samples(rng):
    r = rng.standard_normal
    x = r((4, 3, 2))
    yield Sample(args=(x, np.array([[2], [0]]), r((2, 3, 2))), name="rows")
    yield Sample(args=(x, np.array([[1, 2], [-1, 0], [0, 1]]), r((3, 2))), name="pairs")
    yield Sample(args=(x, np.array([[[3, 1, 0]], [[0, 0, 1]]]), r((2, 1))), name="elements")
    for reduction in ("add", "mul", "max", "min"):
        yield Sample(args=(x, np.array([[1], [1], [3]]), r((3, 3, 2))),
                     params={"reduction": reduction}, grad=reduction == "add",
                     name=f"repeat_{reduction}")


scatter_nd = OpDef(
    name="scatter_nd", inputs=("x", "indices", "updates"),
    params={"reduction": Param(kind="str", default="none", choices=REDUCTIONS,
                               doc="how an update combines with the entry it lands on")},
    kernel=_kernel, infer=_infer, vjp=_vjp, samples=_samples,
    doc="A copy of x with updates[i...] written at x[*indices[i..., :]] (ONNX ScatterND); "
        "reduction add / mul / max / min combines instead (repeated positions accumulate). "
        "Negative indices count from the end. Gradients for reduction none and add; none for "
        "indices.",
)

OPS = (scatter_nd,)
