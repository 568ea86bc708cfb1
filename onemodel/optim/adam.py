"""Adam (and AdamW) with PyTorch's update rule, bias correction included (``torch.optim.Adam``)."""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from .optimizer import PARAM, STEP, Optimizer, OptimizerError, check_flag, check_number


def check_betas(name: str, betas) -> tuple:
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise OptimizerError(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
    return (check_number(name, "betas[0]", betas[0], high=1.0, high_open=True),
            check_number(name, "betas[1]", betas[1], high=1.0, high_open=True))


class Adam(Optimizer):
    """At step t: ``g = ±grad + weight_decay * p`` (L2, as torch.optim.Adam; AdamW instead
    scales ``p *= 1 - lr * weight_decay``); ``m = m + (1 - beta1) * (g - m)``;
    ``v = beta2 * v + (1 - beta2) * g * g`` (``v_max = max(v_max, v)`` with ``amsgrad``);
    ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)``.
    ``decoupled_weight_decay=True`` makes it AdamW, as in torch."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False, decoupled_weight_decay: bool = False) -> None:
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _validate(self, g: dict) -> None:
        name = type(self).__name__
        g["lr"] = check_number(name, "lr", g["lr"])
        g["eps"] = check_number(name, "eps", g["eps"])
        g["weight_decay"] = check_number(name, "weight_decay", g["weight_decay"])
        g["betas"] = check_betas(name, g["betas"])
        g["amsgrad"] = check_flag(name, "amsgrad", g["amsgrad"])
        g["maximize"] = check_flag(name, "maximize", g["maximize"])
        g["decoupled_weight_decay"] = check_flag(name, "decoupled_weight_decay",
                                                 g["decoupled_weight_decay"])

    def _state_spec(self, group: dict) -> dict:
        spec = {"step": (STEP, True), "exp_avg": (PARAM, True), "exp_avg_sq": (PARAM, True)}
        if group["amsgrad"]:
            spec["max_exp_avg_sq"] = (PARAM, True)
        return spec

    def step(self) -> None:
        """Update every parameter that has a gradient, in place."""
        for group in self.param_groups:
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                grad = self._grad(p, group["maximize"])
                if grad is None:
                    continue
                state = self._state(p)
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = np.zeros_like(p._data)
                    state["exp_avg_sq"] = np.zeros_like(p._data)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = np.zeros_like(p._data)
                state["step"] += 1
                t = state["step"]
                data = p._data
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        data = data * (1 - lr * wd)
                    else:
                        grad = grad + wd * data
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m += (1 - beta1) * (grad - m)          # torch's lerp_
                v *= beta2
                v += (1 - beta2) * (grad * grad)
                bias_correction1 = 1 - beta1 ** t
                bias_correction2_sqrt = math.sqrt(1 - beta2 ** t)
                step_size = lr / bias_correction1
                if group["amsgrad"]:
                    vmax = state["max_exp_avg_sq"]
                    np.maximum(vmax, v, out=vmax)
                    denom = np.sqrt(vmax) / bias_correction2_sqrt + eps
                else:
                    denom = np.sqrt(v) / bias_correction2_sqrt + eps
                self._write(p, data - step_size * (m / denom))


class AdamW(Adam):
    """Adam with decoupled weight decay: ``p *= 1 - lr * weight_decay`` before the Adam step."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)


__all__ = ["Adam", "AdamW", "check_betas"]
