"""``shape_from_data``: ONNX's shape-like ops whose shape, axes or bounds are tensors read at run
time (a ``Reshape`` target fed as a graph input, ``ReduceSum`` axes computed from data).

Why one op and not a tensor input on ``reshape``, ``sum``...: those ops keep PyTorch's
signatures (API.md) and static params, which every pass and backend specialises on; the run-time
forms follow ONNX's rules for the data (``0`` copies a size in ``Reshape``, ``Slice`` clamps its
bounds, ``noop_with_empty_axes``), so they live together, named by ``kind`` (the ONNX op type),
with the node's inputs in ONNX's order. The output shapes are the ``dims`` param: a size known
at import is kept, every other is a *data size*, a symbol no graph input binds, which the
session reads from this op's result at run time (`onemodel.core.dynamic_plan`). The kernel
checks its result against every size ``dims`` states, so a wrong declaration is an error.
"""
from __future__ import annotations

import math

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import Dim, DType, OpError, TensorType

KINDS = ("Reshape", "Expand", "ConstantOfShape", "Range", "Slice", "Split", "Squeeze",
         "Unsqueeze", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
         "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "Pad",
         "CumSum", "CumProd", "TopK", "NonZero", "Compress", "Unique")
#: kinds whose output size is decided by the values of their data input, not a shape-like one
SELECTING = ("NonZero", "Compress", "Unique")
#: kinds with several outputs (the others have one)
MULTI = ("Split", "TopK", "Unique")
PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _ints(a, what: str) -> list[int]:
    if a is None:
        return []
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise OpError(f"ops.shape_from_data: {what} must be an integer tensor, got {a.dtype}")
    return [int(v) for v in a.reshape(-1)]


def _axes(values, n: int, what: str) -> list[int]:
    out = []
    for a in values:
        if not -n <= a < n:
            raise OpError(f"ops.shape_from_data: {what} axis {a} is out of range for rank {n}")
        out.append(a % n)
    if len(set(out)) != len(out):
        raise OpError(f"ops.shape_from_data: {what} axes {values} repeat an axis")
    return out


def _reshape(x, shape, allowzero):
    target = _ints(shape, "the Reshape target")
    if not allowzero:
        target = [x.shape[i] if v == 0 and i < x.ndim else v for i, v in enumerate(target)]
    return np.reshape(x, target)


def _slice(x, starts, ends, axes, steps):
    starts, ends = _ints(starts, "Slice starts"), _ints(ends, "Slice ends")
    axes = _axes(_ints(axes, "Slice axes") if axes is not None else range(len(starts)), x.ndim,
                 "Slice")
    steps = _ints(steps, "Slice steps") if steps is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise OpError("ops.shape_from_data: Slice starts, ends, axes and steps differ in length")
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        n = x.shape[a]
        if st == 0:
            raise OpError("ops.shape_from_data: a Slice step is 0")
        s = s + n if s < 0 else s
        e = e + n if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), n), min(max(e, 0), n)
        else:  # ONNX clamps to [0, n-1] and [-1, n-1]; -1 means "before the first element"
            s, e = min(max(s, 0), n - 1), min(max(e, -1), n - 1)
            e = None if e < 0 else e
        index[a] = slice(s, e, st)
    return x[tuple(index)]


def _range(start, limit, delta):
    s, lim, d = (np.asarray(v).reshape(()) for v in (start, limit, delta))
    if d == 0:
        raise OpError("ops.shape_from_data: Range delta is 0")
    n = max(int(math.ceil((float(lim) - float(s)) / float(d))), 0)
    return (s + np.arange(n, dtype=s.dtype) * d).astype(s.dtype)


def _reduce(kind, x, axes, keepdims, noop):
    axes = _axes(_ints(axes, f"{kind} axes"), x.ndim, kind)
    if not axes and noop:
        return x
    axis = tuple(axes) if axes else None
    if kind in _FORMULAS:
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            out = _FORMULAS[kind](x, axis, bool(keepdims))
    elif kind in ("ReduceMax", "ReduceMin"):
        # ONNX: the max of nothing is the lowest value (-inf for floats), the min the highest
        info = np.finfo(x.dtype) if x.dtype.kind == "f" else np.iinfo(x.dtype)
        hi = np.inf if x.dtype.kind == "f" else info.max
        lo = -np.inf if x.dtype.kind == "f" else info.min
        fn = np.max if kind == "ReduceMax" else np.min
        out = fn(x, axis=axis, keepdims=bool(keepdims), initial=lo if kind == "ReduceMax" else hi)
    else:
        fn = np.sum if kind == "ReduceSum" else np.mean
        out = fn(x, axis=axis, keepdims=bool(keepdims))
    return np.asarray(out).astype(x.dtype)


