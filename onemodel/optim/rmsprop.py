"""RMSprop with PyTorch's update rule (``torch.optim.RMSprop``): eps is added after the root."""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .optimizer import PARAM, STEP, Optimizer, check_flag, check_number


class RMSprop(Optimizer):
    """``g = ±grad + weight_decay * p``; ``s = alpha * s + (1 - alpha) * g * g``; with
    ``centered`` ``a = a + (1 - alpha) * (g - a)`` and ``d = sqrt(s - a * a) + eps`` (else
    ``d = sqrt(s) + eps``); with momentum ``b = momentum * b + g / d`` and ``p -= lr * b``,
    else ``p -= lr * g / d``."""

    def __init__(self, params: Iterable, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, *, maximize: bool = False) -> None:
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _validate(self, g: dict) -> None:
        for key in ("lr", "alpha", "eps", "weight_decay", "momentum"):
            g[key] = check_number("RMSprop", key, g[key])
        g["centered"] = check_flag("RMSprop", "centered", g["centered"])
        g["maximize"] = check_flag("RMSprop", "maximize", g["maximize"])

    def _state_spec(self, group: dict) -> dict:
        spec = {"step": (STEP, True), "square_avg": (PARAM, True)}
        if group["momentum"] > 0:
            spec["momentum_buffer"] = (PARAM, True)
        if group["centered"]:
            spec["grad_avg"] = (PARAM, True)
        return spec

    def step(self) -> None:
        """Update every parameter that has a gradient, in place."""
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            wd, mom = group["weight_decay"], group["momentum"]
            for p in group["params"]:
                grad = self._grad(p, group["maximize"])
                if grad is None:
                    continue
                state = self._state(p)
                if not state:
                    state["step"] = 0
                    state["square_avg"] = np.zeros_like(p._data)
                    if mom > 0:
                        state["momentum_buffer"] = np.zeros_like(p._data)
                    if group["centered"]:
                        state["grad_avg"] = np.zeros_like(p._data)
                state["step"] += 1
                if wd != 0:
                    grad = grad + wd * p._data
                sq = state["square_avg"]
                sq *= alpha
                sq += (1 - alpha) * (grad * grad)
                if group["centered"]:
                    ga = state["grad_avg"]
                    ga += (1 - alpha) * (grad - ga)    # torch's lerp_
                    avg = np.sqrt(sq - ga * ga)
                else:
                    avg = np.sqrt(sq)
                avg += eps
                if mom > 0:
                    buf = state["momentum_buffer"]
                    buf *= mom
                    buf += grad / avg
                    self._write(p, p._data - lr * buf)
                else:
                    self._write(p, p._data - lr * (grad / avg))


__all__ = ["RMSprop"]
