"""Helpers shared by the nn op records: dtype checks, pair params, reductions, sample makers."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType, TensorType, promote_types
from onemodel.core.guards import require
from onemodel.core.symbolic import Dim
from onemodel.core.types import same_dim
from onemodel.errors import OpError

REDUCTIONS = ("mean", "sum", "none")

LOSS_UNTRACEABLE = ("losses are for training; trace the model and compute the loss outside the "
                    "graph")


def float_dtype(op: str, *types: TensorType | None) -> DType:
    """The promoted float dtype of the given (non-None) inputs; an int input is an error."""
    present = [t for t in types if t is not None]
    for t in present:
        if not t.dtype.is_float:
            raise OpError(f"ops.{op} expects floating-point tensors, got {t}")
    return promote_types(*(t.dtype for t in present))


def int_dtype(op: str, what: str, t: TensorType) -> None:
    if not t.dtype.is_int:
        raise OpError(f"ops.{op}: {what} must be an integer tensor, got {t}")


def as_dtype(a: np.ndarray | None, dtype: np.dtype) -> np.ndarray | None:
    """``a`` in ``dtype`` without a copy when it already is."""
    if a is None or a.dtype == dtype:
        return a
    return a.astype(dtype)


def result_dtype(*arrays) -> np.dtype:
    """The kernel-side equivalent of `float_dtype` (the promoted float numpy dtype)."""
    ds = [DType.from_numpy(a.dtype) for a in arrays if a is not None]
    return promote_types(*ds).numpy


def pair(op: str, name: str, value, minimum: int = 0) -> tuple:
    """An int or a pair of ints as a pair (PyTorch's ``_pair``), checked against ``minimum``."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise OpError(f"ops.{op}: {name} must be an int or a pair of ints, got {value!r}")
        out = tuple(value)
    else:
        out = (value, value)
    for v in out:
        if not isinstance(v, Dim) and int(v) < minimum:
            raise OpError(f"ops.{op}: {name} must be >= {minimum}, got {value!r}")
    return out


def check_dim(op: str, what: str, got, want) -> None:
    if not same_dim(got, want):
        raise OpError(f"ops.{op}: {what} is {got}, expected {want}")


def require_window(op: str, axis: str, size, kernel, dilation, pad_before, pad_after,
                   slack=0) -> None:
    """On a symbolic axis, the window (``dilation * (kernel - 1) + 1`` wide) must fit in the
    input and its padding, less ``slack`` (``stride - 1`` in ceil mode, where a last partial
    window counts): the graph's guard for what `check_positive_size` checks on a fixed axis,
    so a session refuses a too-short input by name instead of a backend computing an empty or
    negative size."""
    if not any(isinstance(v, Dim) for v in (size, kernel, dilation, pad_before, pad_after)):
        return
    extent = dilation * (kernel - 1) + 1
    pads = pad_before + pad_after
    padded = f", padding {pads}" if not isinstance(pads, int) or pads else ""
    require(extent - pads - slack, size,
            f"the window of ops.{op} along the {axis} (kernel {kernel}, dilation {dilation}"
            f"{padded}) must fit in the input")


def check_positive_size(op: str, what: str, size) -> None:
    if not isinstance(size, Dim) and size <= 0:
        raise OpError(f"ops.{op}: {what} would be {size} (input too small for the window)")


def reduce_loss(per_elem: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "none":
        return per_elem
    if reduction == "sum":
        return per_elem.sum(dtype=per_elem.dtype)
    return per_elem.mean(dtype=per_elem.dtype)


def loss_grad_scale(g: np.ndarray, shape: tuple, reduction: str, dtype) -> np.ndarray:
    """The upstream gradient of a reduced loss spread back over the per-element losses."""
    if reduction == "none":
        return g
    g = np.asarray(g, dtype=dtype)
    if reduction == "mean":
        n = int(np.prod(shape))
        g = g / n if n else g
    return np.broadcast_to(g, shape)


def loss_infer(shape: tuple, reduction: str, dtype: DType) -> TensorType:
    return TensorType(dtype, shape if reduction == "none" else ())