def _unique(x, axis, keep_sorted):
    """ONNX's Unique along ``axis``: values, first indices, inverse indices and counts, in
    sorted order or (``sorted=0``) in the order of first occurrence."""
    y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                          return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not keep_sorted:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y, first, counts, inverse = np.take(y, order, axis=axis), first[order], counts[order], \
            rank[inverse]
    return tuple(np.asarray(v) if k == 0 else np.asarray(v, np.int64)
                 for k, v in enumerate((y, first, inverse, counts)))


#: ONNX's reductions that are a formula over a sum, product or maximum
_FORMULAS = {
    "ReduceProd": lambda x, ax, k: np.prod(x, axis=ax, keepdims=k),
    "ReduceL1": lambda x, ax, k: np.sum(np.abs(x), axis=ax, keepdims=k),
    "ReduceL2": lambda x, ax, k: np.sqrt(np.sum(np.square(x), axis=ax, keepdims=k)),
    "ReduceLogSum": lambda x, ax, k: np.log(np.sum(x, axis=ax, keepdims=k)),
    "ReduceSumSquare": lambda x, ax, k: np.sum(np.square(x), axis=ax, keepdims=k),
    "ReduceLogSumExp": lambda x, ax, k: _logsumexp(x, ax, k),
}


def _logsumexp(x, axis, keepdims):
    """log(sum(exp(x))) computed as ONNX's reference does (in the input's dtype, no shift:
    an overflow is inf, as it is there)."""
    return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))


def _pad(x, pads, value, axes, mode):
    """ONNX Pad: ``pads`` are [begins..., ends...] over ``axes`` (every axis when absent);
    negative widths crop."""
    pads = _ints(pads, "Pad pads")
    axes = _axes(_ints(axes, "Pad axes"), x.ndim, "Pad") if axes is not None else \
        list(range(x.ndim))
    if len(pads) != 2 * len(axes):
        raise OpError(f"ops.shape_from_data: Pad has {len(pads)} pads for {len(axes)} axes "
                      f"({2 * len(axes)} expected)")
    widths = [(0, 0)] * x.ndim
    for i, a in enumerate(axes):
        widths[a] = (pads[i], pads[len(axes) + i])
    crop = tuple(slice(max(-b, 0), n - max(-e, 0)) for n, (b, e) in zip(x.shape, widths))
    x = x[crop]
    grow = [(max(b, 0), max(e, 0)) for b, e in widths]
    if mode == "constant":
        v = np.asarray(value).reshape(-1)[0] if value is not None and np.asarray(value).size \
            else 0
        return np.pad(x, grow, mode="constant", constant_values=np.asarray(v).astype(x.dtype))
    if mode == "reflect" and any(w and n < 2 for n, w in zip(x.shape, map(max, grow))):
        raise OpError(f"ops.shape_from_data: reflect Pad of an axis of size < 2 ({list(x.shape)})")
    if any(w and n == 0 for n, w in zip(x.shape, map(max, grow))):
        raise OpError(f"ops.shape_from_data: {mode} Pad of an empty axis ({list(x.shape)})")
    return np.pad(x, grow, mode=mode)


def _scan(kind, x, axis, exclusive, reverse):
    """CumSum / CumProd; exclusive shifts the scan one place (the identity first): exact."""
    (ax,) = _axes(_ints(axis, f"{kind} axis"), x.ndim, kind)
    y = np.flip(x, ax) if reverse else x
    out = (np.cumsum if kind == "CumSum" else np.cumprod)(y, axis=ax, dtype=x.dtype)
    if exclusive and x.shape[ax]:
        first = np.full_like(np.take(out, [0], axis=ax), 0 if kind == "CumSum" else 1)
        out = np.concatenate([first, np.take(out, np.arange(x.shape[ax] - 1), axis=ax)], ax)
    return np.flip(out, ax) if reverse else out


def _topk(x, k, axis, largest, sorted_):
    """ONNX TopK: the k largest (or smallest), the lower index first among equals."""
    (k,) = _ints(k, "TopK k") or [None]
    ax = _axes([axis], x.ndim, "TopK")[0]
    n = x.shape[ax]
    if k is None or not 0 <= k <= n:
        raise OpError(f"ops.shape_from_data: TopK k {k} is out of range for an axis of {n}")
    if largest:  # a stable ascending sort of the reversed axis, reversed: ties keep index order
        order = n - 1 - np.flip(np.argsort(np.flip(x, ax), axis=ax, kind="stable"), ax)
    else:
        order = np.argsort(x, axis=ax, kind="stable")
    idx = np.take(order, np.arange(k), axis=ax)
    if not sorted_:
        idx = np.sort(idx, axis=ax)  # any order is allowed: the input's
    return np.take_along_axis(x, idx, axis=ax), idx.astype(np.int64)


