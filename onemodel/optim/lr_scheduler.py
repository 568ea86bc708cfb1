"""``om.optim.lr_scheduler``: PyTorch's learning-rate schedules, with its step order, its
chained (recursive) and closed forms, its warnings and its ``state_dict`` layout.

A scheduler changes ``group["lr"]`` of its optimizer's param groups. The chained form (each
step from the current lr) is what ``step()`` uses, so schedulers can be stacked; the closed
form (from ``initial_lr`` and the epoch) is what ``step(epoch)`` uses, as in torch.
"""
from __future__ import annotations

import math
import numbers
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable, Iterable, Mapping

from ..errors import OneModelError
from .optimizer import Optimizer


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


class CosineAnnealingLR(LRScheduler):
    """``lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``, computed
    recursively as torch does (so it composes with other schedules)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        self.T_max = _int("CosineAnnealingLR", "T_max", T_max, 1)
        self.eta_min = _real("CosineAnnealingLR", "eta_min", eta_min)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return [g["lr"] for g in groups]
        if self._step_count == 1 and e > 0:
            return [lo + (b - lo) * (1 + math.cos(e * math.pi / T)) / 2 for b in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [g["lr"] + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for b, g in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
                * (g["lr"] - lo) + lo for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        lo = self.eta_min
        return [lo + (b - lo) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for b in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarting every ``T_i`` epochs, ``T_i`` growing by ``T_mult``."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        name = "CosineAnnealingWarmRestarts"
        self.T_0 = _int(name, "T_0", T_0, 1)
        self.T_i = self.T_0
        self.T_mult = _int(name, "T_mult", T_mult, 1)
        self.eta_min = _real(name, "eta_min", eta_min)
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        lo = self.eta_min
        return [lo + (b - lo) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for b in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """One epoch on, or to a (possibly fractional) ``epoch``, as torch allows here."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if isinstance(epoch, bool) or not isinstance(epoch, numbers.Real) or epoch < 0:
                raise SchedulerError(f"CosineAnnealingWarmRestarts.step: expected a "
                                     f"non-negative epoch, got {epoch!r}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr from ``max_lr / div_factor`` up to ``max_lr`` over ``pct_start`` of
    the steps, then down to ``initial_lr / final_div_factor``; momentum (or Adam's beta1) moves
    the other way when ``cycle_momentum``. Stepped once per batch."""

    def __init__(self, optimizer: Optimizer, max_lr, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1) -> None:
        name = "OneCycleLR"
        _check_optimizer(name, optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            self.total_steps = _int(name, "total_steps", total_steps, 1)
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = (_int(name, "epochs", epochs, 1)
                                * _int(name, "steps_per_epoch", steps_per_epoch, 1))
        else:
            raise SchedulerError(f"{name}: give either total_steps or (epochs and "
                                 f"steps_per_epoch)")
        pct = _real(name, "pct_start", pct_start, 0.0, 1.0)
        n = self.total_steps
        if three_phase:
            self._schedule_phases = [
                {"end_step": float(pct * n) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct * n) - 2, "start_lr": "max_lr",
                 "end_lr": "initial_lr", "start_momentum": "base_momentum",
                 "end_momentum": "max_momentum"},
                {"end_step": n - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
                 "start_momentum": "max_momentum", "end_momentum": "max_momentum"}]
        else:
            self._schedule_phases = [
                {"end_step": float(pct * n) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": n - 1, "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"}]
        if anneal_strategy not in ("cos", "linear"):
            raise SchedulerError(f"{name}: anneal_strategy must be 'cos' or 'linear', got "
                                 f"{anneal_strategy!r}")
        self._anneal_func_type = anneal_strategy
        div = _real(name, "div_factor", div_factor, 0.0, low_open=True)
        final_div = _real(name, "final_div_factor", final_div_factor, 0.0, low_open=True)
        max_lrs = [_real(name, "max_lr", v, 0.0)
                   for v in _per_group(name, "max_lr", optimizer, max_lr)]
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise SchedulerError(f"{name}: cycle_momentum needs an optimizer with momentum "
                                     f"or betas; {type(optimizer).__name__} has neither (pass "
                                     f"cycle_momentum=False)")
            self.use_beta1 = "betas" in optimizer.defaults
            maxm = _per_group(name, "max_momentum", optimizer, max_momentum)
            basem = _per_group(name, "base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for mm, bm, group in zip(maxm, basem, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (mm, *group["betas"][1:])
                    else:
                        group["momentum"] = mm
                    group["max_momentum"] = mm
                    group["base_momentum"] = bm
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise SchedulerError(f"OneCycleLR: tried to step {step_num} times; total_steps is "
                                 f"{self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(group[phase["start_momentum"]],
                                           group[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (mom, *group["betas"][1:])
                else:
                    group["momentum"] = mom
        return lrs


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


class CyclicLR(LRScheduler):
    """Cyclical learning rates between ``base_lr`` and ``max_lr`` (``triangular``,
    ``triangular2``, ``exp_range`` or a ``scale_fn``), momentum cycling the other way; stepped
    once per batch."""

    _not_saved = ("optimizer", "_scale_fn_ref", "_scale_fn_custom")

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn: Callable | None = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9,
                 last_epoch: int = -1) -> None:
        name = "CyclicLR"
        _check_optimizer(name, optimizer)
        self.optimizer = optimizer
        base_lrs = [_real(name, "base_lr", v, 0.0)
                    for v in _per_group(name, "base_lr", optimizer, base_lr)]
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = [_real(name, "max_lr", v, 0.0)
                        for v in _per_group(name, "max_lr", optimizer, max_lr)]
        up = _real(name, "step_size_up", step_size_up, 0.0, low_open=True)
        down = up if step_size_down is None else _real(name, "step_size_down", step_size_down,
                                                       0.0, low_open=True)
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise SchedulerError(f"{name}: mode must be 'triangular', 'triangular2' or "
                                 f"'exp_range' (or pass a scale_fn), got {mode!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise SchedulerError(f"{name}: scale_mode must be 'cycle' or 'iterations', got "
                                 f"{scale_mode!r}")
        if scale_fn is not None and not callable(scale_fn):
            raise SchedulerError(f"{name}: scale_fn must be callable, got "
                                 f"{type(scale_fn).__name__}")
        self.mode = mode
        self.gamma = _real(name, "gamma", gamma)
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise SchedulerError(f"{name}: cycle_momentum needs an optimizer with momentum "
                                     f"or betas; {type(optimizer).__name__} has neither (pass "
                                     f"cycle_momentum=False)")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _per_group(name, "base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group(name, "max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for mm, bm, group in zip(self.max_momentums, self.base_momentums,
                                         optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (mm, *group["betas"][1:])
                    else:
                        group["momentum"] = mm
                    group["max_momentum"] = mm
                    group["base_momentum"] = bm
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = lambda x: 1.0
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = lambda x: 1 / (2.0 ** (x - 1))
            self.scale_mode = "cycle"
        else:
            gamma = self.gamma
            self._scale_fn_ref = lambda x: gamma ** x
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        fn = self._scale_fn_custom if self._scale_fn_custom is not None else self._scale_fn_ref
        return fn(x)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        arg = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [b + (m - b) * scale_factor * self.scale_fn(arg)
               for b, m in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for bm, mm, group in zip(self.base_momentums, self.max_momentums,
                                     self.optimizer.param_groups):
                momentum = mm - (mm - bm) * scale_factor * self.scale_fn(arg)
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs

    def state_dict(self) -> dict:
        """As torch: a custom ``scale_fn`` is saved only as a callable object's attributes."""
        state = super().state_dict()
        fn = self._scale_fn_custom
        state["_scale_fn_custom"] = (None if fn is None or isinstance(fn, types.FunctionType)
                                     else _copy(dict(getattr(fn, "__dict__", {}))))
        return state

    def load_state_dict(self, state_dict: Mapping) -> None:
        checked = self._checked(state_dict, skip=("_scale_fn_custom",))
        fn_state = state_dict.get("_scale_fn_custom")
        if fn_state is not None and not isinstance(fn_state, Mapping):
            raise SchedulerError("CyclicLR.load_state_dict: '_scale_fn_custom' must be None or "
                                 "a dict of attributes")
        self.__dict__.update(checked)
        if fn_state is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(fn_state)
        self._init_scale_fn()


class ChainedScheduler(LRScheduler):
    """Steps every scheduler of the list at each ``step()``: their factors multiply."""

    _not_saved = ("optimizer", "_schedulers")

    def __init__(self, schedulers: list, optimizer: Optimizer | None = None) -> None:
        name = "ChainedScheduler"
        schedulers = list(schedulers)
        if not schedulers:
            raise SchedulerError(f"{name} expects at least one scheduler, got none")
        optimizer = optimizer or getattr(schedulers[0], "optimizer", None)
        _check_optimizer(name, optimizer)
        _check_members(name, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def step(self) -> None:  # noqa: D102  (one epoch on, for each scheduler)
        for s in self._schedulers:
            s.step()
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: Mapping) -> None:
        _load_members(self, state_dict)


def _check_members(name: str, optimizer: Optimizer, schedulers: list) -> None:
    for i, s in enumerate(schedulers):
        if isinstance(s, ReduceLROnPlateau):
            raise SchedulerError(f"{name} does not support ReduceLROnPlateau (schedulers[{i}])")
        if not isinstance(s, LRScheduler):
            raise SchedulerError(f"{name}: schedulers[{i}] is a {type(s).__name__}, not a "
                                 f"scheduler")
        if s.optimizer is not optimizer:
            raise SchedulerError(f"{name}: schedulers[{i}] ({type(s).__name__}) belongs to "
                                 f"another optimizer")


def _load_members(self, state_dict: Mapping) -> None:
    """Load a container scheduler: its own attributes and each member's state dict."""
    name = type(self).__name__
    checked = self._checked(state_dict, skip=("_schedulers",))
    saved = state_dict.get("_schedulers")
    if not isinstance(saved, (list, tuple)) or len(saved) != len(self._schedulers):
        raise SchedulerError(f"{name}.load_state_dict: '_schedulers' must be a list of "
                             f"{len(self._schedulers)} state dicts")
    self.__dict__.update(checked)
    for s, d in zip(self._schedulers, saved):
        s.load_state_dict(d)

class SequentialLR(LRScheduler):
    """Runs ``schedulers[i]`` between ``milestones[i-1]`` and ``milestones[i]``; at a milestone
    the next scheduler starts from its epoch 0 (closed form, as torch)."""

    _not_saved = ("optimizer", "_schedulers")

    def __init__(self, optimizer: Optimizer, schedulers: list, milestones: list,
                 last_epoch: int = -1) -> None:
        name = "SequentialLR"
        _check_optimizer(name, optimizer)
        schedulers = list(schedulers)
        if not schedulers:
            raise SchedulerError(f"{name} expects at least one scheduler, got none")
        _check_members(name, optimizer, schedulers)
        milestones = list(milestones)
        if len(milestones) != len(schedulers) - 1:
            raise SchedulerError(f"{name} expects one milestone fewer than schedulers: got "
                                 f"{len(schedulers)} schedulers and {len(milestones)} milestones")
        for m in milestones:
            _int(name, "each milestone", m, 0)
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # back to the start, undoing the others' steps
            group["lr"] = group["initial_lr"]
        self._undo(self)
        idx = bisect_right(self._milestones, 0)
        schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    @classmethod
    def _undo(cls, sched) -> None:
        """Take back the construction step of every scheduler inside, nested ones too."""
        if hasattr(sched, "_schedulers"):
            for s in sched._schedulers:
                cls._undo(s)
        elif hasattr(sched, "last_epoch"):
            sched.last_epoch -= 1

    def step(self) -> None:  # noqa: D102  (one epoch on)
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)  # closed form at epoch 0, without step()'s warnings
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: Mapping) -> None:
        _load_members(self, state_dict)


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


__all__ = ["LRScheduler", "SchedulerError", "LambdaLR", "MultiplicativeLR", "StepLR",
           "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR", "CosineAnnealingLR",
           "CosineAnnealingWarmRestarts", "OneCycleLR", "SequentialLR", "ReduceLROnPlateau",
           "PolynomialLR", "CyclicLR", "ChainedScheduler"]
