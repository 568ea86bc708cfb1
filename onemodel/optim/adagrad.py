"""Adagrad with PyTorch's update rule (``torch.optim.Adagrad``), lr decay included."""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .optimizer import PARAM, STEP, Optimizer, check_flag, check_number


class Adagrad(Optimizer):
    """At step t: ``g = ±grad + weight_decay * p``; ``clr = lr / (1 + (t - 1) * lr_decay)``;
    ``s += g * g`` (``s`` starts at ``initial_accumulator_value``);
    ``p -= clr * g / (sqrt(s) + eps)``. As in torch the state exists from construction."""

    def __init__(self, params: Iterable, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, *, maximize: bool = False) -> None:
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))

    def _validate(self, g: dict) -> None:
        for key in ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            g[key] = check_number("Adagrad", key, g[key])
        g["maximize"] = check_flag("Adagrad", "maximize", g["maximize"])

    def _init_state(self, group: dict, p) -> None:
        self.state[id(p)] = {"step": 0, "sum": np.full_like(
            p._data, group["initial_accumulator_value"])}

    def _state_spec(self, group: dict) -> dict:
        return {"step": (STEP, True), "sum": (PARAM, True)}

    def step(self) -> None:
        """Update every parameter that has a gradient, in place."""
        for group in self.param_groups:
            lr, lr_decay, wd, eps = (group["lr"], group["lr_decay"], group["weight_decay"],
                                     group["eps"])
            for p in group["params"]:
                grad = self._grad(p, group["maximize"])
                if grad is None:
                    continue
                state = self._state(p)
                if not state:
                    self._init_state(group, p)
                state["step"] += 1
                if wd != 0:
                    grad = grad + wd * p._data
                clr = lr / (1 + (state["step"] - 1) * lr_decay)
                s = state["sum"]
                s += grad * grad
                self._write(p, p._data - clr * (grad / (np.sqrt(s) + eps)))


__all__ = ["Adagrad"]
