"""References for onemodel-ops-basic: written apart from the kernels, with other numpy calls,
Python loops or math where that is cheap. Dtypes follow PyTorch promotion (spelled out here)."""
import itertools
import math

import numpy as np

_FLOAT_RANK = {np.dtype(np.float16): 0, np.dtype(np.float32): 1, np.dtype(np.float64): 2}


def _promote(*arrays):
    """PyTorch promotion, written out: the widest float wins; else numpy's int promotion."""
    dts = [np.asarray(a).dtype for a in arrays]
    floats = [d for d in dts if d.kind == "f"]
    if floats:
        return max(floats, key=_FLOAT_RANK.__getitem__)
    ints = [d for d in dts if d.kind != "b"]
    if not ints:
        return np.dtype(bool)
    return np.result_type(*ints)


def _binary(fn):
    def ref(a, b):
        dt = _promote(a, b)
        return np.asarray(fn(np.asarray(a).astype(dt), np.asarray(b).astype(dt))).astype(dt)
    return ref


def _floaty(x):
    x = np.asarray(x)
    return x if x.dtype.kind == "f" else x.astype(np.float32)


def _div(a, b):
    dt = _promote(a, b)
    dt = dt if dt.kind == "f" else np.dtype(np.float32)
    return (np.asarray(a, dtype=np.float64) / np.asarray(b, dtype=np.float64)).astype(dt)


def _erf(x):
    x = _floaty(x)
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype)


def _sigmoid(x):
    x = _floaty(x)
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def _compare(fn):
    def ref(a, b):
        dt = _promote(a, b)
        return fn(np.asarray(a).astype(dt), np.asarray(b).astype(dt))
    return ref


def _where(c, x, y):
    dt = _promote(x, y)
    c, x, y = np.broadcast_arrays(c, np.asarray(x).astype(dt), np.asarray(y).astype(dt))
    out = y.copy()
    out[c] = x[c]
    return out


def _clip(x, min=None, max=None):  # noqa: A002
    out = np.array(x, dtype=np.float64)
    if min is not None:
        out[out < min] = min
    if max is not None:
        out[out > max] = max
    return out


def _matmul(a, b):
    dt = _promote(a, b)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a2 = a[None] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    out = np.einsum("...ij,...jk->...ik", *_batch(a2, b2))
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out.astype(dt)


def _batch(a, b):
    """Pad batch axes so einsum's ... broadcast the way matmul does."""
    n = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (n - a.ndim) + a.shape)
    b = b.reshape((1,) * (n - b.ndim) + b.shape)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return (np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:]))


def _transpose(x, axis0, axis1):
    axes = list(range(x.ndim))
    axes[axis0], axes[axis1] = axes[axis1], axes[axis0]
    return np.transpose(x, axes)


def _reshape(x, shape):
    shape = list(shape)
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        shape[shape.index(-1)] = x.size // known
    return np.array(x.ravel()).reshape(shape)


def _flatten(x, start_axis=0, end_axis=-1):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_axis % x.ndim, end_axis % x.ndim
    shape = x.shape[:s] + (int(np.prod(x.shape[s:e + 1])),) + x.shape[e + 1:]
    return x.ravel().reshape(shape)


def _squeeze(x, axis=None):
    if axis is None:
        return x.reshape([d for d in x.shape if d != 1])
    axes = {a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis)}
    return x.reshape([d for i, d in enumerate(x.shape) if not (i in axes and d == 1)])


def _unsqueeze(x, axis):
    axis = axis % (x.ndim + 1)
    return x.reshape(x.shape[:axis] + (1,) + x.shape[axis:])


def _concat(tensors, axis=0):
    dt = _promote(*tensors)
    ax = axis % tensors[0].ndim
    moved = [np.moveaxis(np.asarray(t, dtype=dt), ax, 0) for t in tensors]
    rows = [r for m in moved for r in m]
    return np.moveaxis(np.stack(rows), 0, ax)


def _split(x, sizes, axis=0):
    ax = axis % x.ndim
    n = x.shape[ax]
    if isinstance(sizes, int):
        sizes = [min(sizes, n - i) for i in range(0, n, sizes)]
    out, start = [], 0
    for s in sizes:
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(start, start + s)
        out.append(x[tuple(idx)])
        start += s
    return tuple(out)


def _expand(x, shape):
    lead = len(shape) - x.ndim
    target = [x.shape[i - lead] if (i >= lead and s == -1) else s for i, s in enumerate(shape)]
    return np.broadcast_to(x, target)


def _cast(x, dtype):
    import onemodel as om
    return np.asarray(x).astype(om.DType.parse(dtype).numpy)


