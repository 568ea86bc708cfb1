"""Parameter initialisers (PyTorch's ``nn.init``), drawing from the seeded generator.

Each changes its tensor in place, outside autograd, and returns it. ``om.manual_seed(n)`` makes
every draw reproducible. Fan computations follow PyTorch: for a weight of shape
``(out, in, *kernel)`` fan_in is ``in * prod(kernel)`` and fan_out ``out * prod(kernel)``.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.random import generator
from ..core.tensor import Tensor
from ..errors import ArgumentError


def _write(t: Tensor, values: np.ndarray) -> Tensor:
    t._data[...] = values.astype(t._data.dtype, copy=False)
    t._version += 1
    return t


def calculate_fan_in_and_fan_out(t: Tensor) -> tuple[int, int]:
    shape = t._data.shape
    if len(shape) < 2:
        raise ArgumentError("fan in and fan out can not be computed for a tensor with fewer than 2 "
                            f"dimensions (shape {shape})")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ArgumentError(f"unsupported nonlinearity {nonlinearity!r}")


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    return _write(t, generator().uniform(a, b, t._data.shape))


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    return _write(t, mean + std * generator().standard_normal(t._data.shape))


def constant_(t: Tensor, val: float) -> Tensor:
    return _write(t, np.full(t._data.shape, val))


def zeros_(t: Tensor) -> Tensor:
    return constant_(t, 0.0)


def ones_(t: Tensor) -> Tensor:
    return constant_(t, 1.0)


def kaiming_uniform_(t: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan). With ``a=sqrt(5)`` (the default of
    Linear and Conv2d) the bound is ``1/sqrt(fan_in)``."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(t)
    fan = fan_in if mode == "fan_in" else fan_out
    if fan == 0:
        return t
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(fan)
    return uniform_(t, -bound, bound)


def kaiming_normal_(t: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    fan_in, fan_out = calculate_fan_in_and_fan_out(t)
    fan = fan_in if mode == "fan_in" else fan_out
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(t, 0.0, std)


def xavier_uniform_(t: Tensor, gain: float = 1.0) -> Tensor:
    fan_in, fan_out = calculate_fan_in_and_fan_out(t)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(t, -bound, bound)


def xavier_normal_(t: Tensor, gain: float = 1.0) -> Tensor:
    fan_in, fan_out = calculate_fan_in_and_fan_out(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


__all__ = ["calculate_fan_in_and_fan_out", "calculate_gain", "uniform_", "normal_", "constant_",
           "zeros_", "ones_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
           "xavier_normal_"]
