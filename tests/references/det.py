"""Reference for det (onemodel-ops-basic): Laplace (cofactor) expansion along the first row in
float64, written out, not LAPACK's LU."""
import numpy as np


def _laplace(m):
    n = len(m)
    if n == 1:
        return m[0][0]
    return sum((-1) ** j * m[0][j] * _laplace([row[:j] + row[j + 1:] for row in m[1:]])
               for j in range(n))


def _det(x):
    x = np.asarray(x)
    flat = x.reshape((-1,) + x.shape[-2:]).astype(np.float64)
    out = [_laplace(m.tolist()) for m in flat]
    return np.array(out, dtype=np.float64).reshape(x.shape[:-2]).astype(x.dtype)


REFERENCES = {"det": _det}
