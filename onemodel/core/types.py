"""Tensor types for inference (dtype + possibly symbolic shape) and shape helpers for op records."""
from __future__ import annotations

from typing import Sequence

import attrs

from ..errors import OpError
from .dtype import DType
from .symbolic import Dim, DimLike, format_shape


def _as_tuple(items) -> tuple:
    """The shape converter (a plain ``tuple`` converter types as ``Iterable[_T_co]`` in mypy)."""
    return tuple(items)


@attrs.frozen
class TensorType:
    """What inference knows of a tensor: its dtype and a shape of ints and `Dim` expressions."""

    dtype: DType
    shape: tuple = attrs.field(converter=_as_tuple)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    rank = ndim

    def __str__(self) -> str:
        return f"{self.dtype}{format_shape(self.shape)}"


def broadcast_shapes(*shapes: Sequence[DimLike], op: str = "op") -> tuple:
    """numpy broadcasting on shapes that may hold symbolic sizes.

    A symbolic size broadcasts against 1 and against itself only: against any other number it
    would be right at one size and wrong at the next, so that is an error.
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dim: DimLike = 1
        for s in shapes:
            j = i - (ndim - len(s))
            if j < 0:
                continue
            d = s[j]
            if _same(d, dim) or _is_one(d):
                continue
            if _is_one(dim):
                dim = d
                continue
            raise OpError(f"{op}: shapes {', '.join(format_shape(s) for s in shapes)} cannot be "
                          f"broadcast (axis {i - ndim}: {dim} vs {d})")
        out.append(dim)
    return tuple(out)


def _is_one(d: DimLike) -> bool:
    return not isinstance(d, Dim) and d == 1


def _same(a: DimLike, b: DimLike) -> bool:
    if isinstance(a, Dim) or isinstance(b, Dim):
        return isinstance(a, Dim) and isinstance(b, Dim) and a == b
    return a == b


def same_dim(a: DimLike, b: DimLike) -> bool:
    """Structural equality of two sizes (a Dim never equals an int)."""
    return _same(a, b)


def normalize_axis(axis: int, ndim: int, op: str = "op") -> int:
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise OpError(f"{op}: axis must be an int, got {axis!r}")
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise OpError(f"{op}: axis {axis} is out of range for a tensor of rank {ndim}")
    return axis % max(ndim, 1)


def numel(shape: Sequence[DimLike]) -> DimLike:
    n: DimLike = 1
    for d in shape:
        n = n * d
    return n
