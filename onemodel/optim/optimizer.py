"""The optimizer base class: parameter groups, per-parameter state, ``zero_grad``.

Updates change each parameter's numpy array in place (so every reference to the parameter sees
them) and bump its version, outside autograd: a step is never recorded.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Iterable

import numpy as np

from ..core.tensor import Tensor
from ..errors import OneModelError


class OptimizerError(OneModelError, ValueError):
    """An optimizer was given a bad argument (the message names it) or bad parameters."""


def check_number(opt: str, name: str, value: Any, *, low: float = 0.0, high: float | None = None,
                 high_open: bool = False) -> float:
    """``value`` as a float in ``[low, high]`` (or ``[low, high)``), else an error naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
        raise OptimizerError(f"{opt}: {name} must be a number, got {value!r}")
    if value in (math.inf, -math.inf):
        raise OptimizerError(f"{opt}: {name} must be finite, got {value!r}")
    value = float(value)
    bad = value < low or (high is not None and (value >= high if high_open else value > high))
    if bad:
        if high is None:
            rng = f">= {low:g}"
        else:
            rng = f"in [{low:g}, {high:g}{')' if high_open else ']'}"
        raise OptimizerError(f"{opt}: invalid {name} {value!r}; it must be {rng}")
    return value


class Optimizer:
    """Holds ``param_groups`` (a list of dicts with ``params`` and the hyper-parameters) and
    ``state`` (per parameter). Subclasses implement ``step``."""

    def __init__(self, params: Iterable, defaults: dict) -> None:
        name = type(self).__name__
        if isinstance(params, Tensor):
            raise OptimizerError(f"{name}: params must be an iterable of tensors or of dicts, "
                                 f"got a single Tensor (wrap it in a list)")
        try:
            groups = list(params)
        except TypeError:
            raise OptimizerError(f"{name}: params must be an iterable of tensors or of dicts, "
                                 f"got {type(params).__name__}") from None
        if not groups:
            raise OptimizerError(f"{name} got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        self.state: dict[int, dict] = {}
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict) -> None:
        name = type(self).__name__
        if not isinstance(group, dict):
            raise OptimizerError(f"{name}: a parameter group must be a dict, got "
                                 f"{type(group).__name__}")
        params = group.get("params")
        params = [params] if isinstance(params, Tensor) else list(params or ())
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise OptimizerError(f"{name} can only optimize Tensors, got "
                                     f"{type(p).__name__} at position {i}")
            if not p.dtype.is_float:
                raise OptimizerError(f"{name} can only optimize floating-point tensors, got "
                                     f"{p.dtype} at position {i}")
            if not p.is_leaf:
                raise OptimizerError(f"{name} can't optimize a non-leaf tensor (position {i}): "
                                     f"optimize the Parameter, not a result computed from it")
            if id(p) in seen:
                raise OptimizerError(f"{name}: some parameters appear in more than one "
                                     f"parameter group")
            seen.add(id(p))
        full = dict(self.defaults)
        full.update({k: v for k, v in group.items() if k != "params"})
        self._validate(full)
        full["params"] = params
        self.param_groups.append(full)

    def _validate(self, group: dict) -> None:
        """Check the hyper-parameters of one group (subclasses)."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop (``set_to_none=True``, the default) or zero every parameter's gradient."""
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = Tensor._wrap(np.zeros_like(p._data))

    def step(self) -> None:
        raise NotImplementedError

    def _state(self, p: Tensor) -> dict:
        return self.state.setdefault(id(p), {})

    @staticmethod
    def _grad(p: Tensor) -> np.ndarray | None:
        if p.grad is None:
            return None
        g = p.grad._data
        return g if g.dtype == p._data.dtype else g.astype(p._data.dtype)

    @staticmethod
    def _write(p: Tensor, new: np.ndarray) -> None:
        data = p._data
        if data.flags.writeable:
            np.copyto(data, new, casting="unsafe")
        else:
            p._data = np.array(new, dtype=data.dtype, copy=True)
        p._version += 1

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        lines.append(")")
        return "\n".join(lines)


__all__ = ["Optimizer", "OptimizerError", "check_number"]
