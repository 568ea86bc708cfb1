"""Per-batch cycles: the 1cycle policy and cyclical learning rates, momentum moving the
other way."""
from __future__ import annotations

import math
import types
from typing import Callable, Mapping

from ..optimizer import Optimizer
from .base import (LRScheduler, SchedulerError, _check_optimizer, _copy, _int, _per_group,
                   _real)

def _cycled_momentum(name: str, optimizer: Optimizer, max_momentum, base_momentum,
                     last_epoch: int) -> tuple[bool, list, list]:
    """Both cyclic schedulers' momentum set-up: whether beta1 (Adam) or momentum (SGD) cycles,
    the per-group max and base momentums, and (starting fresh) each group set to its max."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise SchedulerError(f"{name}: cycle_momentum needs an optimizer with momentum "
                             f"or betas; {type(optimizer).__name__} has neither (pass "
                             f"cycle_momentum=False)")
    use_beta1 = "betas" in optimizer.defaults
    maxm = _per_group(name, "max_momentum", optimizer, max_momentum)
    basem = _per_group(name, "base_momentum", optimizer, base_momentum)
    if last_epoch == -1:
        for mm, bm, group in zip(maxm, basem, optimizer.param_groups):
            if use_beta1:
                group["betas"] = (mm, *group["betas"][1:])
            else:
                group["momentum"] = mm
            group["max_momentum"] = mm
            group["base_momentum"] = bm
    return use_beta1, maxm, basem


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
            self.use_beta1, _, _ = _cycled_momentum(name, optimizer, max_momentum, base_momentum,
                                                    last_epoch)
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
            self.use_beta1, self.max_momentums, self.base_momentums = _cycled_momentum(
                name, optimizer, max_momentum, base_momentum, last_epoch)
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


__all__ = ["OneCycleLR", "CyclicLR"]
