"""The optimizer base class: parameter groups, per-parameter state, ``zero_grad`` and the
``state_dict`` / ``load_state_dict`` pair in PyTorch's layout.

Updates change each parameter's numpy array in place (so every reference to the parameter sees
them) and bump its version, outside autograd: a step is never recorded.
"""
from __future__ import annotations

import copy
import math
import numbers
from typing import Any, Iterable, Mapping

import numpy as np

from ..core.tensor import Tensor
from ..errors import OneModelError


class OptimizerError(OneModelError, ValueError):
    """An optimizer was given a bad argument (the message names it), bad parameters, or a
    state_dict that does not fit it (the message names the key)."""


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


def check_flag(opt: str, name: str, value: Any) -> bool:
    """``value`` as a bool (numpy bools too), else an error naming it."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise OptimizerError(f"{opt}: {name} must be True or False, got {value!r}")


#: per-parameter state entries: an array of the parameter's shape, or a step counter
PARAM, STEP = "param", "step"


class Optimizer:
    """Holds ``param_groups`` (a list of dicts with ``params`` and the hyper-parameters) and
    ``state`` (per parameter). Subclasses implement ``step`` and say which state they keep
    (``_state_spec``), so a loaded state_dict can be checked against it."""

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
        for p in params:
            self._init_state(full, p)

    def _validate(self, group: dict) -> None:
        """Check the hyper-parameters of one group (subclasses)."""

    def _init_state(self, group: dict, p: Tensor) -> None:
        """State made when a parameter joins (Adagrad's accumulator); most make it lazily."""

    def _state_spec(self, group: dict) -> dict[str, tuple[str, bool]]:
        """The state one parameter of ``group`` keeps: ``{key: (PARAM or STEP, required)}``."""
        return {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop (``set_to_none=True``, the default) or zero every parameter's gradient; zeroing
        is in place, as torch's, so a reference to the gradient sees it."""
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                elif p.grad._data.flags.writeable:
                    p.grad._data[...] = 0
                    p.grad._version += 1
                else:
                    p.grad = Tensor._wrap(np.zeros_like(p.grad._data))

    def step(self) -> None:
        raise NotImplementedError

    def _state(self, p: Tensor) -> dict:
        return self.state.setdefault(id(p), {})

    @staticmethod
    def _grad(p: Tensor, maximize: bool = False) -> np.ndarray | None:
        if p.grad is None:
            return None
        g = p.grad._data
        g = g if g.dtype == p._data.dtype else g.astype(p._data.dtype)
        return -g if maximize else g

    @staticmethod
    def _write(p: Tensor, new: np.ndarray) -> None:
        data = p._data
        if data.flags.writeable:
            np.copyto(data, new, casting="unsafe")
        else:
            p._data = np.array(new, dtype=data.dtype, copy=True)
        p._version += 1

    # -- state_dict ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}`` as in
        PyTorch: parameters are numbered in group order. Arrays are Tensor copies, so the
        snapshot does not move on with later steps."""
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in g.items() if k != "params"}
            for p in g["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in g["params"]]
            groups.append(packed)
        state = {}
        for g in self.param_groups:
            for p in g["params"]:
                s = self.state.get(id(p))
                if s:
                    state[index[id(p)]] = {k: _export(v) for k, v in s.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping) -> None:
        """Take hyper-parameters and state from ``state_dict`` (this optimizer's, or PyTorch's
        for the same parameters). Everything is checked before anything changes: group count,
        parameter counts, state keys and shapes; an `OptimizerError` names what is wrong."""
        name = type(self).__name__
        where = f"{name}.load_state_dict"
        if not isinstance(state_dict, Mapping):
            raise OptimizerError(f"{where}: expected a dict with 'state' and 'param_groups', got "
                                 f"{type(state_dict).__name__}")
        for key in ("state", "param_groups"):
            if key not in state_dict:
                raise OptimizerError(f"{where}: the state dict has no {key!r} key")
        saved_groups, saved_state = state_dict["param_groups"], state_dict["state"]
        if not isinstance(saved_groups, (list, tuple)):
            raise OptimizerError(f"{where}: 'param_groups' must be a list, got "
                                 f"{type(saved_groups).__name__}")
        if not isinstance(saved_state, Mapping):
            raise OptimizerError(f"{where}: 'state' must be a dict, got "
                                 f"{type(saved_state).__name__}")
        if len(saved_groups) != len(self.param_groups):
            raise OptimizerError(f"{where}: 'param_groups' has {len(saved_groups)} groups, this "
                                 f"optimizer has {len(self.param_groups)}")
        by_index: dict[Any, tuple[Tensor, dict]] = {}
        new_groups = []
        for gi, (saved, own) in enumerate(zip(saved_groups, self.param_groups)):
            gw = f"param_groups[{gi}]"
            if not isinstance(saved, Mapping) or not isinstance(saved.get("params"),
                                                                (list, tuple)):
                raise OptimizerError(f"{where}: {gw} must be a dict with a 'params' list")
            if len(saved["params"]) != len(own["params"]):
                raise OptimizerError(f"{where}: {gw}['params'] has {len(saved['params'])} "
                                     f"parameters, this optimizer's group has "
                                     f"{len(own['params'])}")
            group = dict(self.defaults)  # keys an older state dict lacks, as torch's setstate
            group.update({k: copy.deepcopy(v) for k, v in saved.items() if k != "params"})
            try:
                self._validate(group)
            except OptimizerError as exc:
                raise OptimizerError(f"{where}: {gw}: {exc}") from None
            for inner in ("initial_lr", "lr"):
                if inner in group:
                    check_number(f"{where}: {gw}", inner, group[inner])
            group["params"] = own["params"]
            new_groups.append(group)
            for saved_index, p in zip(saved["params"], own["params"]):
                if isinstance(saved_index, bool) or not isinstance(saved_index, numbers.Integral):
                    raise OptimizerError(f"{where}: {gw}['params'] holds {saved_index!r}; "
                                         f"parameter indices are integers")
                if int(saved_index) in by_index:
                    raise OptimizerError(f"{where}: parameter index {saved_index} appears twice "
                                         f"in 'param_groups'")
                by_index[int(saved_index)] = (p, group)
        new_state: dict[int, dict] = {}
        for key, entries in saved_state.items():
            sw = f"state[{key!r}]"
            k = int(key) if isinstance(key, numbers.Integral) and not isinstance(key, bool) \
                else key
            if k not in by_index:
                raise OptimizerError(f"{where}: {sw} names no parameter of 'param_groups'")
            if not isinstance(entries, Mapping):
                raise OptimizerError(f"{where}: {sw} must be a dict, got "
                                     f"{type(entries).__name__}")
            p, group = by_index[k]
            new_state[id(p)] = self._load_entries(where, sw, p, group, entries)
        self.param_groups = new_groups
        self.state = new_state

    def _load_entries(self, where: str, sw: str, p: Tensor, group: dict,
                      entries: Mapping) -> dict:
        spec = self._state_spec(group)
        out: dict[str, Any] = {}
        for key, value in entries.items():
            if key not in spec:
                known = ", ".join(sorted(spec)) or "none"
                raise OptimizerError(f"{where}: {sw}[{key!r}] is not state {type(self).__name__} "
                                     f"keeps with these settings (it keeps: {known})")
            kind, required = spec[key]
            if value is None and required:
                raise OptimizerError(f"{where}: {sw}[{key!r}] is None; {type(self).__name__} "
                                     f"needs an array or a step count there")
            out[key] = _load_value(f"{where}: {sw}[{key!r}]", kind, p, value)
        for key, (_, required) in spec.items():
            if required and key not in out:
                raise OptimizerError(f"{where}: {sw} lacks {key!r}")
        return out

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        lines.append(")")
        return "\n".join(lines)


def _export(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return Tensor._wrap(value.copy())
    return value


def _load_value(where: str, kind: str, p: Tensor, value: Any) -> Any:
    """One state entry: a step count (int; a number or one-element array, as torch keeps it) or
    an array of the parameter's shape, cast to its dtype and copied."""
    if value is None:
        return None  # an optional entry: torch's SGD keeps momentum_buffer None at first
    if kind == STEP:
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            arr = _array(where, value)
            if arr.size != 1 or arr.dtype.kind not in "iuf":
                raise OptimizerError(f"{where}: a step count must be one number, got an array "
                                     f"of shape {arr.shape}")
            value = arr.reshape(()).item()
        if value != value or value < 0 or value != int(value) or value > 2 ** 53:
            raise OptimizerError(f"{where}: a step count must be a whole number >= 0, got "
                                 f"{value!r}")
        return int(value)
    arr = _array(where, value)
    if arr.dtype.kind not in "fiu":
        raise OptimizerError(f"{where}: expected numbers, got an array of dtype {arr.dtype}")
    shape = tuple(p._data.shape)
    if arr.shape != shape:
        raise OptimizerError(f"{where}: shape {tuple(arr.shape)} does not match the parameter's "
                             f"{shape}")
    return np.array(arr, dtype=p._data.dtype, copy=True)


def _array(where: str, value: Any) -> np.ndarray:
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        try:
            return np.asarray(value.detach().cpu().numpy())
        except Exception:  # noqa: BLE001
            pass
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001
        arr = None
    if arr is None or arr.dtype == object:
        raise OptimizerError(f"{where}: expected an array, got {type(value).__name__}")
    return arr


__all__ = ["Optimizer", "OptimizerError", "check_number", "check_flag", "PARAM", "STEP"]
