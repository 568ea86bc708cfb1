"""References for bitwise.py (onemodel-ops-basic): Python's integer operators element by element
(``&``, ``|``, ``^``, ``~`` on unbounded two's-complement ints), wrapped into the promoted dtype
by modular arithmetic, not numpy's bitwise ufuncs."""
import numpy as np

from .basic import _promote


def _wrap(v: int, dt: np.dtype):
    if dt == np.bool_:
        return bool(v & 1)
    bits = 8 * dt.itemsize
    v &= (1 << bits) - 1
    if dt.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _binary(fn):
    def ref(a, b):
        dt = _promote(a, b)
        a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
        flat = [_wrap(fn(int(x), int(y)), dt) for x, y in zip(a.reshape(-1), b.reshape(-1))]
        return np.array(flat, dtype=dt).reshape(a.shape)
    return ref


def _not(x):
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return np.array([not v for v in x.reshape(-1)], bool).reshape(x.shape)
    return np.array([_wrap(~int(v), x.dtype) for v in x.reshape(-1)], x.dtype).reshape(x.shape)


REFERENCES = {
    "bitwise_and": _binary(lambda x, y: x & y),
    "bitwise_or": _binary(lambda x, y: x | y),
    "bitwise_xor": _binary(lambda x, y: x ^ y),
    "bitwise_not": _not,
}
