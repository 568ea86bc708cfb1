"""Small helpers for the layer classes: making parameters, checking arguments."""
from __future__ import annotations

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
