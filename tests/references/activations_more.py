"""References for activation_more (onemodel-ops-nn): element by element in Python floats with the
math module, from each activation's textbook definition (not the kernels' overflow-free forms;
math.exp's overflow is sidestepped by the branch the definition takes)."""
import math

import numpy as np

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _each(fn, x, out_dtype=None):
    x = np.asarray(x)
    flat = [fn(float(v)) for v in x.reshape(-1)]
    dt = out_dtype or (x.dtype if x.dtype.kind == "f" else np.float32)
    return np.array(flat, dtype=np.float64).reshape(x.shape).astype(dt)


def _sigmoid(v):
    return 1.0 / (1.0 + math.exp(-v)) if v >= 0 else math.exp(v) / (1.0 + math.exp(v))


def _log1pexp(v):
    """log(1 + e^v): e^v overflows past 709, where the result is v to double precision."""
    return v if v > 700 else math.log1p(math.exp(v))


def softplus(x, beta=1.0, threshold=20.0):
    return _each(lambda v: v if v * beta > threshold else _log1pexp(beta * v) / beta, x)


def mish(x):
    return _each(lambda v: v * math.tanh(_log1pexp(v)), x)


def log_sigmoid(x):
    return _each(lambda v: -_log1pexp(-v), x)


def elu(x, alpha=1.0):
    return _each(lambda v: v if v > 0 else alpha * math.expm1(v), x)


def leaky_relu(x, negative_slope=0.01):
    return _each(lambda v: v if v > 0 else negative_slope * v, x)


def _clamp(x, lo, hi):
    x = np.asarray(x)
    if x.dtype.kind != "f":
        return np.array([min(max(int(v), int(lo)), int(hi)) for v in x.reshape(-1)],
                        dtype=x.dtype).reshape(x.shape)
    return _each(lambda v: v if math.isnan(v) else min(max(v, lo), hi), x)


def prelu(x, weight):
    x, w = np.asarray(x), np.asarray(weight).reshape(-1)
    out = np.empty(x.shape, np.float64)
    for idx in np.ndindex(*x.shape):
        c = idx[1] if (x.ndim >= 2 and w.size > 1) else 0
        v = float(x[idx])
        out[idx] = v if v > 0 else float(w[c]) * v
    return out.astype(x.dtype)


def glu(x, axis=-1):
    x = np.asarray(x)
    axis %= x.ndim
    n = x.shape[axis] // 2
    a = np.take(x, range(n), axis=axis)
    b = np.take(x, range(n, 2 * n), axis=axis)
    return (a * _each(_sigmoid, b)).astype(x.dtype)


REFERENCES = {
    "softplus": softplus,
    "silu": lambda x: _each(lambda v: v * _sigmoid(v), x),
    "mish": mish,
    "log_sigmoid": log_sigmoid,
    "softsign": lambda x: _each(lambda v: v / (1.0 + abs(v)), x),
    "elu": elu,
    "selu": lambda x: _each(lambda v: SELU_SCALE * (v if v > 0 else SELU_ALPHA * math.expm1(v)),
                            x),
    "leaky_relu": leaky_relu,
    "hardtanh": lambda x, min_val=-1.0, max_val=1.0: _clamp(x, min_val, max_val),
    "relu6": lambda x: _clamp(x, 0.0, 6.0),
    "prelu": prelu,
    "glu": glu,
}