def _key(index):
    key = []
    for e in index:
        if isinstance(e, tuple):
            key.append(slice(e[1], e[2], e[3]))
        elif e == "...":
            key.append(Ellipsis)
        else:
            key.append(e)
    return tuple(key)


def _index(x, index):
    return np.array(x[_key(index)])


def _index_put(x, value, index):
    out = np.array(x, copy=True)
    region = out[_key(index)]
    region[...] = np.broadcast_to(np.asarray(value).reshape(np.asarray(value).shape[-region.ndim:]
                                                            if region.ndim else ()), region.shape)
    return out


def _gather(x, indices, axis):
    axis = axis % x.ndim
    out = np.empty(indices.shape, dtype=x.dtype)
    for pos in itertools.product(*map(range, indices.shape)):
        src = list(pos)
        src[axis] = indices[pos]
        out[pos] = x[tuple(src)]
    return out


def _take(x, indices, axis=None):
    if axis is None:
        flat = x.ravel()
        return np.array([flat[i] for i in indices.ravel()], dtype=x.dtype).reshape(indices.shape)
    axis = axis % x.ndim
    moved = np.moveaxis(x, axis, 0)
    picked = np.stack([moved[i] for i in indices.ravel()]).reshape(indices.shape + moved.shape[1:])
    return np.moveaxis(picked.reshape(indices.shape + moved.shape[1:]),
                       list(range(indices.ndim)), list(range(axis, axis + indices.ndim)))


def _reduce(fn, dtype_rule):
    def ref(x, axis=None, keepdims=False):
        x = np.asarray(x)
        axes = tuple(range(x.ndim)) if axis is None else (
            (axis % x.ndim,) if isinstance(axis, int) else tuple(a % x.ndim for a in axis))
        out = np.asarray(x, dtype=np.float64)
        for a in sorted(axes, reverse=True):
            out = fn(out, a)
        if keepdims:
            out = out.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
        return out.astype(dtype_rule(x.dtype))
    return ref


def _sum_dt(d):
    return d if d.kind == "f" else np.dtype(np.int64)


def _mean_dt(d):
    return d if d.kind == "f" else np.dtype(np.float32)


def _argmax(x, axis=None, keepdims=False):
    if axis is None:
        flat = list(x.ravel())
        best = flat.index(max(flat))
        return np.array(best).reshape((1,) * x.ndim if keepdims else ())
    axis = axis % x.ndim
    moved = np.moveaxis(x, axis, -1)
    out = np.empty(moved.shape[:-1], dtype=np.int64)
    for pos in itertools.product(*map(range, out.shape)):
        row = list(moved[pos])
        out[pos] = row.index(max(row))
    return np.expand_dims(out, axis) if keepdims else out


def _full(shape, value, dtype=None):
    import onemodel as om
    if dtype is None:
        dt = np.float32 if isinstance(value, float) else (bool if isinstance(value, bool) else np.int64)
    else:
        dt = om.DType.parse(dtype).numpy
    return np.array([value] * int(np.prod(shape)), dtype=dt).reshape(shape)


def _arange(start, stop=None, step=1, dtype=None):
    import onemodel as om
    if stop is None:
        start, stop = 0, start
    vals, v = [], start
    while (step > 0 and v < stop) or (step < 0 and v > stop):
        vals.append(v)
        v = start + len(vals) * step
    if dtype is None:
        dt = np.float32 if any(isinstance(t, float) for t in (start, stop, step)) else np.int64
    else:
        dt = om.DType.parse(dtype).numpy
    return np.array(vals, dtype=dt)


def _copy(x, src):
    return np.broadcast_to(np.asarray(src), x.shape).astype(x.dtype)


def gather_nd(x, indices, batch_dims=0):
    """Loop over every index tuple (ONNX's definition)."""
    b = batch_dims
    batch_shape = x.shape[:b]
    k = indices.shape[-1]
    rows = []
    for bi in np.ndindex(*batch_shape):
        sub_idx = indices[bi].reshape(-1, k)
        for t in sub_idx:
            rows.append(x[bi + tuple(int(v) for v in t)])
    out = np.array(rows)
    return out.reshape(indices.shape[:-1] + x.shape[b + k:])


