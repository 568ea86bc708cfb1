"""Gradient clipping as ``torch.nn.utils``: by the total norm of all gradients, or by value.

Gradients are changed in place (every reference to ``p.grad`` sees it); parameters without a
gradient are skipped, as in torch.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ...core.tensor import Tensor
from ...errors import ArgumentError, OneModelError


class NonFiniteNormError(OneModelError, RuntimeError):
    """``clip_grad_norm_(..., error_if_nonfinite=True)`` met a nan or infinite total norm."""


def _params(parameters: Any, fn: str) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    try:
        params = list(parameters)
    except TypeError:
        raise ArgumentError(f"{fn}: parameters must be a Tensor or an iterable of Tensors, got "
                            f"{type(parameters).__name__}") from None
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise ArgumentError(f"{fn}: parameters[{i}] is a {type(p).__name__}, not a Tensor")
    return params


def _number(fn: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
        raise ArgumentError(f"{fn}: {name} must be a number, got {value!r}")
    return float(value)


def _vector_norm(x: np.ndarray, p: float) -> np.ndarray:
    """``torch.linalg.vector_norm(x, p)`` in ``x``'s dtype."""
    a = np.abs(x.reshape(-1))
    if a.size == 0:
        return np.zeros((), x.dtype)
    if p == math.inf:
        return a.max()
    if p == -math.inf:
        return a.min()
    if p == 0:
        return np.asarray(np.count_nonzero(a), x.dtype)
    if p == 1:
        return a.sum(dtype=x.dtype)
    if p == 2:
        return np.sqrt(np.dot(a, a))
    return np.power(np.power(a, p).sum(dtype=x.dtype), 1.0 / p)


def _scale(g: Tensor, coef) -> None:
    data = g._data
    with np.errstate(invalid="ignore", over="ignore"):  # a non-finite norm, as torch: silent
        if data.flags.writeable:
            np.multiply(data, coef, out=data, casting="unsafe")
        else:
            g._data = (data * coef).astype(data.dtype)
    g._version += 1


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale every gradient by ``min(1, max_norm / (total_norm + 1e-6))``, where
    ``total_norm`` is the ``norm_type``-norm of the per-gradient norms (``inf``: the largest
    absolute entry). Returns ``total_norm`` (a 0-d Tensor), as torch."""
    fn = "clip_grad_norm_"
    params = _params(parameters, fn)
    max_norm = _number(fn, "max_norm", max_norm)
    if isinstance(norm_type, str) and norm_type == "inf":
        norm_type = math.inf
    norm_type = _number(fn, "norm_type", norm_type)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return Tensor._wrap(np.zeros((), np.float32))
    with np.errstate(over="ignore", invalid="ignore"):
        norms = [_vector_norm(g._data, norm_type) for g in grads]
    dtype = np.result_type(*[n.dtype for n in norms])
    total = _vector_norm(np.stack([n.astype(dtype) for n in norms]), norm_type)
    total = np.asarray(total, dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise NonFiniteNormError(
            f"{fn}: the total norm of order {norm_type:g} of the gradients is {float(total)}, so "
            f"it cannot be clipped; pass error_if_nonfinite=False to scale by it anyway")
    coef = np.minimum(np.asarray(max_norm, dtype) / (total + np.asarray(1e-6, dtype)),
                      np.asarray(1.0, dtype))
    for g in grads:
        _scale(g, coef)
    return Tensor._wrap(total)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient entry into ``[-clip_value, clip_value]``, in place."""
    fn = "clip_grad_value_"
    params = _params(parameters, fn)
    clip_value = _number(fn, "clip_value", clip_value)
    for p in params:
        if p.grad is None:
            continue
        g = p.grad
        data = g._data
        if data.flags.writeable:
            np.clip(data, -clip_value, clip_value, out=data, casting="unsafe")
        else:
            g._data = np.clip(data, -clip_value, clip_value).astype(data.dtype)
        g._version += 1


__all__ = ["clip_grad_norm_", "clip_grad_value_", "NonFiniteNormError"]
