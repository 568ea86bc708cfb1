"""References for elementwise_math, division and logical (onemodel-ops-basic): element by element
with Python's math module and operators (``%``, ``//``, ``round`` are Python's, which torch
follows), not the numpy ufuncs the kernels call. Dtypes follow PyTorch (spelled out here)."""
import math

import numpy as np

from .basic import _promote


def _each(fn, *arrays, otype=np.float64):
    """``fn`` on Python scalars, element by element after broadcasting."""
    arrays = np.broadcast_arrays(*[np.asarray(a) for a in arrays])
    flat = [fn(*(v.item() for v in vals)) for vals in zip(*(a.reshape(-1) for a in arrays))]
    return np.array(flat, dtype=otype).reshape(arrays[0].shape)


def _float_dtype(*arrays):
    dt = _promote(*arrays)
    return dt if dt.kind == "f" else np.dtype(np.float32)


def _float_unary(fn):
    def ref(x):
        return _each(fn, np.asarray(x, dtype=np.float64)).astype(_float_dtype(x))
    return ref


def _keep_int(fn):
    def ref(x, **params):
        x = np.asarray(x)
        if x.dtype.kind != "f":
            return x.copy()
        return _each(lambda v: fn(v, **params), x).astype(x.dtype)
    return ref


def _floor(v):
    return v if not math.isfinite(v) else float(math.floor(v))


def _ceil(v):
    return v if not math.isfinite(v) else float(math.ceil(v))


def _round(v, decimals=0):
    if not math.isfinite(v):
        return v
    if decimals >= 0:
        s = 10.0 ** decimals
        return round(v * s) / s  # Python's round of a float to an int is half to even
    s = 10.0 ** -decimals
    return round(v / s) * s


def _sign(x):
    x = np.asarray(x)
    if x.dtype.kind == "b":
        return x.copy()
    return _each(lambda v: 1 if v > 0 else -1 if v < 0 else 0, x, otype=x.dtype)


def _binary_numeric(fn):
    def ref(a, b):
        dt = _promote(a, b)
        if dt.kind == "f":
            return _each(lambda x, y: fn(float(x), float(y)), a, b).astype(dt)
        return _each(lambda x, y: fn(int(x), int(y)), a, b, otype=dt)
    return ref


def _py_mod(x, y):
    if isinstance(x, float) and y == 0:
        return math.nan
    return x % y


def _py_floordiv(x, y):
    if isinstance(x, float) and y == 0:
        return math.copysign(math.inf, x) * math.copysign(1.0, y) if x else math.nan
    return x // y


def _c_fmod(x, y):
    if isinstance(x, float):
        return math.nan if y == 0 else math.fmod(x, y)
    r = abs(x) % abs(y)
    return -r if x < 0 else r


def _atan2(a, b):
    dt = _float_dtype(a, b)
    return _each(math.atan2, np.asarray(a, np.float64), np.asarray(b, np.float64)).astype(dt)


def _isclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    dt = _promote(a, b)

    def close(x, y):
        if x == y:
            return True
        if isinstance(x, float) and math.isnan(x) and math.isnan(y):
            return equal_nan
        err = abs(float(x) - float(y))
        return math.isfinite(err) and err <= atol + rtol * abs(float(y))

    return _each(close, np.asarray(a).astype(dt), np.asarray(b).astype(dt), otype=bool)


def _truth(fn):
    def ref(*arrays):
        return _each(lambda *vs: fn(*(bool(v) for v in vs)), *arrays, otype=bool)
    return ref


REFERENCES = {
    "sin": _float_unary(math.sin),
    "cos": _float_unary(math.cos),
    "tan": _float_unary(math.tan),
    "atan": _float_unary(math.atan),
    "asin": _float_unary(math.asin),
    "acos": _float_unary(math.acos),
    "log1p": _float_unary(math.log1p),
    "expm1": _float_unary(math.expm1),
    "rsqrt": _float_unary(lambda v: 1.0 / math.sqrt(v)),
    "atan2": _atan2,
    "floor": _keep_int(_floor),
    "ceil": _keep_int(_ceil),
    "round": _keep_int(_round),
    "sign": _sign,
    "remainder": _binary_numeric(_py_mod),
    "fmod": _binary_numeric(_c_fmod),
    "floor_divide": _binary_numeric(_py_floordiv),
    "isclose": _isclose,
    "logical_and": _truth(lambda x, y: x and y),
    "logical_or": _truth(lambda x, y: x or y),
    "logical_not": _truth(lambda x: not x),
}
