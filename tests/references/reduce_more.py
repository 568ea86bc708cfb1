"""References for the further reductions, scans and sorts of onemodel-ops-basic: Python loops
over the reduced positions, math on Python floats, sorted() with keys; written apart from the
kernels (which use numpy's reductions)."""
import functools
import itertools
import math

import numpy as np


def _axes(axis, ndim):
    if axis is None or axis == ():
        return tuple(range(ndim))
    axis = (axis,) if isinstance(axis, int) else axis
    return tuple(sorted(a % ndim for a in axis))


def _groups(x, axis, keepdims):
    """Yield (output index, list of the group's Python values) for a reduction."""
    x = np.asarray(x)
    axes = _axes(axis, x.ndim) if x.ndim else ()
    kept = [i for i in range(x.ndim) if i not in axes]
    out_shape = tuple(1 if i in axes else x.shape[i] for i in range(x.ndim)) if keepdims \
        else tuple(x.shape[i] for i in kept)
    groups = {}
    for idx in itertools.product(*(range(n) for n in x.shape)):
        key = tuple(0 if i in axes else idx[i] for i in range(x.ndim)) if keepdims \
            else tuple(idx[i] for i in kept)
        groups.setdefault(key, []).append(x[idx].item())
    return out_shape, groups


def _reduce(fn, dtype_of):
    def ref(x, axis=None, keepdims=False, **params):
        shape, groups = _groups(x, axis, keepdims)
        out = np.zeros(shape, dtype=np.float64)
        for k, vals in groups.items():
            out[k] = fn(vals, **params)
        return out.astype(dtype_of(np.asarray(x).dtype))
    return ref


def _floaty(dt):
    return dt if dt.kind == "f" else np.dtype(np.float32)


def _lse(vals):
    m = max(vals)
    if math.isinf(m):
        return m
    return m + math.log(sum(math.exp(v - m) for v in vals))


def _var(vals, correction=None, unbiased=None):
    c = (1 if unbiased else 0) if unbiased is not None else (1 if correction is None else correction)
    mu = sum(vals) / len(vals)
    return sum((v - mu) ** 2 for v in vals) / (len(vals) - c)


def _norm_of(vals, p=2):
    p = 2.0 if p == "fro" else float(p)
    a = [abs(v) for v in vals]
    if p == math.inf:
        return max(a)
    if p == -math.inf:
        return min(a)
    if p == 0:
        return float(sum(1 for v in a if v))
    return sum(v ** p for v in a) ** (1.0 / p)


def _norm(x, p=2, axis=None, keepdims=False):
    return _reduce(lambda vals: _norm_of(vals, p), lambda d: d)(x, axis, keepdims)


def _prod(x, axis=None, keepdims=False):
    ints = np.asarray(x).dtype.kind != "f"
    shape, groups = _groups(x, axis, keepdims)
    out = np.zeros(shape, dtype=np.int64 if ints else np.float64)
    for k, vals in groups.items():
        out[k] = functools.reduce(lambda a, b: a * b, vals, 1)
    return out.astype(np.int64 if ints else np.asarray(x).dtype)


def _argmin(x, axis=None, keepdims=False):
    x = np.asarray(x)
    if axis is None:
        flat = x.reshape(-1).tolist()
        best = min(range(len(flat)), key=lambda i: (flat[i], i))
        return np.array(best, np.int64).reshape((1,) * x.ndim if keepdims else ())
    a = axis % x.ndim
    moved = np.moveaxis(x, a, -1)
    out = np.zeros(moved.shape[:-1], np.int64)
    for idx in np.ndindex(*moved.shape[:-1]):
        row = moved[idx].tolist()
        out[idx] = min(range(len(row)), key=lambda i: (row[i], i))
    return np.expand_dims(out, a) if keepdims else out


# -- scans --------------------------------------------------------------------------------------
def _scan(fn):
    def ref(x, axis):
        x = np.asarray(x)
        dt = x.dtype if x.dtype.kind == "f" else np.dtype(np.int64)
        moved = np.moveaxis(x, axis % max(x.ndim, 1), -1) if x.ndim else x.reshape(1)
        out = np.zeros(moved.shape, np.float64 if dt.kind == "f" else np.int64)
        for idx in np.ndindex(*moved.shape[:-1]):
            acc = None
            for j, v in enumerate(moved[idx].tolist()):
                v = int(v) if dt.kind != "f" else v
                acc = v if acc is None else fn(acc, v)
                out[idx + (j,)] = acc
        out = np.moveaxis(out, -1, axis % max(x.ndim, 1)) if x.ndim else out.reshape(())
        return out.astype(dt)
    return ref


# -- sorting --------------------------------------------------------------------------------------
def _key(v):
    return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)


def _positions(row, descending):
    """Stable order of a Python list; NaN counts as the largest value."""
    if descending:
        return sorted(range(len(row)), key=lambda i: (tuple(-k for k in _key(row[i])), i))
    return sorted(range(len(row)), key=lambda i: (_key(row[i]), i))


def _along(x, axis, fn):
    x = np.asarray(x)
    a = axis % x.ndim
    moved = np.moveaxis(x, a, -1)
    rows = {idx: fn(moved[idx].tolist()) for idx in np.ndindex(*moved.shape[:-1])}
    return a, moved, rows


def _sort(x, axis=-1, descending=False, stable=False):
    a, moved, rows = _along(x, axis, lambda row: _positions(row, descending))
    idx = np.zeros(moved.shape, np.int64)
    val = np.zeros_like(moved)
    for k, pos in rows.items():
        idx[k] = pos
        val[k] = moved[k][pos]
    return np.moveaxis(val, -1, a), np.moveaxis(idx, -1, a)


def _topk(x, k, axis=-1, largest=True, sorted=True):  # noqa: A002
    a, moved, rows = _along(x, axis, lambda row: _positions(row, largest)[:k])
    idx = np.zeros(moved.shape[:-1] + (k,), np.int64)
    val = np.zeros(moved.shape[:-1] + (k,), moved.dtype)
    for key, pos in rows.items():
        idx[key] = pos
        val[key] = moved[key][pos]
    return np.moveaxis(val, -1, a), np.moveaxis(idx, -1, a)


REFERENCES = {
    "logsumexp": _reduce(lambda vals: _lse(vals), _floaty),
    "var": _reduce(_var, lambda d: d),
    "std": _reduce(lambda vals, **p: math.sqrt(_var(vals, **p)), lambda d: d),
    "norm": _norm,
    "amax": _reduce(max, lambda d: d),
    "amin": _reduce(min, lambda d: d),
    "prod": _prod,
    "argmin": _argmin,
    "cumsum": _scan(lambda a, b: a + b),
    "cumprod": _scan(lambda a, b: a * b),
    "sort": _sort,
    "argsort": lambda x, **p: _sort(x, **p)[1],
    "topk": _topk,
}
