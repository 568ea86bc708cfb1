"""Unflatten: one axis into several (the inverse of Flatten)."""
from __future__ import annotations

import numbers

from onemodel import ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule


class Unflatten(NnModule):
    """Splits axis ``dim`` into ``unflattened_size`` (a tuple of ints; one may be -1)."""

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise ArgumentError(f"Unflatten: dim must be an int, got {dim!r} (named tensors are "
                                f"not supported)")
        if not isinstance(unflattened_size, (tuple, list)) or not unflattened_size or any(
                isinstance(s, bool) or not isinstance(s, numbers.Integral)
                or (s < 1 and s != -1) for s in unflattened_size):
            raise ArgumentError(f"Unflatten: unflattened_size must be a tuple of ints (one may "
                                f"be -1), got {unflattened_size!r}")
        if list(unflattened_size).count(-1) > 1:
            raise ArgumentError(f"Unflatten: only one size of unflattened_size may be -1, got "
                                f"{unflattened_size!r}")
        self.dim = int(dim)
        self.unflattened_size = unflattened_size

    def forward(self, x):
        return ops.unflatten(x, axis=self.dim, sizes=tuple(self.unflattened_size))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


__all__ = ["Unflatten"]
