"""Small models written on ops, for testing and timing a backend: MLP, CNN, a
TransformerEncoderLayer-like block, deep and wide nets (the project's session tests, the
compiled backend's tests and the benchmarks share them).

Each model function returns ``(fn, shape)``: ``fn`` maps a batch tensor to the output, ``shape``
the input's shape without the batch axis (``None`` for a size the caller picks: the encoder's
sequence length). ``trace(fn, shape)`` traces it with a symbolic batch axis and
``feed(shape, batch)`` makes a deterministic input. Parameters are deterministic per ``seed``.
"""
from __future__ import annotations

import math

import numpy as np

import onemodel as om
from onemodel import DType, Tensor

ops = om.ops


class Params:
    """Deterministic float32 parameters (PyTorch-like init scale)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, *shape, fan_in: int | None = None) -> Tensor:
        scale = 1.0 / math.sqrt(fan_in or shape[-1])
        return Tensor.from_numpy((self.rng.uniform(-1, 1, shape) * scale).astype(np.float32))

    def linear(self, n_in: int, n_out: int) -> tuple[Tensor, Tensor]:
        return self(n_out, n_in), self(n_out, fan_in=n_in)


def mlp(sizes=(784, 512, 512, 10), seed=0):
    p = Params(seed)
    layers = [p.linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]

    def fn(x):
        for i, (w, b) in enumerate(layers):
            x = ops.linear(x, w, b)
            if i < len(layers) - 1:
                x = ops.relu(x)
        return x

    return fn, (sizes[0],)


def cnn(seed=0):
    p = Params(seed)
    w1, b1 = p(16, 1, 3, 3, fan_in=9), p(16, fan_in=9)
    w2, b2 = p(32, 16, 3, 3, fan_in=144), p(32, fan_in=144)
    l1, l2 = p.linear(1568, 128), p.linear(128, 10)

    def fn(x):
        x = ops.max_pool2d(ops.relu(ops.conv2d(x, w1, b1, padding=1)), 2)
        x = ops.max_pool2d(ops.relu(ops.conv2d(x, w2, b2, padding=1)), 2)
        x = x.reshape(x.shape[0], -1)
        x = ops.relu(ops.linear(x, *l1))
        return ops.linear(x, *l2)

    return fn, (1, 28, 28)


def cnn_bn(seed=0):
    """conv + batch norm (eval) + relu, for the batch-norm folding pattern."""
    p = Params(seed)
    w, b = p(4, 2, 3, 3, fan_in=18), p(4, fan_in=18)
    mean, var = p(4), Tensor.from_numpy(np.linspace(0.5, 2.0, 4).astype(np.float32))
    gamma, beta = p(4), p(4)

    def fn(x):
        y = ops.conv2d(x, w, b, padding=1)
        y = ops.batch_norm(y, mean, var, gamma, beta, training=False)
        return ops.relu(y)

    return fn, (2, 6, 6)


def encoder_layer(d=128, heads=4, ffn=512, seed=0, primitives=False):
    """A post-norm TransformerEncoderLayer (PyTorch's default layout), written on ops.

    ``primitives=True`` writes attention, layer norm and GELU out of matmul/softmax/mean/...
    so the recognising passes have something to find."""
    p = Params(seed)
    wq, wk, wv, wo = (p.linear(d, d) for _ in range(4))
    f1, f2 = p.linear(d, ffn), p.linear(ffn, d)
    g1, g2 = Tensor.from_numpy(np.ones(d, np.float32)), Tensor.from_numpy(np.ones(d, np.float32))
    z1, z2 = Tensor.from_numpy(np.zeros(d, np.float32)), Tensor.from_numpy(np.zeros(d, np.float32))
    dh = d // heads

    def norm(x, g, z):
        if not primitives:
            return ops.layer_norm(x, (d,), g, z)
        mu = x.mean(axis=-1, keepdims=True)
        c = x - mu
        var = (c * c).mean(axis=-1, keepdims=True)
        return c / ops.sqrt(var + 1e-5) * g + z

    def gelu(x):
        if not primitives:
            return ops.gelu(x)
        return 0.5 * x * (1.0 + ops.erf(x / math.sqrt(2.0)))

    def fn(x):
        b, s = x.shape[0], x.shape[1]

        def heads_of(t):
            return t.reshape(b, s, heads, dh).transpose(1, 2)

        q, k, v = (heads_of(ops.linear(x, *w)) for w in (wq, wk, wv))
        if primitives:
            scores = ops.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
            a = ops.matmul(ops.softmax(scores, axis=-1), v)
        else:
            a = ops.scaled_dot_product_attention(q, k, v)
        a = a.transpose(1, 2).reshape(b, s, d)
        x = norm(x + ops.linear(a, *wo), g1, z1)
        h = ops.linear(gelu(ops.linear(x, *f1)), *f2)
        return norm(x + h, g2, z2)

    return fn, (None, d)  # (seq, d): seq given by the caller


def deep(n=100, width=64, seed=0):
    p = Params(seed)
    layers = [p.linear(width, width) for _ in range(n)]

    def fn(x):
        for w, b in layers:
            x = ops.relu(ops.linear(x, w, b))
        return x

    return fn, (width,)


def branches(n=8, width=256, seed=0):
    p = Params(seed)
    pairs = [(p.linear(width, width), p.linear(width, width)) for _ in range(n)]

    def fn(x):
        total = None
        for a, b in pairs:
            y = ops.linear(ops.relu(ops.linear(x, *a)), *b)
            total = y if total is None else total + y
        return total

    return fn, (width,)


def trace(fn, shape, axes=("batch",), example_batch=3, check=True):
    """Trace ``fn`` on a random example of ``(example_batch, *shape)``."""
    rng = np.random.default_rng(123)
    ex = Tensor.from_numpy(rng.standard_normal((example_batch, *shape)).astype(np.float32))
    names = list(axes) + [None] * (len(shape) + 1 - len(axes))
    return om.trace(fn, ex, *names, check=check)


def feed(shape, batch, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, *shape)).astype(np.float32)


__all__ = ["mlp", "cnn", "cnn_bn", "encoder_layer", "deep", "branches", "trace", "feed",
           "Params", "DType"]
