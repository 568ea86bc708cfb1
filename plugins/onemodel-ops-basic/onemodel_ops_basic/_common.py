"""Helpers shared by the basic op records: broadcasting inference, promotion, sample makers."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType, TensorType, broadcast_shapes, promote_types


def binary_infer(name: str, result_dtype=None):
    """Inference for a broadcasting binary op (PyTorch promotion; ``result_dtype`` overrides)."""

    def infer(a: TensorType, b: TensorType) -> TensorType:
        shape = broadcast_shapes(a.shape, b.shape, op=f"ops.{name}")
        dtype = result_dtype or promote_types(a.dtype, b.dtype)
        return TensorType(dtype, shape)

    return infer


def same_infer(a: TensorType) -> TensorType:
    return TensorType(a.dtype, a.shape)


def float_infer(a: TensorType) -> TensorType:
    """Same shape; int inputs give f32 (as torch.exp on an int tensor)."""
    return TensorType(a.dtype if a.dtype.is_float else DType.F32, a.shape)


def cast_to(arr: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return arr if arr.dtype == dtype else arr.astype(dtype)


def common(a: np.ndarray, b: np.ndarray) -> np.dtype:
    return promote_types(DType.from_numpy(a.dtype), DType.from_numpy(b.dtype)).numpy
