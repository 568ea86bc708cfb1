"""More indexing, as PyTorch names it: masked_fill, index_select, narrow and one_hot."""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import (DType, Dim, OpError, TensorType, broadcast_shapes, dim, is_static,
                      norm_axis, same_dim)
from .index import _check_indices


# -- masked_fill ----------------------------------------------------------------------------------
def _masked_fill_infer(x, mask, value):
    if mask.dtype != DType.BOOL:
        raise OpError(f"ops.masked_fill: input mask must be a bool tensor, got {mask}")
    b = broadcast_shapes(x.shape, mask.shape, op="ops.masked_fill")
    if len(b) != x.ndim or not all(same_dim(p, q) for p, q in zip(b, x.shape)):
        raise OpError(f"ops.masked_fill: a mask of shape {mask} cannot be broadcast to x {x}")
    return TensorType(x.dtype, x.shape)


def _masked_fill(x, mask, value):
    return np.where(mask, np.array(value).astype(x.dtype), x)


masked_fill = OpDef(
    name="masked_fill", inputs=("x", "mask"), params={"value": Param(kind="scalar")},
    kernel=_masked_fill, infer=_masked_fill_infer,
    vjp=lambda ctx, g: (np.where(ctx.inputs[1], 0, g), None),
    samples=lambda rng: [
        Sample(args=(rng.standard_normal((3, 4)), rng.standard_normal((3, 4)) > 0),
               params={"value": -30.0}, name="same_shape"),
        Sample(args=(rng.standard_normal((2, 3, 4)), np.array([True, False, False, True])),
               params={"value": 0.5}, name="broadcast"),
        Sample(args=(np.array([[1, 2], [3, 4]], dtype=np.int32), np.array([[True], [False]])),
               params={"value": 9}, name="int")],
    methods=("masked_fill",), inplace=("masked_fill_",),
    doc="x with value where mask (bool, broadcast to x) is True (torch.masked_fill); value is "
        "cast to x's dtype. No gradient where filled, none for mask.",
)


# -- index_select ---------------------------------------------------------------------------------
def _index_select_infer(x, index, axis):
    _check_indices("index_select", index)
    if index.ndim > 1:
        raise OpError(f"ops.index_select: index must be 1-D (or 0-d), got {index}")
    if x.ndim == 0:
        return TensorType(x.dtype, ())
    a = norm_axis(axis, x.ndim, "index_select")
    shape = list(x.shape)
    shape[a] = index.shape[0] if index.ndim else 1
    return TensorType(x.dtype, shape)


def _index_select(x, index, axis):
    if x.ndim == 0:
        return x.copy()
    a = norm_axis(axis, x.ndim, "index_select")
    n = x.shape[a]
    flat = np.reshape(index, -1)
    if flat.size and (flat.min() < -n or flat.max() >= n):
        raise OpError(f"ops.index_select: index holds {int(flat.min())}..{int(flat.max())}, out "
                      f"of range for axis {axis} of size {n}")
    return np.take(x, flat, axis=a)


def _index_select_vjp(ctx, g):
    x, index = ctx.inputs
    if x.ndim == 0:
        return g, None
    a = norm_axis(ctx.params["axis"], x.ndim, "index_select")
    gx = np.zeros(x.shape, dtype=g.dtype)
    np.add.at(gx, (slice(None),) * a + (np.reshape(index, -1),), g)
    return gx, None


index_select = OpDef(
    name="index_select", inputs=("x", "index"), params={"axis": Param(kind="axis")},
    signature=("x", "axis", "index"),
    kernel=_index_select, infer=_index_select_infer, vjp=_index_select_vjp,
    samples=lambda rng: [Sample(args=(rng.standard_normal((4, 3)), np.array([3, 0, 3])),
                                params={"axis": 0}, name="rows_repeat"),
                         Sample(args=(rng.standard_normal((2, 3, 4)), np.array([-1, 1])),
                                params={"axis": -1}, name="negative")],
    methods=("index_select",),
    doc="The entries of x at positions index (1-D, int) along axis (torch.index_select(x, dim, "
        "index)); repeated positions accumulate their gradients.",
)


