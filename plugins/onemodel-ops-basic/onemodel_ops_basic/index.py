"""Indexing: PyTorch's gather, numpy's take, and the ops behind ``Tensor.__getitem__`` /
``Tensor.__setitem__`` (basic indexing: ints, slices, None and ...).

An ``index`` param is a tuple of entries: an int, ``("slice", start, stop, step)`` (any of the
three may be None), ``None`` (a new axis of size 1) or ``"..."``. Ints and slice bounds may be
symbolic sizes at inference time; kernels get plain ints.
"""
from __future__ import annotations

import numbers

import numpy as np

from onemodel.registry import OpDef, OpTraits, Param, Sample

from ._common import (Dim, OpError, TensorType, broadcast_shapes, dim, is_static, norm_axis,
                      same_dim)
from onemodel.core.guards import require
from onemodel.errors import OpIndexError
from onemodel.core.symbolic import format_shape, provably_nonneg


# -- the index param --------------------------------------------------------------------------------
def _is_slice_entry(e) -> bool:
    return (isinstance(e, (tuple, list)) and len(e) == 4 and isinstance(e[0], str)
            and e[0] == "slice")


def _entries(index) -> tuple:
    """The canonical entries of an index param (also accepts Python slices, Ellipsis, lists)."""
    if not isinstance(index, (tuple, list)) or _is_slice_entry(index):
        index = (index,)
    out = []
    for e in index:
        e = dim(e)
        if e is None:
            out.append(None)
        elif e is Ellipsis or (isinstance(e, str) and e == "..."):
            out.append("...")
        elif isinstance(e, slice):
            out.append(("slice", dim(e.start), dim(e.stop), dim(e.step)))
        elif _is_slice_entry(e):
            out.append(("slice", dim(e[1]), dim(e[2]), dim(e[3])))
        else:
            e = dim(e)
            if isinstance(e, Dim):
                out.append(e)
            elif isinstance(e, numbers.Integral) and not isinstance(e, (bool, np.bool_)):
                out.append(int(e))
            else:
                raise OpError(f"unsupported index entry {e!r}: use ints, slices, None and ...")
    if sum(1 for e in out if isinstance(e, str)) > 1:
        raise OpError("an index can only have a single ellipsis (...)")
    return tuple(out)


def _expanded(entries: tuple, ndim: int) -> tuple:
    """Entries with ... replaced by full slices, and full slices appended for trailing axes."""
    consumed = sum(1 for e in entries if e is not None and not isinstance(e, str))
    if consumed > ndim:
        raise OpError(f"too many indices ({consumed}) for a tensor of rank {ndim}")
    fill = (("slice", None, None, None),) * (ndim - consumed)
    if "..." in [e for e in entries if isinstance(e, str)]:
        i = next(i for i, e in enumerate(entries) if isinstance(e, str))
        return entries[:i] + fill + entries[i + 1:]
    return entries + fill


def _position(v, size, axis: int, default):
    """Where a slice bound lands on an axis of ``size`` after Python's clamping. A fixed bound on
    a symbolic axis is exact at every size (``min``/``max``); a symbolic bound is taken as it is,
    under guards that it lies inside the axis (the session checks them)."""
    if v is None:
        return default
    if isinstance(v, Dim):
        what = f"a slice bound {v} on axis {axis} (size {size})"
        if provably_nonneg(-v):  # counts from the end, like -n
            require(0, size + v, f"{what} must not reach before the start")
            return size + v
        require(0, v, f"{what} must not be negative")
        require(v, size, f"{what} must lie within the axis")
        return v
    if v < 0:
        return Dim.max(size + v, 0)
    return Dim.min(v, size)


def _slice_len(size, start, stop, step, axis: int = 0):
    step = 1 if step is None else step
    if isinstance(step, Dim):
        raise OpError("a slice step must be a fixed int, not a symbolic size")
    if step == 0:
        raise OpError("a slice step cannot be zero")
    if is_static(size, start, stop):
        return len(range(*slice(start, stop, step).indices(size)))
    if step < 0:
        raise OpError(f"a negative slice step ({step}) is not supported on symbolic sizes")
    fixed = lambda v: v is None or not isinstance(v, Dim)  # noqa: E731
    if fixed(start) and fixed(stop) and isinstance(size, Dim) and (start is None or stop is None):
        # the common forms, written so they print simply: x[:, 1:], x[:, -4:], x[:, :8], x[:, :-1]
        if stop is None:
            s = start or 0
            length = Dim.max(size - s, 0) if s >= 0 else Dim.min(size, -s)
        else:
            length = Dim.min(size, stop) if stop >= 0 else Dim.max(size + stop, 0)
    else:
        length = Dim.max(_position(stop, size, axis, size) - _position(start, size, axis, 0), 0)
    if step != 1:
        length = (length + (step - 1)) // step
    return length


