"""Argument checks shared by the layers of issue 24 (PyTorch's ``_single``/``_pair``/... forms).

Every refusal is an `ArgumentError` naming the layer and the argument; an argument PyTorch takes
but OneModel does not support is an `UnsupportedArgument` (also a NotImplementedError).
"""
from __future__ import annotations

import numbers
import warnings

from onemodel.errors import ArgumentError

from ._util import positive_int


class UnsupportedArgument(ArgumentError, NotImplementedError):
    """A constructor argument PyTorch accepts but this layer does not implement."""


def ntuple(layer: str, name: str, value, n: int, minimum: int = 0) -> tuple[int, ...]:
    """PyTorch's ``_ntuple(n)``: an int repeated ``n`` times, or a sequence of ``n`` ints."""
    vals = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(vals) != n:
        raise ArgumentError(f"{layer}: {name} must be an int or {n} ints, got {value!r}")
    return tuple(positive_int(layer, name, v, minimum) for v in vals)


def with_batch(layer: str, x, spatial: int):
    """``(x as (N, C, *spatial), whether a batch axis was added)``: PyTorch's layers take
    unbatched (C, *spatial) input too."""
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ArgumentError(f"{layer}: expected {spatial + 1}D (unbatched) or {spatial + 2}D "
                            f"(batched) input, got {x.ndim}D input of shape {tuple(x.shape)}")
    return (x.unsqueeze(0), True) if x.ndim == spatial + 1 else (x, False)


def real(layer: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentError(f"{layer}: {name} must be a number, got {value!r}")
    return float(value)


def non_negative(layer: str, name: str, value) -> float:
    v = real(layer, name, value)
    if v < 0:
        raise ArgumentError(f"{layer}: {name} must be >= 0, got {value!r}")
    return v


def flag(layer: str, name: str, value) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError(f"{layer}: {name} must be True or False, got {value!r}")
    return value


def momentum(layer: str, value) -> float | None:
    if value is None:
        return None
    v = real(layer, "momentum", value)
    if not 0.0 <= v <= 1.0:
        raise ArgumentError(f"{layer}: momentum must be None or between 0 and 1, got {value!r}")
    return v


def legacy_reduction(layer: str, size_average, reduce, reduction: str) -> str:
    """PyTorch's ``_Reduction.legacy_get_string``: the deprecated ``size_average``/``reduce``
    pair, when given, decides the reduction (with PyTorch's warning)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"{layer}: size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", stacklevel=3)
    return ret


__all__ = ["UnsupportedArgument", "ntuple", "with_batch", "real", "non_negative", "flag",
           "momentum", "legacy_reduction"]