def _compute(kind, x, a, b, c, d, axis, keepdims, noop_with_empty_axes, allowzero, value, dtype,
             mode="constant", exclusive=False, reverse=False, largest=True, sorted_=True):
    if kind == "Unique":
        return _unique(x, _axes([axis], x.ndim, "Unique")[0], keepdims)
    if kind == "TopK":
        return _topk(x, a, axis, largest, sorted_)
    if kind == "Pad":
        return _pad(x, a, b, c, mode)
    if kind in ("CumSum", "CumProd"):
        return _scan(kind, x, a, exclusive, reverse)
    if kind == "Reshape":
        return _reshape(x, a, allowzero)
    if kind == "Expand":
        shape = _ints(a, "the Expand shape")
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(shape)))
    if kind == "ConstantOfShape":
        return np.full(_ints(x, "the ConstantOfShape shape"), value, dtype=dtype.numpy)
    if kind == "Range":
        return _range(x, a, b)
    if kind == "Slice":
        return _slice(x, a, b, c, d)
    if kind == "Split":
        sizes = _ints(a, "Split sizes")
        ax = _axes([axis], x.ndim, "Split")[0]
        if sum(sizes) != x.shape[ax] or any(s < 0 for s in sizes):
            raise OpError(f"ops.shape_from_data: Split sizes {sizes} do not add up to axis "
                          f"{ax}'s size {x.shape[ax]}")
        return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=ax))
    if kind == "Squeeze":
        axes = _axes(_ints(a, "Squeeze axes"), x.ndim, "Squeeze")
        if any(x.shape[i] != 1 for i in axes):
            raise OpError(f"ops.shape_from_data: Squeeze of axes {axes} of shape "
                          f"{list(x.shape)}: not all of size 1")
        return np.squeeze(x, axis=tuple(axes))
    if kind == "NonZero":  # ONNX's layout: (rank, count), torch.nonzero's transposed
        return np.array(np.nonzero(np.atleast_1d(x)), dtype=np.int64).reshape(max(x.ndim, 1), -1)
    if kind == "Compress":  # a condition shorter than the axis selects among its first entries
        cond = np.asarray(a).reshape(-1)
        ax = _axes([axis], x.ndim, "Compress")[0]
        if cond.size > x.shape[ax]:
            raise OpError(f"ops.shape_from_data: Compress condition has {cond.size} entries, "
                          f"more than axis {ax}'s size {x.shape[ax]}")
        return np.compress(cond.astype(bool), x, axis=ax)
    if kind == "Unsqueeze":
        raw = _ints(a, "Unsqueeze axes")
        axes = _axes(raw, x.ndim + len(raw), "Unsqueeze")
        return np.expand_dims(x, tuple(sorted(axes))) if axes else x
    return _reduce(kind, x, a, keepdims, noop_with_empty_axes)


def _kernel(x=None, a=None, b=None, c=None, d=None, *, kind, dims, axis=0, keepdims=True,
            noop_with_empty_axes=False, allowzero=False, value=0, dtype=None, mode="constant",
            exclusive=False, reverse=False, largest=True, sorted=True):
    out = _compute(kind, x, a, b, c, d, axis, keepdims, noop_with_empty_axes, allowzero, value,
                   dtype, mode, exclusive, reverse, largest, sorted)
    outs = out if isinstance(out, tuple) else (out,)
    if len(outs) != len(dims):
        raise OpError(f"ops.shape_from_data: {kind} gives {len(outs)} outputs, dims declares "
                      f"{len(dims)}")
    for k, (o, want) in enumerate(zip(outs, dims)):
        bad = len(o.shape) != len(want) or any(
            w is not None and not isinstance(w, Dim) and int(w) != n for w, n in zip(want, o.shape))
        if bad:
            raise OpError(f"ops.shape_from_data: {kind} output {k} has shape {list(o.shape)}, "
                          f"but dims declares {[str(w) for w in want]}")
    return tuple(np.ascontiguousarray(o) for o in outs) if kind in MULTI else \
        np.ascontiguousarray(outs[0])