def _index_shape(shape, index) -> tuple:
    entries = _expanded(_entries(index), len(shape))
    out, pos = [], 0
    for e in entries:
        if e is None:
            out.append(1)
            continue
        size = shape[pos]
        pos += 1
        if isinstance(e, tuple):
            out.append(_slice_len(size, *e[1:], axis=pos - 1))
        elif is_static(e, size) and not -size <= e < size:
            raise OpIndexError(f"index {e} is out of range for axis {pos - 1} of size {size}")
    return tuple(out)


def _key(index) -> tuple:
    """The numpy key for an index param (plain ints here)."""
    key = []
    for e in _entries(index):
        if e is None:
            key.append(None)
        elif isinstance(e, str):
            key.append(Ellipsis)
        elif isinstance(e, tuple):
            key.append(slice(*e[1:]))
        else:
            key.append(e)
    return tuple(key)


def _index_infer(x, index):
    return TensorType(x.dtype, _index_shape(x.shape, index))


def _index(x, index):
    return np.asarray(x[_key(index)])


def _index_vjp(ctx, g):
    x = ctx.inputs[0]
    gx = np.zeros(x.shape, dtype=g.dtype)
    gx[_key(ctx.params["index"])] = g  # basic indexing selects each element at most once
    return (gx,)


def _s(start=None, stop=None, step=None):
    return ("slice", start, stop, step)


def _index_samples(rng):
    x = rng.standard_normal((4, 5, 3))
    yield Sample(args=(x,), params={"index": (1, _s(1, None, 2))}, name="int_slice")
    yield Sample(args=(x,), params={"index": ("...", -1, None)}, name="ellipsis_negative_none")
    yield Sample(args=(x,), params={"index": (_s(None, -1), _s(-3, None), 0)}, name="neg_bounds")
    yield Sample(args=(x,), params={"index": (_s(None, None, -2), 2, _s(5, 9))}, name="neg_step")


index = OpDef(
    name="index", inputs=("x",),
    params={"index": Param(kind="index", doc="tuple of int | ('slice', start, stop, step) | "
                                             "None | '...'")},
    kernel=_index, infer=_index_infer, vjp=_index_vjp, samples=_index_samples,
    methods=("__getitem__",), traits=OpTraits(view="slice"),
    doc="Basic indexing x[index] (numpy/PyTorch semantics, negative ints and bounds allowed); "
        "the result is a view. The gradient is scattered into zeros.",
)


# -- __setitem__ -------------------------------------------------------------------------------------
def _strip_leading_ones(shape, ndim):
    shape = tuple(shape)
    while len(shape) > ndim and not isinstance(shape[0], Dim) and shape[0] == 1:
        shape = shape[1:]
    return shape


def _index_put_infer(x, value, index):
    region = _index_shape(x.shape, index)
    vshape = _strip_leading_ones(value.shape, len(region))
    b = broadcast_shapes(region, vshape, op="ops.index_put")
    if len(b) != len(region) or not all(same_dim(p, q) for p, q in zip(b, region)):
        raise OpError(f"ops.index_put: a value of shape {format_shape(value.shape)} cannot be "
                      f"broadcast to the indexed region {format_shape(region)}")
    return TensorType(x.dtype, x.shape)


def _index_put(x, value, index):
    out = x.copy()
    out[_key(index)] = value
    return out


