"""Loss modules: MSELoss, CrossEntropyLoss, CTCLoss (PyTorch's arguments and reductions).

Losses are for training and are never traced, so they may look at target values (to find
``ignore_index`` entries) freely.
"""
from __future__ import annotations

import numpy as np

from onemodel import ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule

from ._util import as_tensor, reduction


class _Loss(NnModule):
    def __init__(self, reduction_: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction(type(self).__name__, reduction_)


class MSELoss(_Loss):
    """Mean squared error ``(input - target)**2``, reduced by ``reduction``."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__(reduction)

    def forward(self, input, target):
        return ops.mse_loss(input, as_tensor(target), reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """Cross entropy of logits (N, C) or (N, C, d1, ...) against class indices (N,) /
    (N, d1, ...) or class probabilities (same shape as the logits).

    ``weight`` (C,) rescales classes, ``ignore_index`` targets contribute nothing (and are left out
    of the mean), ``label_smoothing`` mixes the target with the uniform distribution, all as
    ``torch.nn.CrossEntropyLoss``.
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        if size_average is not None or reduce is not None:
            raise ArgumentError("CrossEntropyLoss: size_average and reduce are deprecated in "
                                "PyTorch and not supported; use reduction=")
        if weight is not None:
            weight = as_tensor(weight)
            self.register_buffer("weight", weight)
        else:
            self.register_buffer("weight", None)
        self.ignore_index = int(ignore_index)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ArgumentError(f"CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0, "
                                f"got {label_smoothing}")
        self.label_smoothing = float(label_smoothing)

    def forward(self, input, target):
        target = as_tensor(target)
        if target.dtype.is_float:
            return self._soft(input, target)
        t = target.numpy()
        if self.weight is None and self.label_smoothing == 0.0 and input.ndim == 2 \
                and not (t == self.ignore_index).any():
            return ops.cross_entropy(input, target, reduction=self.reduction)
        return self._hard(input, t)

    def _class_weight_view(self, ndim: int, dtype):
        w = self.weight.numpy().astype(dtype, copy=False)
        return w.reshape((1, -1) + (1,) * (ndim - 2))

    def _hard(self, input, t: np.ndarray):
        dtype = input.dtype.numpy
        logp = ops.log_softmax(input, 1)
        n_classes = input.shape[1]
        valid = t != self.ignore_index
        safe = np.where(valid, t, 0).astype(np.int64)
        if valid.any() and (safe.min() < 0 or safe.max() >= n_classes):
            raise IndexError(f"CrossEntropyLoss: target values must be in [0, {n_classes}) or "
                             f"ignore_index ({self.ignore_index}); got "
                             f"{safe.min()}..{safe.max()}")
        picked = ops.gather(logp, np.expand_dims(safe, 1), 1).squeeze(1)
        if self.weight is not None:
            w = self.weight.numpy().astype(dtype)[safe] * valid
        else:
            w = valid.astype(dtype)
        loss = -picked * w
        if self.label_smoothing > 0.0:
            cw = self._class_weight_view(input.ndim, dtype) if self.weight is not None else None
            smooth = -(logp * cw if cw is not None else logp).sum(axis=1) * valid.astype(dtype)
            eps = self.label_smoothing
            loss = loss * (1.0 - eps) + smooth * (eps / n_classes)
        if self.reduction == "none":
            return loss
        total = loss.sum()
        if self.reduction == "sum":
            return total
        return total / np.asarray(w.sum(), dtype=dtype)

    def _soft(self, input, target):
        if tuple(target.shape) != tuple(input.shape):
            raise ArgumentError(f"CrossEntropyLoss: probability targets must have the shape of the "
                                f"input {tuple(input.shape)}, got {tuple(target.shape)}")
        logp = ops.log_softmax(input, 1)
        n_classes = input.shape[1]
        if self.label_smoothing > 0.0:
            target = target * (1.0 - self.label_smoothing) + self.label_smoothing / n_classes
        prod = logp * target
        if self.weight is not None:
            prod = prod * self._class_weight_view(input.ndim, input.dtype.numpy)
        loss = -prod.sum(axis=1)
        if self.reduction == "none":
            return loss
        return loss.sum() if self.reduction == "sum" else loss.mean()

    def extra_repr(self) -> str:
        return ""


class CTCLoss(_Loss):
    """Connectionist temporal classification: ``log_probs`` (T, N, C) (log_softmax outputs),
    ``targets`` (N, S) or concatenated, ``input_lengths`` and ``target_lengths`` (N,).

    ``reduction="mean"`` divides each loss by its target length, then averages over the batch;
    ``zero_infinity`` replaces infinite losses (impossible alignments) by zero.
    """

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction)
        self.blank = int(blank)
        self.zero_infinity = bool(zero_infinity)

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        targets, input_lengths, target_lengths = (
            as_tensor(targets), as_tensor(input_lengths), as_tensor(target_lengths))
        if not self.zero_infinity:
            return ops.ctc_loss(log_probs, targets, input_lengths, target_lengths,
                                blank=self.blank, reduction=self.reduction)
        loss = ops.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=self.blank,
                            reduction="none")
        finite = np.isfinite(loss.numpy())
        if not finite.all():
            loss = ops.where(finite, loss, 0.0)
        if self.reduction == "none":
            return loss
        if self.reduction == "sum":
            return loss.sum()
        lengths = np.maximum(target_lengths.numpy(), 1).astype(loss.dtype.numpy)
        return (loss / lengths).mean()

    def extra_repr(self) -> str:
        return ""


__all__ = ["MSELoss", "CrossEntropyLoss", "CTCLoss"]
