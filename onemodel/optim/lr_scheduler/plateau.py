"""ReduceLROnPlateau: cut the lr when a metric stops improving."""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Mapping

from ..optimizer import Optimizer
from .base import (EPOCH_DEPRECATION_WARNING, LRScheduler, SchedulerError, _check_optimizer,
                   _int, _real)

class ReduceLROnPlateau(LRScheduler):
    """Multiplies the lr by ``factor`` once a metric (``step(metric)``) stops improving for
    ``patience`` epochs; waits ``cooldown`` epochs after each cut."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr=0.0, eps: float = 1e-8) -> None:
        name = "ReduceLROnPlateau"
        _check_optimizer(name, optimizer)
        if not isinstance(factor, numbers.Real) or isinstance(factor, bool) or factor >= 1.0:
            raise SchedulerError(f"{name}: factor must be < 1.0, got {factor!r}")
        self.factor = _real(name, "factor", factor, 0.0)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise SchedulerError(f"{name}: expected {len(optimizer.param_groups)} min_lrs "
                                     f"(one per param group), got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = [_real(name, "min_lr", v, 0.0) for v in min_lr]
        else:
            self.default_min_lr = _real(name, "min_lr", min_lr, 0.0)
            self.min_lrs = [self.default_min_lr] * len(optimizer.param_groups)
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self.patience = _int(name, "patience", patience, 0)
        self.cooldown = _int(name, "cooldown", cooldown, 0)
        self.eps = _real(name, "eps", eps, 0.0)
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._init_is_better(mode, _real(name, "threshold", threshold, 0.0), threshold_mode)
        self._reset()

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise SchedulerError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise SchedulerError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', "
                                 f"got {threshold_mode!r}")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record one epoch's metric (a number or one-element tensor)."""
        try:
            current = float(metrics)
        except (TypeError, ValueError):
            raise SchedulerError(f"ReduceLROnPlateau.step: the metric must be a number, got "
                                 f"{type(metrics).__name__}") from None
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise SchedulerError(f"ReduceLROnPlateau: the optimizer now has {len(groups)} "
                                     f"param groups but min_lr lists {len(self.min_lrs)}")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for i, group in enumerate(groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                group["lr"] = new

    def load_state_dict(self, state_dict: Mapping) -> None:
        checked = self._checked(state_dict)
        mode = checked.get("mode", self.mode)
        tm = checked.get("threshold_mode", self.threshold_mode)
        threshold = checked.get("threshold", self.threshold)
        self._init_is_better(mode, threshold, tm)  # raises before anything changed
        self.__dict__.update(checked)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


__all__ = ["ReduceLROnPlateau"]