# -- narrow ---------------------------------------------------------------------------------------
def _narrow_bounds(shape, axis, start, length):
    a = norm_axis(axis, len(shape), "narrow")
    start, length, n = dim(start), dim(length), shape[a]
    if not isinstance(length, Dim) and length < 0:
        raise OpError(f"ops.narrow: parameter 'length' must be non-negative, got {length}")
    if not isinstance(start, Dim) and start < 0:
        if isinstance(n, Dim):
            raise OpError(f"ops.narrow: a negative start ({start}) on an axis of symbolic size "
                          f"{n} is not supported")
        start = start + n
    if is_static(start, length, n) and (start < 0 or start + length > n):
        raise OpError(f"ops.narrow: start {start} and length {length} do not fit in axis "
                      f"{axis} of size {n}")
    return a, start, length


def _narrow_infer(x, axis, start, length):
    a, _s, length = _narrow_bounds(x.shape, axis, start, length)
    shape = list(x.shape)
    shape[a] = length
    return TensorType(x.dtype, shape)


def _narrow(x, axis, start, length):
    a, s, n = _narrow_bounds(x.shape, axis, start, length)
    return np.asarray(x[(slice(None),) * a + (slice(s, s + n),)])


def _narrow_vjp(ctx, g):
    x = ctx.inputs[0]
    p = ctx.params
    a, s, n = _narrow_bounds(x.shape, p["axis"], p["start"], p["length"])
    gx = np.zeros(x.shape, g.dtype)
    gx[(slice(None),) * a + (slice(s, s + n),)] = g
    return (gx,)


narrow = OpDef(
    name="narrow", inputs=("x",),
    params={"axis": Param(kind="axis"), "start": Param(kind="size"),
            "length": Param(kind="size")},
    kernel=_narrow, infer=_narrow_infer, vjp=_narrow_vjp,
    samples=lambda rng: [Sample(args=(rng.standard_normal((4, 5)),),
                                params={"axis": 1, "start": 1, "length": 3}),
                         Sample(args=(rng.standard_normal((5, 2)),),
                                params={"axis": 0, "start": -2, "length": 2}, name="negative")],
    methods=("narrow",),
    doc="length entries from start along axis (torch.narrow); a negative start counts from "
        "the end.",
)


# -- one_hot --------------------------------------------------------------------------------------
ONE_HOT_FROM_DATA = ("num_classes=-1 reads the number of classes from the data (x.max() + 1), "
                     "which a graph with static shapes cannot record; pass num_classes")


def _one_hot_infer(x, num_classes=-1):
    if not x.dtype.is_int:
        raise OpError(f"ops.one_hot: input x must be an integer tensor (class indices), got {x}")
    n = dim(num_classes)
    if not isinstance(n, Dim) and n == -1:  # PyTorch's: as many as the data holds (eager only)
        n = Dim.symbol("one_hot_classes")
    elif not isinstance(n, Dim) and n < 0:
        raise OpError(f"ops.one_hot: parameter 'num_classes' must be a number of classes or -1 "
                      f"(read from the data), got {n}")
    return TensorType(DType.I64, tuple(x.shape) + (n,))


def _one_hot(x, num_classes=-1):
    if num_classes == -1:
        if x.size and x.min() < 0:
            raise OpError(f"ops.one_hot: class values must be >= 0, got {int(x.min())}")
        num_classes = int(x.max()) + 1 if x.size else 0
    if x.size and (x.min() < 0 or x.max() >= num_classes):
        raise OpError(f"ops.one_hot: class values {int(x.min())}..{int(x.max())} must lie in "
                      f"0..{num_classes - 1} (num_classes={num_classes})")
    return (np.asarray(x)[..., None] == np.arange(num_classes)).astype(np.int64)


one_hot = OpDef(
    name="one_hot", inputs=("x",),
    params={"num_classes": Param(kind="size", default=-1,
                                 doc="the length of the new last axis; -1: x.max() + 1")},
    kernel=_one_hot, infer=_one_hot_infer, vjp=None,
    untraceable=lambda params: ONE_HOT_FROM_DATA if params.get("num_classes") == -1 else None,
    samples=lambda rng: [Sample(args=(np.array([0, 2, 1, 2]),), params={"num_classes": 4}),
                         Sample(args=(np.array([[1, 0], [3, 3]], dtype=np.int32),),
                                params={"num_classes": 5}, name="2d_int32"),
                         Sample(args=(np.array([[1, 0], [3, 2]]),), name="from_data")],
    doc="i64 one-hot rows of num_classes for integer class indices (torch.nn.functional."
        "one_hot); the result gets a new last axis. num_classes=-1 (the default, as torch) "
        "reads x.max() + 1 from the data: eager only, a trace needs the number. Not "
        "differentiable.",
)

OPS = (masked_fill, index_select, narrow, one_hot)
