"""BCELoss, BCEWithLogitsLoss, NLLLoss, L1Loss, SmoothL1Loss, HuberLoss, KLDivLoss.

PyTorch's arguments (the deprecated ``size_average``/``reduce`` pair too, mapped to a reduction
with PyTorch's warning), class weights kept as the buffers ``weight`` / ``pos_weight`` (so they are
in ``state_dict`` as in PyTorch), each a thin call of the matching loss op.
"""
from __future__ import annotations

from onemodel import ops
from onemodel.errors import ArgumentError

from ._checks import legacy_reduction, non_negative
from ._util import as_tensor
from .loss import _Loss


class _LossLegacy(_Loss):
    def __init__(self, size_average, reduce, reduction_: str) -> None:
        super().__init__(legacy_reduction(type(self).__name__, size_average, reduce, reduction_))

    def _buffer(self, name: str, value) -> None:
        self.register_buffer(name, None if value is None else as_tensor(value))


class L1Loss(_LossLegacy):
    """Mean absolute error ``|input - target|``, reduced by ``reduction``."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)

    def forward(self, input, target):
        return ops.l1_loss(input, as_tensor(target), reduction=self.reduction)


class SmoothL1Loss(_LossLegacy):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (d = input - target)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = non_negative("SmoothL1Loss", "beta", beta)

    def forward(self, input, target):
        return ops.smooth_l1_loss(input, as_tensor(target), reduction=self.reduction,
                                  beta=self.beta)


class HuberLoss(_Loss):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        self.delta = non_negative("HuberLoss", "delta", delta)
        if self.delta == 0:
            raise ArgumentError("HuberLoss: delta must be > 0, got 0")

    def forward(self, input, target):
        return ops.huber_loss(input, as_tensor(target), reduction=self.reduction,
                              delta=self.delta)


class BCELoss(_LossLegacy):
    """Binary cross entropy of probabilities ``input`` against ``target`` in [0, 1]; ``weight``
    rescales each element (broadcast against the input); logs are clamped at -100 (PyTorch)."""

    def __init__(self, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self._buffer("weight", weight)

    def forward(self, input, target):
        return ops.binary_cross_entropy(input, as_tensor(target), self.weight,
                                        reduction=self.reduction)


class BCEWithLogitsLoss(_LossLegacy):
    """Sigmoid and binary cross entropy in one stable formula; ``pos_weight`` (one per class,
    broadcast along the last axis) weighs the positive term, ``weight`` each element."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None) -> None:
        super().__init__(size_average, reduce, reduction)
        self._buffer("weight", weight)
        self._buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return ops.binary_cross_entropy_with_logits(input, as_tensor(target), self.weight,
                                                    reduction=self.reduction,
                                                    pos_weight=self.pos_weight)


class NLLLoss(_LossLegacy):
    """Negative log likelihood of log-probabilities (N, C) or (N, C, d1, ...) at class indices;
    ``weight`` (C,) rescales classes and ``ignore_index`` targets count for nothing."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self._buffer("weight", weight)
        if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
            raise ArgumentError(f"NLLLoss: ignore_index must be an int, got {ignore_index!r}")
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return ops.nll_loss(input, as_tensor(target), self.weight,
                            ignore_index=self.ignore_index, reduction=self.reduction)


class KLDivLoss(_LossLegacy):
    """``target * (log(target) - input)`` for log-probabilities ``input`` (``log_target``: the
    target is given as log-probabilities too); ``reduction="batchmean"`` divides the sum by the
    batch size, the mathematically right KL divergence."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        batchmean = reduction == "batchmean" and size_average is None and reduce is None
        super().__init__(size_average, reduce, "mean" if batchmean else reduction)
        if batchmean:
            self.reduction = "batchmean"
        if not isinstance(log_target, bool):
            raise ArgumentError(f"KLDivLoss: log_target must be True or False, got "
                                f"{log_target!r}")
        self.log_target = log_target

    def forward(self, input, target):
        return ops.kl_div(input, as_tensor(target), reduction=self.reduction,
                          log_target=self.log_target)


__all__ = ["L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss", "NLLLoss",
           "KLDivLoss"]
