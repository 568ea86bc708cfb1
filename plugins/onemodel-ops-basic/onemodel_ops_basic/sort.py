"""Ordering along one axis: sort and topk (values and i64 indices, two outputs, as PyTorch's
named tuples) and argsort. Ties keep their original order (always stable), NaN sorts as the
largest value, as in PyTorch."""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import DType, Dim, OpError, TensorType, dim, norm_axis


def _axis(op, ndim, axis):
    if ndim == 0:
        if axis not in (0, -1):
            raise OpError(f"ops.{op}: parameter 'axis' is {axis}, a 0-d tensor has only axis 0")
        return None
    return norm_axis(axis, ndim, op)


def order(x, axis: int, descending: bool) -> np.ndarray:
    """Stable sorting indices along ``axis``; descending keeps equal values in index order."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    rev = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(rev, axis)


def _scatter_back(g, idx, axis, shape):
    out = np.zeros(shape, dtype=g.dtype)
    np.put_along_axis(out, idx, g, axis=axis)
    return out


# -- sort / argsort -----------------------------------------------------------------------------
def _sort_params():
    return {"axis": Param(kind="axis", default=-1),
            "descending": Param(kind="bool", default=False),
            "stable": Param(kind="bool", default=False,
                            doc="accepted for PyTorch; the sort is always stable")}


def _argsort(x, axis=-1, descending=False, stable=False):
    a = _axis("argsort", x.ndim, axis)
    if a is None:
        return np.zeros((), np.int64)
    return order(x, a, descending).astype(np.int64)


def _sort(x, axis=-1, descending=False, stable=False):
    a = _axis("sort", x.ndim, axis)
    if a is None:
        return x.copy(), np.zeros((), np.int64)
    idx = order(x, a, descending).astype(np.int64)
    return np.take_along_axis(x, idx, axis=a), idx


def _sort_vjp(ctx, g, _g_idx=None):
    x = ctx.inputs[0]
    a = _axis("sort", x.ndim, ctx.params["axis"])
    if a is None:
        return (g,)
    return (_scatter_back(g, ctx.outputs[1], a, x.shape),)


def _sort_infer(x, axis=-1, descending=False, stable=False):
    _axis("sort", x.ndim, axis)
    return TensorType(x.dtype, x.shape), TensorType(DType.I64, x.shape)


def _argsort_infer(x, axis=-1, descending=False, stable=False):
    _axis("argsort", x.ndim, axis)
    return TensorType(DType.I64, x.shape)


def _sort_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 5)),), name="last")
    yield Sample(args=(r((4, 3)),), params={"axis": 0, "descending": True}, name="descending")
    yield Sample(args=(np.array([[3, 1, 3, 0, 1], [2, 2, 2, -1, 5]], dtype=np.int32),),
                 params={"descending": True, "stable": True}, grad=False, name="int_ties")
    yield Sample(args=(np.array([1.0, np.nan, -2.0, 0.5]),), grad=False, name="nan_last")
    yield Sample(args=(r((2, 3, 4)),), params={"axis": -2}, name="middle")


sort = OpDef(
    name="sort", inputs=("x",), params=_sort_params(), kernel=_sort, infer=_sort_infer,
    vjp=_sort_vjp, samples=_sort_samples, methods=("sort",),
    doc="Sorted values along axis and their positions in x (i64), a tuple (values, indices) as "
        "torch.sort; ties keep their order, NaN is the largest. The gradient goes back to the "
        "positions.",
)

argsort = OpDef(
    name="argsort", inputs=("x",), params=_sort_params(), kernel=_argsort, infer=_argsort_infer,
    vjp=None, samples=_sort_samples, methods=("argsort",),
    doc="The positions (i64) that sort x along axis (torch.argsort); ties keep their order. "
        "Not differentiable (vjp=None): the result is integer positions.",
)


# -- topk -----------------------------------------------------------------------------------------
def _topk_infer(x, k, axis=-1, largest=True, sorted=True):  # noqa: A002 - torch's name
    a = _axis("topk", x.ndim, axis)
    k = dim(k)
    if not isinstance(k, Dim) and k < 0:
        raise OpError(f"ops.topk: parameter 'k' must be non-negative, got {k}")
    shape = list(x.shape)
    if a is None:
        if not isinstance(k, Dim) and k > 1:
            raise OpError(f"ops.topk: parameter 'k' is {k}, a 0-d tensor has one element")
    else:
        n = shape[a]
        if not isinstance(k, Dim) and not isinstance(n, Dim) and k > n:
            raise OpError(f"ops.topk: parameter 'k' is {k}, larger than axis {axis} of size {n}")
        shape[a] = k
    return TensorType(x.dtype, shape), TensorType(DType.I64, shape)


def _topk(x, k, axis=-1, largest=True, sorted=True):  # noqa: A002
    a = _axis("topk", x.ndim, axis)
    if a is None:
        return (x.copy(), np.zeros((), np.int64)) if k else (x.reshape(0), np.zeros(0, np.int64))
    if k > x.shape[a]:
        raise OpError(f"ops.topk: parameter 'k' is {k}, larger than axis {axis} of size "
                      f"{x.shape[a]}")
    idx = np.take(order(x, a, largest), np.arange(k), axis=a).astype(np.int64)
    return np.take_along_axis(x, idx, axis=a), idx


def _topk_vjp(ctx, g, _g_idx=None):
    x = ctx.inputs[0]
    a = _axis("topk", x.ndim, ctx.params["axis"])
    if a is None:
        return (g.reshape(x.shape) if g.size else np.zeros_like(x),)
    return (_scatter_back(g, ctx.outputs[1], a, x.shape),)


def _topk_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 6)),), params={"k": 2}, name="largest")
    yield Sample(args=(r((5, 3)),), params={"k": 3, "axis": 0, "largest": False}, name="smallest")
    yield Sample(args=(np.array([[4, 1, 4, 4, 0]], dtype=np.int64),), params={"k": 3},
                 grad=False, name="int_ties")
    yield Sample(args=(r((2, 4, 3)),), params={"k": 4, "axis": 1}, name="all")


topk = OpDef(
    name="topk", inputs=("x",),
    params={"k": Param(kind="size", doc="how many values"),
            "axis": Param(kind="axis", default=-1),
            "largest": Param(kind="bool", default=True, doc="False: the k smallest"),
            "sorted": Param(kind="bool", default=True,
                            doc="accepted for PyTorch; the values always come sorted")},
    kernel=_topk, infer=_topk_infer, vjp=_topk_vjp, samples=_topk_samples, methods=("topk",),
    doc="The k largest (or smallest) values along axis and their positions (i64), a tuple "
        "(values, indices) as torch.topk; sorted, ties in index order. The gradient goes back "
        "to the positions.",
)

OPS = (sort, argsort, topk)
