"""Reference for scatter_nd (onemodel-ops-basic): loops over the index tuples in order with
Python's operators on each entry, not numpy's fancy indexing or ufunc.at."""
import numpy as np


def _scatter_nd(x, indices, updates, reduction="none"):
    out = np.array(x, copy=True)
    k = indices.shape[-1]
    tuples = np.asarray(indices).reshape(-1, k)
    upd = np.asarray(updates).reshape((tuples.shape[0],) + out.shape[k:])
    for t, u in zip(tuples, upd):
        key = tuple(int(v) % out.shape[j] for j, v in enumerate(t))
        for pos in np.ndindex(*out.shape[k:]):
            here, v = key + pos, u[pos].item()
            old = out[here].item()
            out[here] = {"none": v, "add": old + v, "mul": old * v, "max": max(old, v),
                         "min": min(old, v)}[reduction]
    return out


REFERENCES = {"scatter_nd": _scatter_nd}
