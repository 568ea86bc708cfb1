"""Schedules that multiply the lr by a factor per epoch: lambda, step, multi-step, constant,
linear, exponential and polynomial."""
from __future__ import annotations

import types
from bisect import bisect_right
from collections import Counter
from typing import Callable, Iterable, Mapping

from ..optimizer import Optimizer
from .base import LRScheduler, SchedulerError, _check_optimizer, _copy, _int, _real

class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(epoch)``, one function per group or one for all."""

    _not_saved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable | list, last_epoch: int = -1):
        _check_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(type(self).__name__, optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict:
        """As torch: plain functions and lambdas are not saved (None); the ``__dict__`` of a
        callable object is."""
        state = super().state_dict()
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType)
                               else _copy(dict(getattr(fn, "__dict__", {})))
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: Mapping) -> None:
        checked = self._checked(state_dict, skip=("lr_lambdas",))
        saved = state_dict.get("lr_lambdas", [None] * len(self.lr_lambdas))
        if not isinstance(saved, (list, tuple)) or len(saved) != len(self.lr_lambdas):
            raise SchedulerError(f"{type(self).__name__}.load_state_dict: 'lr_lambdas' must be "
                                 f"a list of {len(self.lr_lambdas)} entries")
        for i, entry in enumerate(saved):
            if entry is not None and not isinstance(entry, Mapping):
                raise SchedulerError(f"{type(self).__name__}.load_state_dict: 'lr_lambdas'[{i}]"
                                     f" must be None or a dict of attributes")
        self.__dict__.update(checked)
        for fn, entry in zip(self.lr_lambdas, saved):
            if entry is not None:
                fn.__dict__.update(entry)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas,
                                                                     self.base_lrs)]


def _lambdas(name: str, optimizer: Optimizer, lr_lambda) -> list:
    if isinstance(lr_lambda, (list, tuple)):
        if len(lr_lambda) != len(optimizer.param_groups):
            raise SchedulerError(f"{name}: expected {len(optimizer.param_groups)} lr_lambdas "
                                 f"(one per param group), got {len(lr_lambda)}")
        fns = list(lr_lambda)
    else:
        fns = [lr_lambda] * len(optimizer.param_groups)
    for i, fn in enumerate(fns):
        if not callable(fn):
            raise SchedulerError(f"{name}: lr_lambda must be callable, got "
                                 f"{type(fn).__name__} (entry {i})")
    return fns


class MultiplicativeLR(LambdaLR):
    """``lr = lr * lr_lambda(epoch)`` at every step after construction (chained only, as
    torch)."""

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if not self._is_initial:
            return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, groups)]
        return [g["lr"] for g in groups]


class StepLR(LRScheduler):
    """``lr = initial_lr * gamma ** (epoch // step_size)``."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = _int("StepLR", "step_size", step_size, 1)
        self.gamma = _real("StepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [g["lr"] for g in groups]
        return [g["lr"] * self.gamma for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """``lr = initial_lr * gamma ** (number of milestones <= epoch)``."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        try:
            ms = list(milestones)
        except TypeError:
            raise SchedulerError(f"MultiStepLR: milestones must be a list of integers, got "
                                 f"{type(milestones).__name__}") from None
        for m in ms:
            _int("MultiStepLR", "each milestone", m, 0)
        self.milestones = Counter(int(m) for m in ms)
        self.gamma = _real("MultiStepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch not in self.milestones:
            return [g["lr"] for g in groups]
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch] for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        ms = sorted(self.milestones.elements())
        return [b * self.gamma ** bisect_right(ms, self.last_epoch) for b in self.base_lrs]

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["milestones"] = {int(k): int(v) for k, v in self.milestones.items()}
        return state

    def load_state_dict(self, state_dict: Mapping) -> None:
        checked = self._checked(state_dict)
        if "milestones" in checked:
            ms = checked["milestones"]
            for k, v in ms.items():
                _int("MultiStepLR.load_state_dict", f"milestones[{k!r}]", v, 1)
                _int("MultiStepLR.load_state_dict", "a milestone", k, 0)
            checked["milestones"] = Counter({int(k): int(v) for k, v in ms.items()})
        self.__dict__.update(checked)


class ConstantLR(LRScheduler):
    """``lr = initial_lr * factor`` until ``total_iters``, then ``initial_lr``."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        self.factor = _real("ConstantLR", "factor", factor, 0.0, 1.0)
        self.total_iters = _int("ConstantLR", "total_iters", total_iters, 0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in groups]
        if self.last_epoch != self.total_iters:
            return [g["lr"] for g in groups]
        return [g["lr"] * (1.0 / self.factor) for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [b * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for b in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor goes linearly from ``start_factor`` to ``end_factor`` over ``total_iters``."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        self.start_factor = _real("LinearLR", "start_factor", start_factor, 0.0, 1.0,
                                  low_open=True)
        self.end_factor = _real("LinearLR", "end_factor", end_factor, 0.0, 1.0)
        self.total_iters = _int("LinearLR", "total_iters", total_iters, 1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return [g["lr"] for g in groups]
        d = self.end_factor - self.start_factor
        return [g["lr"] * (1.0 + d / (self.total_iters * self.start_factor
                                      + (self.last_epoch - 1) * d)) for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        d = self.end_factor - self.start_factor
        return [b * (self.start_factor + d * min(self.total_iters, self.last_epoch)
                     / self.total_iters) for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """``lr = initial_lr * gamma ** epoch``."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = _real("ExponentialLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [g["lr"] for g in groups]
        return [g["lr"] * self.gamma for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [b * self.gamma ** self.last_epoch for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """``lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power``."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters = _int("PolynomialLR", "total_iters", total_iters, 1)
        self.power = _real("PolynomialLR", "power", power)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self._is_initial or self.last_epoch > self.total_iters:
            return [g["lr"] for g in groups]
        n, e = self.total_iters, self.last_epoch
        decay = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power
        return [g["lr"] * decay for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        n = self.total_iters
        return [b * (1.0 - min(n, self.last_epoch) / n) ** self.power for b in self.base_lrs]


__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "PolynomialLR"]
