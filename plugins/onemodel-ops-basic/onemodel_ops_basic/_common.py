"""Helpers shared by the basic op records: broadcasting inference, promotion, axes, sizes."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType, TensorType, broadcast_shapes, normalize_axis, promote_types
from onemodel.core.symbolic import Dim
from onemodel.core.types import same_dim
from onemodel.errors import OpError

__all__ = ["binary_infer", "same_infer", "float_infer", "cast_to", "common", "float_of",
           "dim", "dims", "is_static", "norm_axes", "norm_axis", "np_dtype", "TensorType",
           "DType", "Dim", "same_dim", "OpError", "broadcast_shapes", "promote_types"]


def binary_infer(name: str, result_dtype=None):
    """Inference for a broadcasting binary op (PyTorch promotion; ``result_dtype`` overrides)."""

    def infer(a: TensorType, b: TensorType) -> TensorType:
        shape = broadcast_shapes(a.shape, b.shape, op=f"ops.{name}")
        dtype = result_dtype or promote_types(a.dtype, b.dtype)
        return TensorType(dtype, shape)

    return infer


def same_infer(a: TensorType) -> TensorType:
    return TensorType(a.dtype, a.shape)


def float_of(dtype: DType) -> DType:
    """``dtype`` if it is a float type, else f32 (PyTorch's default float type)."""
    return dtype if dtype.is_float else DType.F32


def float_infer(a: TensorType) -> TensorType:
    """Same shape; int inputs give f32 (as torch.exp on an int tensor)."""
    return TensorType(float_of(a.dtype), a.shape)


def cast_to(arr: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return arr if arr.dtype == dtype else arr.astype(dtype)


def np_dtype(arr: np.ndarray) -> DType:
    return DType.from_numpy(arr.dtype)


def common(*arrays: np.ndarray) -> np.dtype:
    """The numpy dtype PyTorch promotion gives these arrays."""
    return promote_types(*(DType.from_numpy(a.dtype) for a in arrays)).numpy


def dim(v):
    """A size as inference sees it: an int or a `Dim` (a tracer's SymInt becomes its expression)."""
    expr = getattr(v, "expr", None)
    if expr is not None and not isinstance(v, (int, Dim)):
        return expr
    return v


def dims(values) -> tuple:
    return tuple(dim(v) for v in values)


def is_static(*values) -> bool:
    """True when every size is a plain int (no symbolic `Dim`)."""
    return not any(isinstance(v, Dim) for v in values)


def norm_axis(axis, ndim: int, op: str) -> int:
    return normalize_axis(axis, ndim, op=f"ops.{op}")


def norm_axes(axis, ndim: int, op: str) -> tuple[int, ...]:
    """``axis`` None (or an empty tuple: PyTorch and ONNX reduce every axis then), an int or a
    sequence of ints -> sorted, non-negative, distinct axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        axis = (int(axis),)
    axes = tuple(normalize_axis(int(a), ndim, op=f"ops.{op}") for a in axis)
    if not axes:
        return tuple(range(ndim))
    if ndim == 0:
        return ()
    if len(set(axes)) != len(axes):
        raise OpError(f"ops.{op}: axis {tuple(axis)} repeats an axis")
    return tuple(sorted(axes))
