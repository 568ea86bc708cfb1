"""Entries: what an ONNX value is while importing (a constant, sizes, or a graph value).

Rules and the size evaluator look at the kind of entry to decide whether a node folds, stays
symbolic shape arithmetic, or becomes a OneModel node.
"""
from __future__ import annotations

import numpy as np

from ...core.dtype import DType
from ...core.symbolic import Dim
from ...core.types import TensorType


class Entry:
    __slots__ = ()


class Const(Entry):
    __slots__ = ("array", "source")

    def __init__(self, array: np.ndarray, source: str | None = None):
        self.array = array
        self.source = source  # the ONNX name it came from (names the initializer)

    def __repr__(self):
        return f"Const({self.array.dtype}{list(self.array.shape)})"


class Sym(Entry):
    """An integer tensor whose entries are ints and symbolic sizes (an object array)."""

    __slots__ = ("array", "dtype", "_data")

    def __init__(self, array: np.ndarray, dtype: DType = DType.I64):
        self.array = array
        self.dtype = dtype
        self._data = None  # the run-time tensor computing it, once something uses it as data

    def __repr__(self):
        return f"Sym({[str(v) for v in self.array.reshape(-1)]})"


class Val(Entry):
    __slots__ = ("name", "type")

    def __init__(self, name: str, type: TensorType):
        self.name = name
        self.type = type

    def __repr__(self):
        return f"Val(%{self.name}: {self.type})"


def _sym_or_const(arr: np.ndarray, dtype: DType) -> Entry:
    if any(isinstance(v, Dim) for v in arr.reshape(-1)):
        return Sym(arr, dtype)
    return Const(arr.astype(dtype.numpy))
