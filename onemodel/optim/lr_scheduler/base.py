"""The scheduler base: ``initial_lr``, the construction step, torch's step-order and
``get_lr`` warnings, the chained/closed-form switch and the checked ``state_dict`` load."""
from __future__ import annotations

import math
import numbers
import warnings
import weakref
from collections import Counter
from typing import Any, Mapping

from ...errors import OneModelError
from ..optimizer import Optimizer

class SchedulerError(OneModelError, ValueError):
    """A scheduler was given a bad argument or a state_dict that does not fit it."""


EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available."
)
ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. You should call them in "
    "this order: `optimizer.step()` before `lr_scheduler.step()`. Failure to do this will skip "
    "the first value of the learning rate schedule."
)


def _track_step_called(opt: Optimizer) -> None:
    """Wrap ``opt.step`` once so that calling it sets ``opt._opt_called`` (the order check)."""
    if getattr(opt.step, "_wrapped_by_lr_sched", False):
        return
    ref = weakref.ref(opt)
    func = type(opt).step

    def wrapper(*args, **kwargs):
        o = ref()
        o._opt_called = True
        return func(o, *args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    wrapper.__doc__ = func.__doc__
    opt.step = wrapper


def _check_optimizer(name: str, optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise SchedulerError(f"{name}: {type(optimizer).__name__} is not an Optimizer")


def _int(name: str, arg: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise SchedulerError(f"{name}: {arg} must be an integer >= {low}, got {value!r}")
    return int(value)


def _real(name: str, arg: str, value: Any, low: float | None = None,
          high: float | None = None, low_open: bool = False) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high is None else f"<= {high:g}"
        rng = " and ".join(x for x in (lo, hi) if x) or "finite"
        raise SchedulerError(f"{name}: {arg} must be a number {rng}, got {value!r}")
    return float(value)


def _per_group(name: str, arg: str, optimizer: Optimizer, value: Any) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise SchedulerError(f"{name}: {arg} has {len(value)} values, the optimizer has "
                                 f"{len(optimizer.param_groups)} param groups")
        return list(value)
    return [value] * len(optimizer.param_groups)


class LRScheduler:
    """The base: records ``initial_lr`` in each group, counts epochs in ``last_epoch`` and makes
    the first step at construction (``last_epoch`` 0). Subclasses give ``get_lr()`` (chained)
    and, where torch has one, ``_get_closed_form_lr()``."""

    _get_lr_called_within_step = False
    _is_initial = False  # True during the step made at construction
    optimizer: Optimizer
    base_lrs: list[float]
    last_epoch: int
    _step_count: int
    _last_lr: list[float]

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        name = type(self).__name__
        _check_optimizer(name, optimizer)
        if isinstance(last_epoch, bool) or not isinstance(last_epoch, numbers.Integral) \
                or last_epoch < -1:
            raise SchedulerError(f"{name}: last_epoch must be an integer >= -1, got "
                                 f"{last_epoch!r}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise SchedulerError(f"{name}: param_groups[{i}] has no 'initial_lr', "
                                         f"which resuming with last_epoch={last_epoch} needs")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = int(last_epoch)
        _track_step_called(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates of the last step, one per param group."""
        return list(self._last_lr)

    def _warn_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to ``epoch``, closed form, deprecated as in torch)."""
        if self._step_count == 1:
            if not getattr(self.optimizer.step, "_wrapped_by_lr_sched", False):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning "
                              "rate scheduler initialization. Please, make sure to call "
                              "`optimizer.step()` before `lr_scheduler.step()`.", UserWarning,
                              stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(ORDER_WARNING, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    # -- state_dict ----------------------------------------------------------------------------
    _not_saved: tuple = ("optimizer",)

    def state_dict(self) -> dict:
        """Every attribute but the optimizer (and, for lambda schedules, the functions)."""
        return {k: _copy(v) for k, v in self.__dict__.items() if k not in self._not_saved}

    def load_state_dict(self, state_dict: Mapping) -> None:
        """Take the attributes of ``state_dict``; keys this scheduler does not have, or values
        of another kind than its own, are an error naming the key (nothing changes then)."""
        self.__dict__.update(self._checked(state_dict))

    def _checked(self, state_dict: Any, skip: tuple = ()) -> dict:
        name = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, Mapping):
            raise SchedulerError(f"{name}: expected a dict, got {type(state_dict).__name__}")
        out = {}
        for key, value in state_dict.items():
            if key in skip:
                continue
            if key in self._not_saved or key not in self.__dict__:
                raise SchedulerError(f"{name}: {key!r} is not state of {type(self).__name__}")
            mine = self.__dict__[key]
            if mine is not None and value is not None and _kind(mine) != _kind(value):
                raise SchedulerError(f"{name}: {key!r} must be {_kind(mine)}, got "
                                     f"{type(value).__name__} ({value!r:.60})")
            out[key] = _copy(value)
        return out


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "a bool"
    if isinstance(v, numbers.Real):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (list, tuple)):
        return "a list"
    if isinstance(v, Mapping):
        return "a dict"
    return type(v).__name__


def _copy(v: Any) -> Any:
    if isinstance(v, Counter):
        return Counter(v)
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


__all__ = ["LRScheduler", "SchedulerError", "EPOCH_DEPRECATION_WARNING", "ORDER_WARNING"]