REFERENCES = {
    "gather_nd": gather_nd,
    "add": _binary(lambda a, b: a + b),
    "sub": _binary(lambda a, b: a - b),
    "mul": _binary(lambda a, b: a * b),
    "div": _div,
    "neg": lambda x: 0 - x,
    "pow": _binary(lambda a, b: a ** b),
    "exp": lambda x: np.e ** _floaty(x),
    "log": lambda x: np.vectorize(math.log, otypes=[np.float64])(_floaty(x)).astype(_floaty(x).dtype),
    "sqrt": lambda x: _floaty(x) ** 0.5,
    "abs": lambda x: np.where(x < 0, -x, x),
    "tanh": lambda x: np.vectorize(math.tanh, otypes=[np.float64])(_floaty(x)),
    "sigmoid": _sigmoid,
    "relu": lambda x: np.where(x > 0, x, 0).astype(np.asarray(x).dtype),
    "erf": _erf,
    "maximum": _binary(lambda a, b: np.where(a >= b, a, b)),
    "minimum": _binary(lambda a, b: np.where(a <= b, a, b)),
    "where": _where,
    "clip": _clip,
    "less": _compare(lambda a, b: a < b),
    "less_equal": _compare(lambda a, b: a <= b),
    "greater": _compare(lambda a, b: a > b),
    "greater_equal": _compare(lambda a, b: a >= b),
    "equal": _compare(lambda a, b: a == b),
    "not_equal": _compare(lambda a, b: a != b),
    "matmul": _matmul,
    "matmul_t": lambda a, b, transpose_a=False, transpose_b=False: _matmul(
        np.swapaxes(a, -1, -2) if transpose_a else a, np.swapaxes(b, -1, -2) if transpose_b else b),
    "transpose": _transpose,
    "permute": lambda x, axes: np.einsum(x, list(range(x.ndim)), [a % x.ndim for a in axes]),
    "reshape": _reshape,
    "flatten": _flatten,
    "squeeze": _squeeze,
    "unsqueeze": _unsqueeze,
    "concat": _concat,
    "split": _split,
    "expand": _expand,
    "cast": _cast,
    "index": _index,
    "index_put": _index_put,
    "gather": _gather,
    "take": _take,
    "sum": _reduce(lambda a, ax: np.add.reduce(a, axis=ax), _sum_dt),
    "mean": _reduce(lambda a, ax: np.add.reduce(a, axis=ax) / a.shape[ax], _mean_dt),
    "max": _reduce(lambda a, ax: np.maximum.reduce(a, axis=ax), lambda d: d),
    "min": _reduce(lambda a, ax: np.minimum.reduce(a, axis=ax), lambda d: d),
    "argmax": _argmax,
    "any": _reduce(lambda a, ax: np.maximum.reduce(a != 0, axis=ax), lambda d: np.dtype(bool)),
    "all": _reduce(lambda a, ax: np.minimum.reduce(a != 0, axis=ax), lambda d: np.dtype(bool)),
    "full": _full,
    "arange": _arange,
    "fill": lambda x, value: np.ones_like(x) * np.asarray(value).astype(x.dtype),
    "zeros_like": lambda x: x * 0 if x.dtype != bool else np.zeros_like(x),
    "copy": _copy,
    "identity": lambda x: x + 0 if x.dtype != bool else x.copy(),
    "shape_from_data": lambda *a, **p: _shape_from_data(*a, **p),
}


def _shape_from_data(x=None, a=None, b=None, c=None, d=None, *, kind, dims, axis=0,
                     keepdims=True, noop_with_empty_axes=False, allowzero=False, value=0,
                     dtype=None, mode="constant", exclusive=False, reverse=False, largest=True,
                     sorted=True):
    """onnx's own reference evaluator running the one-node ONNX model of the same kind."""
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    arrays = [x, a, b, c, d]
    names = [f"i{k}" if v is not None else "" for k, v in enumerate(arrays)]
    while names and not names[-1]:
        names.pop()
    attrs = {}
    if kind == "Reshape":
        attrs["allowzero"] = int(allowzero)
    elif kind in ("Split", "Compress"):
        attrs["axis"] = axis
    elif kind == "Unique":
        attrs.update(axis=axis, sorted=int(keepdims))
    elif kind.startswith("Reduce"):
        attrs.update(keepdims=int(keepdims), noop_with_empty_axes=int(noop_with_empty_axes))
    elif kind == "Pad":
        attrs["mode"] = mode
    elif kind in ("CumSum", "CumProd"):
        attrs.update(exclusive=int(exclusive), reverse=int(reverse))
    elif kind == "TopK":
        attrs.update(axis=axis, largest=int(largest), sorted=int(sorted))
    elif kind == "ConstantOfShape":
        attrs["value"] = numpy_helper.from_array(np.array([value], dtype.numpy), "value")
    outs = [f"o{k}" for k in range(len(dims))]
    node = helper.make_node(kind, names, outs, **attrs)
    feeds = {n: np.asarray(v) for n, v in zip(names, arrays) if n}
    model = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype),
                                                    v.shape) for n, v in feeds.items()],
        [helper.make_empty_tensor_value_info(o) for o in outs]),
        opset_imports=[helper.make_opsetid("", 21)])
    res = ReferenceEvaluator(model).run(None, feeds)
    return tuple(res) if kind in ("Split", "TopK", "Unique") else res[0]