def _infer(x=None, a=None, b=None, c=None, d=None, *, kind, dims, axis=0, keepdims=True,
           noop_with_empty_axes=False, allowzero=False, value=0, dtype=None, mode="constant",
           exclusive=False, reverse=False, largest=True, sorted=True):
    if not isinstance(dims, tuple) or not all(isinstance(s, tuple) for s in dims):
        raise OpError("ops.shape_from_data: dims must be a tuple of shapes (one per output)")
    for s in dims:
        for v in s:
            if not isinstance(v, (int, Dim)) or isinstance(v, bool):
                raise OpError(f"ops.shape_from_data: dims holds {v!r}, not a size")
    if kind == "ConstantOfShape":
        out_dtype = dtype or DType.F32
    elif kind == "NonZero":
        out_dtype = DType.I64
    elif x is None:
        raise OpError(f"ops.shape_from_data: {kind} needs its first input")
    else:
        out_dtype = x.dtype
    shape_like = {"ConstantOfShape": (x,), "Range": (), "NonZero": (), "Compress": (),
                  "Pad": (a, c), "CumSum": (a,), "CumProd": (a,)}.get(kind, (a, b, c, d))
    data = [t for t in shape_like if t is not None]
    for t in data:
        if not t.dtype.is_int:
            raise OpError(f"ops.shape_from_data: {kind}'s shape-like inputs must be integer "
                          f"tensors, got {t.dtype}")
    if kind == "Unique":  # values, then three int64 index tensors
        if len(dims) != 4:
            raise OpError(f"ops.shape_from_data: Unique has 4 outputs, dims declares {len(dims)}")
        return tuple(TensorType(out_dtype if k == 0 else DType.I64, s) for k, s in enumerate(dims))
    if kind == "TopK":
        if len(dims) != 2:
            raise OpError(f"ops.shape_from_data: TopK has two outputs, dims declares {len(dims)}")
        return TensorType(out_dtype, dims[0]), TensorType(DType.I64, dims[1])
    if kind != "Split" and len(dims) != 1:
        raise OpError(f"ops.shape_from_data: {kind} has one output, dims declares {len(dims)}")
    types = tuple(TensorType(out_dtype, s) for s in dims)
    return types if kind == "Split" else types[0]