def _sum_to(g: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum a gradient of the broadcast region back to a value of ``shape`` (leading 1s kept)."""
    stripped = _strip_leading_ones(shape, g.ndim)
    extra = g.ndim - len(stripped)
    if extra:
        g = g.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, s in enumerate(stripped) if s == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape)


def _index_put_vjp(ctx, g):
    x, value = ctx.inputs
    key = _key(ctx.params["index"])
    gx = gv = None
    if ctx.needs_grad[0]:
        gx = g.copy()
        gx[key] = 0
    if ctx.needs_grad[1]:
        gv = _sum_to(np.asarray(g[key]), value.shape)
    return gx, gv


def _index_put_samples(rng):
    x = rng.standard_normal((4, 3))
    yield Sample(args=(x, rng.standard_normal((2, 3))), params={"index": (_s(1, 3),)},
                 name="rows")
    yield Sample(args=(x, rng.standard_normal((1,))), params={"index": ("...", -1)},
                 name="broadcast_column")
    yield Sample(args=(x, np.array(2.5)), params={"index": (-1, _s(None, None, 2))},
                 name="scalar_value")


index_put = OpDef(
    name="index_put", inputs=("x", "value"),
    params={"index": Param(kind="index", doc="as for ops.index")},
    kernel=_index_put, infer=_index_put_infer, vjp=_index_put_vjp, samples=_index_put_samples,
    methods=("__setitem__",),
    doc="A copy of x with x[index] = value (value broadcast to the region and cast to x's "
        "dtype); Tensor.__setitem__ writes it back. Gradients: x's outside the region, value's "
        "summed over the broadcast.",
)


# -- gather / take -----------------------------------------------------------------------------------
def _check_indices(op, t):
    if not t.dtype.is_int:
        raise OpError(f"ops.{op}: indices must be an integer tensor, got {t}")


def _gather_infer(x, indices, axis):
    _check_indices("gather", indices)
    if x.ndim != indices.ndim:
        raise OpError(f"ops.gather: indices {indices} must have the rank of x {x}")
    a = norm_axis(axis, x.ndim, "gather")
    for i, (d, n) in enumerate(zip(indices.shape, x.shape)):
        if i != a and is_static(d, n) and d > n:
            raise OpError(f"ops.gather: indices {indices} are larger than x {x} on axis {i}")
    return TensorType(x.dtype, indices.shape)


def _gather(x, indices, axis):
    if x.ndim == 0:
        return np.take_along_axis(x.reshape(1), indices.reshape(1), 0).reshape(())
    a = norm_axis(axis, x.ndim, "gather")
    xs = x[tuple(slice(None) if i == a else slice(0, n) for i, n in enumerate(indices.shape))]
    return np.take_along_axis(xs, indices, axis=a)


def _gather_vjp(ctx, g):
    x, indices = ctx.inputs
    gx = np.zeros(x.shape, dtype=g.dtype)
    if x.ndim == 0:
        return gx + g, None
    a = norm_axis(ctx.params["axis"], x.ndim, "gather")
    grid = list(np.indices(indices.shape, sparse=True))
    grid[a] = indices
    np.add.at(gx, tuple(grid), g)  # repeated indices accumulate
    return gx, None


def _gather_samples(rng):
    x = rng.standard_normal((3, 4))
    yield Sample(args=(x, rng.integers(0, 4, (3, 5))), params={"axis": 1}, name="axis1_repeats")
    yield Sample(args=(x, rng.integers(0, 3, (2, 4))), params={"axis": 0}, name="axis0")
    yield Sample(args=(rng.standard_normal((2, 3, 4)), rng.integers(-4, 4, (2, 2, 3))),
                 params={"axis": -1}, name="negative_smaller")


gather = OpDef(
    name="gather", inputs=("x", "indices"), params={"axis": Param(kind="axis")},
    kernel=_gather, infer=_gather_infer, vjp=_gather_vjp, samples=_gather_samples,
    methods=("gather",),
    doc="PyTorch's gather: out[i][j][k] = x[indices[i][j][k]][j][k] for axis 0 (and so on); "
        "indices has x's rank and is no larger on the other axes. No gradient for indices.",
)


def _take_infer(x, indices, axis=None):
    _check_indices("take", indices)
    if axis is None:
        return TensorType(x.dtype, indices.shape)
    if x.ndim == 0:
        raise OpError("ops.take: a zero-dimensional tensor has no axis to take along; "
                      "use axis=None")
    a = norm_axis(axis, x.ndim, "take")
    return TensorType(x.dtype, tuple(x.shape[:a]) + tuple(indices.shape) + tuple(x.shape[a + 1:]))


def _take(x, indices, axis=None):
    return np.take(x, indices, axis=axis)


def _take_vjp(ctx, g):
    x, indices = ctx.inputs
    axis = ctx.params["axis"]
    if axis is None:
        gx = np.zeros(x.size, dtype=g.dtype)
        np.add.at(gx, indices.reshape(-1), g.reshape(-1))
        return gx.reshape(x.shape), None
    gx = np.zeros(x.shape, dtype=g.dtype)
    a = norm_axis(axis, x.ndim, "take")
    np.add.at(gx, (slice(None),) * a + (indices,), g)
    return gx, None


def _take_samples(rng):
    x = rng.standard_normal((4, 3))
    yield Sample(args=(x, np.array([[0, 2], [3, 3]])), params={"axis": 0}, name="axis0_repeats")
    yield Sample(args=(x, np.array([-1, 0])), params={"axis": -1}, name="negative")
    yield Sample(args=(x, np.array([[11, 0, -12]])), name="flat")


take = OpDef(
    name="take", inputs=("x", "indices"),
    params={"axis": Param(kind="axis", default=None, optional=True)},
    kernel=_take, infer=_take_infer, vjp=_take_vjp, samples=_take_samples,
    methods=("take",),
    doc="numpy's take (ONNX Gather): the slices x[..., indices, ...] along axis, indices' shape "
        "replacing that axis; axis=None takes from the flattened tensor. Negative indices count "
        "from the end. No gradient for indices.",
)

OPS = (index, index_put, gather, take)
