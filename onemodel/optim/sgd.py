"""Stochastic gradient descent with momentum, PyTorch's update rule (``torch.optim.SGD``)."""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .optimizer import PARAM, Optimizer, OptimizerError, check_flag, check_number

_REQUIRED = object()


class SGD(Optimizer):
    """``g = ±grad + weight_decay * p`` (minus with ``maximize``); with momentum
    ``b = momentum * b + (1 - dampening) * g`` (``b = g`` on the first step) and ``g = b`` (or
    ``g + momentum * b`` with ``nesterov``); then ``p -= lr * g``."""

    def __init__(self, params: Iterable, lr: float = _REQUIRED, momentum: float = 0.0,
                 weight_decay: float = 0.0, *, dampening: float = 0.0, nesterov: bool = False,
                 maximize: bool = False) -> None:
        # the positional order is the documented API's (momentum, weight_decay); torch puts
        # dampening between them, so dampening and nesterov are keyword-only here
        if lr is _REQUIRED:
            raise OptimizerError("SGD: missing the learning rate lr (SGD(params, lr=0.1))")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _validate(self, g: dict) -> None:
        g["lr"] = check_number("SGD", "lr", g["lr"])
        g["momentum"] = check_number("SGD", "momentum", g["momentum"])
        g["weight_decay"] = check_number("SGD", "weight_decay", g["weight_decay"])
        g["dampening"] = check_number("SGD", "dampening", g["dampening"])
        g["nesterov"] = check_flag("SGD", "nesterov", g["nesterov"])
        g["maximize"] = check_flag("SGD", "maximize", g["maximize"])
        if g["nesterov"] and (g["momentum"] <= 0 or g["dampening"] != 0):
            raise OptimizerError("SGD: nesterov momentum requires a momentum > 0 and zero "
                                 "dampening")

    def _state_spec(self, group: dict) -> dict:
        return {"momentum_buffer": (PARAM, False)}

    def step(self) -> None:
        """Update every parameter that has a gradient, in place."""
        for group in self.param_groups:
            lr, mom, wd = group["lr"], group["momentum"], group["weight_decay"]
            damp, nesterov = group["dampening"], group["nesterov"]
            for p in group["params"]:
                grad = self._grad(p, group["maximize"])
                if grad is None:
                    continue
                if wd != 0:
                    grad = grad + wd * p._data
                if mom != 0:
                    state = self._state(p)
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = np.array(grad, copy=True)
                    else:
                        buf *= mom
                        buf += (1 - damp) * grad
                    grad = grad + mom * buf if nesterov else buf
                self._write(p, p._data - lr * grad)


__all__ = ["SGD"]
