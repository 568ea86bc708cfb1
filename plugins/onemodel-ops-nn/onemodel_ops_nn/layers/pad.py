"""The padding layers: ZeroPad2d, ConstantPad1d/2d, ReflectionPad1d/2d, ReplicationPad1d/2d.

``padding`` is an int (every side) or PyTorch's tuple (left, right[, top, bottom]); the layers
call ``ops.pad``, which pads the last axes in that order.
"""
from __future__ import annotations

import numbers

from onemodel import ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule

from ._checks import real


def _sides(layer: str, padding, n: int) -> tuple[int, ...]:
    vals = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * n
    if len(vals) != n or any(isinstance(v, bool) or not isinstance(v, numbers.Integral)
                             for v in vals):
        raise ArgumentError(f"{layer}: padding must be an int or a tuple of {n} ints, got "
                            f"{padding!r}")
    return tuple(int(v) for v in vals)


class _PadNd(NnModule):
    _sides_count = 2
    _mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        name = type(self).__name__
        self.padding = _sides(name, padding, self._sides_count)
        if self._mode != "constant" and any(p < 0 for p in self.padding):
            raise ArgumentError(f"{name}: padding must be >= 0, got {padding!r}")

    def _value(self) -> float:
        return 0.0

    def forward(self, x):
        nd = self._sides_count // 2
        if x.ndim not in (nd + 1, nd + 2):
            raise ArgumentError(f"{type(self).__name__}: expected {nd + 1}D or {nd + 2}D input, "
                                f"got {x.ndim}D")
        if self._mode == "constant":
            return ops.pad(x, pad=self.padding, mode="constant", value=self._value())
        return ops.pad(x, pad=self.padding, mode=self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPad(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = real(type(self).__name__, "value", value)

    def _value(self) -> float:
        return self.value

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPad):
    """Pads the last axis of (N, C, L) or (C, L) with ``value``."""


class ConstantPad2d(_ConstantPad):
    """Pads the last two axes of (N, C, H, W) or (C, H, W) with ``value``."""

    _sides_count = 4


class ZeroPad2d(ConstantPad2d):
    """Pads the last two axes with zeros."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pads the last axis with its reflection (the edge not repeated)."""

    _mode = "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last two axes with their reflection."""

    _sides_count = 4
    _mode = "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last axis by repeating its edge values."""

    _mode = "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last two axes by repeating their edge values."""

    _sides_count = 4
    _mode = "replicate"


__all__ = ["ConstantPad1d", "ConstantPad2d", "ZeroPad2d", "ReflectionPad1d", "ReflectionPad2d",
           "ReplicationPad1d", "ReplicationPad2d"]
