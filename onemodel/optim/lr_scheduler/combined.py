"""Schedulers made of schedulers: one after another (SequentialLR) or all at once
(ChainedScheduler)."""
from __future__ import annotations

from bisect import bisect_right
from typing import Mapping

from ..optimizer import Optimizer
from .base import LRScheduler, SchedulerError, _check_optimizer, _int
from .plateau import ReduceLROnPlateau

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


__all__ = ["SequentialLR", "ChainedScheduler"]
