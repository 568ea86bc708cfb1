"""Small helpers for the layer classes: making parameters, checking arguments."""
from __future__ import annotations

import math
import numbers

import numpy as np

from onemodel import DType, Tensor, tensor
from onemodel.errors import ArgumentError
from onemodel.nn import Parameter


def new_param(shape: tuple, dtype=None) -> Parameter:
    """An uninitialised (zero) float parameter; the layer's ``reset_parameters`` fills it."""
    dt = DType.parse(dtype) if dtype is not None else DType.F32
    if not dt.is_float:
        raise ArgumentError(f"parameters must have a floating-point dtype, got {dt}")
    return Parameter(Tensor.from_numpy(np.zeros(tuple(shape), dtype=dt.numpy)))


def weight_and_bias(layer, weight_shape: tuple, bias_size: int | None, dtype=None) -> None:
    """``layer.weight`` of ``weight_shape`` and ``layer.bias`` of ``bias_size`` (None: a
    registered None), then ``layer.reset_parameters()``: how Linear and the convolutions start."""
    layer.weight = new_param(weight_shape, dtype)
    if bias_size is not None:
        layer.bias = new_param((bias_size,), dtype)
    else:
        layer.register_parameter("bias", None)
    layer.reset_parameters()


def reset_weight_and_bias(layer, draw_at_zero_fan_in: bool = False) -> None:
    """PyTorch's default start for Linear and the convolutions: the weight Kaiming-uniform with
    ``a = sqrt(5)``, the bias uniform in +-1/sqrt(fan_in). With ``fan_in`` 0 the bias stays 0;
    Linear still draws it from [0, 0], as torch does, so a seeded run draws the same numbers."""
    from onemodel.nn import init

    init.kaiming_uniform_(layer.weight, a=math.sqrt(5))
    if layer.bias is None:
        return
    fan_in, _ = init.calculate_fan_in_and_fan_out(layer.weight)
    if fan_in > 0 or draw_at_zero_fan_in:
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        init.uniform_(layer.bias, -bound, bound)


def new_buffer(value: float, shape: tuple, dtype) -> Tensor:
    dt = DType.parse(dtype) if dtype is not None else DType.F32
    return Tensor.from_numpy(np.full(tuple(shape), value, dtype=dt.numpy))


def positive_int(layer: str, name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ArgumentError(f"{layer}: {name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def pair(layer: str, name: str, value, minimum: int = 0) -> tuple[int, int]:
    """PyTorch's ``_pair``: an int or a pair of ints as a pair."""
    vals = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(vals) != 2:
        raise ArgumentError(f"{layer}: {name} must be an int or a pair of ints, got {value!r}")
    return tuple(positive_int(layer, name, v, minimum) for v in vals)  # type: ignore[return-value]


def probability(layer: str, name: str, p) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{layer}: {name} must be a probability between 0 and 1, got {p!r}")
    return float(p)


def reduction(layer: str, value: str) -> str:
    if value not in ("mean", "sum", "none"):
        raise ArgumentError(f"{layer}: reduction must be 'mean', 'sum' or 'none', got {value!r}")
    return value


def as_tensor(x) -> Tensor:
    """Tensors as they are, numpy arrays without a copy, lists and scalars as ``om.tensor`` does."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return Tensor.from_numpy(x)
    return tensor(x)
