"""References for the data-dependent ops: plain loops over the elements, no np.nonzero/np.unique."""
import itertools

import numpy as np


def nonzero(x, as_tuple=False):
    idx = [i for i in itertools.product(*map(range, x.shape)) if x[i]] if x.ndim else (
        [()] if x else [])
    if as_tuple:
        if x.ndim == 0:
            return (np.zeros(len(idx), np.int64),)
        return tuple(np.array([i[a] for i in idx], np.int64) for a in range(x.ndim))
    return np.array(idx, np.int64).reshape(len(idx), x.ndim)


def unique(x, sorted=True, return_inverse=False, return_counts=False, axis=None):
    items = list(x.reshape(-1)) if axis is None else [
        np.take(x, i, axis=axis) for i in range(x.shape[axis])]
    keys = [tuple(np.asarray(v).reshape(-1).tolist()) for v in items]
    seen = []
    for k in keys:
        if k not in seen:
            seen.append(k)
    if sorted:
        seen = builtins_sorted(seen)
    inverse = np.array([seen.index(k) for k in keys], np.int64)
    counts = np.array([keys.count(k) for k in seen], np.int64)
    if axis is None:
        values = np.array([k[0] for k in seen], x.dtype)
        inverse = inverse.reshape(x.shape)
    else:
        first = [keys.index(k) for k in seen]
        values = np.stack([items[i] for i in first], axis=axis) if first else \
            np.take(x, [], axis=axis)
    outs = [values] + ([inverse] if return_inverse else []) + ([counts] if return_counts else [])
    return tuple(outs) if len(outs) > 1 else values


builtins_sorted = sorted


def masked_select(x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    xb, mb = np.broadcast_to(x, shape), np.broadcast_to(mask, shape)
    return np.array([xb[i] for i in itertools.product(*map(range, shape)) if mb[i]], x.dtype)


def index_mask(x, mask):
    picked = [x[i] for i in itertools.product(*map(range, mask.shape)) if mask[i]]
    return np.array(picked, x.dtype).reshape((len(picked),) + x.shape[mask.ndim:])


def index_put_mask(x, mask, value):
    out = x.copy()
    where = [i for i in itertools.product(*map(range, mask.shape)) if mask[i]]
    region = np.broadcast_to(value, (len(where),) + x.shape[mask.ndim:])
    for n, i in enumerate(where):
        out[i] = region[n]
    return out


REFERENCES = {"nonzero": nonzero, "unique": unique, "masked_select": masked_select,
              "index_mask": index_mask, "index_put_mask": index_put_mask}