def _samples(rng):
    r = rng.standard_normal
    i64 = np.int64
    yield Sample(args=(r((2, 3, 4)), np.array([4, 0, -1], i64)),
                 params={"kind": "Reshape", "dims": ((4, 3, 2),)}, grad=False, name="reshape")
    yield Sample(args=(r((3, 1)), np.array([2, 1, 4], i64)),
                 params={"kind": "Expand", "dims": ((2, 3, 4),)}, grad=False, name="expand")
    yield Sample(args=(np.array([2, 3], i64),),
                 params={"kind": "ConstantOfShape", "dims": ((2, 3),), "value": 1.5,
                         "dtype": DType.F32}, grad=False, name="constant_of_shape")
    # integer bounds (float ones are checked against ONNX Runtime in test_onnx_data_shapes)
    yield Sample(args=(np.array(1, i64), np.array(10, i64), np.array(3, i64)),
                 params={"kind": "Range", "dims": ((3,),)}, grad=False, name="range")
    yield Sample(args=(r((5, 4)), np.array([1, -1], i64), np.array([4, -100], i64), None,
                       np.array([2, -1], i64)),
                 params={"kind": "Slice", "dims": ((2, 4),)}, grad=False, name="slice")
    yield Sample(args=(r((6, 2)), np.array([1, 5], i64)),
                 params={"kind": "Split", "dims": ((1, 2), (5, 2)), "axis": 0}, grad=False,
                 name="split")
    yield Sample(args=(r((1, 3, 1)), np.array([0, -1], i64)),
                 params={"kind": "Squeeze", "dims": ((3,),)}, grad=False, name="squeeze")
    yield Sample(args=(r((3, 4)), np.array([0, -1], i64)),
                 params={"kind": "Unsqueeze", "dims": ((1, 3, 4, 1),)}, grad=False,
                 name="unsqueeze")
    for kind in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"):
        yield Sample(args=(r((2, 3, 4)), np.array([2, 0], i64)),
                     params={"kind": kind, "dims": ((3,),), "keepdims": False}, grad=False,
                     name=kind.lower())
    yield Sample(args=(r((2, 3)), np.array([], i64)),
                 params={"kind": "ReduceSum", "dims": ((2, 3),), "noop_with_empty_axes": True},
                 grad=False, name="reduce_noop")
    for kind in ("ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"):
        yield Sample(args=(r((2, 3, 4)), np.array([1], i64)),
                     params={"kind": kind, "dims": ((2, 1, 4),)}, grad=False, name=kind.lower())
    yield Sample(args=(np.abs(r((2, 3))) + 0.5, np.array([0], i64)),
                 params={"kind": "ReduceLogSum", "dims": ((3,),), "keepdims": False},
                 grad=False, name="reducelogsum")
    for mode in PAD_MODES:
        yield Sample(args=(r((3, 4)), np.array([1, 2, 2, 0], i64), np.array(1.5)),
                     params={"kind": "Pad", "dims": ((6, 6),), "mode": mode}, grad=False,
                     name=f"pad_{mode}")
    yield Sample(args=(r((2, 3, 4)), np.array([1, 0, 0, 1], i64), None, np.array([1, 2], i64)),
                 params={"kind": "Pad", "dims": ((2, 4, 5),)}, grad=False, name="pad_axes")
    yield Sample(args=(r((2, 5)), np.array(1, i64)),
                 params={"kind": "CumSum", "dims": ((2, 5),), "exclusive": True,
                         "reverse": True}, grad=False, name="cumsum_exclusive_reverse")
    # CumProd (ONNX opset 26, which this ONNX Runtime does not run) is checked against onnx's
    # reference in tests/test_onnx_issue25_ops.py
    ties = np.array([[3, 1, 3, 2, 1], [0, 5, 5, 5, 1]], np.float64)
    for largest in (True, False):
        yield Sample(args=(ties, np.array([3], i64)),
                     params={"kind": "TopK", "dims": ((2, 3), (2, 3)), "axis": 1,
                             "largest": largest}, grad=False, name=f"topk_largest_{largest}")
    x = r((3, 4)) * (r((3, 4)) > 0)
    yield Sample(args=(x,), params={"kind": "NonZero", "dims": ((2, int((x != 0).sum())),)},
                 grad=False, name="nonzero")
    cond = np.array([True, False, True])
    yield Sample(args=(r((4, 3)), cond), params={"kind": "Compress", "dims": ((4, 2),),
                                                 "axis": 1}, grad=False, name="compress")
    yield Sample(args=(r((4, 3)), np.array([0, 1, 1], np.int64) > 0),
                 params={"kind": "Compress", "dims": ((2, 3),), "axis": 0}, grad=False,
                 name="compress_short_condition")
    u = np.array([[2, 1], [0, 5], [2, 1], [0, 5], [3, 3]], np.int64)
    for keep_sorted in (True, False):
        yield Sample(args=(u,), params={"kind": "Unique", "dims": ((3, 2), (3,), (5,), (3,)),
                                        "axis": 0, "keepdims": keep_sorted}, grad=False,
                     name=f"unique_rows_{'sorted' if keep_sorted else 'unsorted'}")
    yield Sample(args=(np.array([3.0, 1.0, 3.0, 2.0, 1.0], np.float32),),
                 params={"kind": "Unique", "dims": ((3,), (3,), (5,), (3,)), "keepdims": False},
                 grad=False, name="unique_unsorted")


shape_from_data = OpDef(
    name="shape_from_data", inputs=("x?", "a?", "b?", "c?", "d?"),
    params={"kind": Param(kind="str", choices=KINDS, doc="the ONNX op type it computes"),
            "dims": Param(kind="any", doc="one shape per output: sizes known at import, data "
                                          "sizes (symbols bound at run time) elsewhere"),
            "axis": Param(kind="int", default=0, doc="Split's and Compress's axis"),
            "keepdims": Param(kind="bool", default=True,
                              doc="Reduce*'s keepdims; Unique's sorted"),
            "noop_with_empty_axes": Param(kind="bool", default=False),
            "allowzero": Param(kind="bool", default=False, doc="Reshape's allowzero"),
            "value": Param(kind="scalar", default=0, doc="ConstantOfShape's value"),
            "dtype": Param(kind="dtype", default=None, optional=True,
                           doc="ConstantOfShape's dtype"),
            "mode": Param(kind="str", default="constant", choices=PAD_MODES, doc="Pad's mode"),
            "exclusive": Param(kind="bool", default=False, doc="CumSum's / CumProd's exclusive"),
            "reverse": Param(kind="bool", default=False, doc="CumSum's / CumProd's reverse"),
            "largest": Param(kind="bool", default=True, doc="TopK's largest"),
            "sorted": Param(kind="bool", default=True, doc="TopK's sorted")},
    kernel=_kernel, infer=_infer,
    vjp=None,  # only ONNX import makes it; sizes read from data are not differentiable
    samples=_samples,
    doc="An ONNX shape op (kind) whose shape, axes or bounds are run-time tensors, inputs in "
        "ONNX's order; dims declares the output shapes (data sizes are bound at run time).",
)

OPS = (shape_from_data,)
