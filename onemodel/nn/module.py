"""`NnModule`: the base class of every layer and model (PyTorch's ``nn.Module`` shape).

Parameters, buffers and submodules register themselves when assigned as attributes, so a model is
just a tree of modules whose leaves are tensors. Names are dotted paths (``encoder.0.weight``),
exactly as PyTorch spells them, so a PyTorch state dict loads without renaming.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterator, Mapping, NamedTuple

import numpy as np

from ..core.dtype import DType
from ..core.tensor import Tensor
from ..errors import ArgumentError, OneModelError
from .parameter import Parameter


class StateDictError(OneModelError, RuntimeError):
    """`load_state_dict` found missing or unexpected keys, or entries of the wrong shape or dtype.

    ``missing_keys``, ``unexpected_keys`` and ``mismatched`` (``key -> reason``) hold the details;
    the message lists all of them.
    """

    def __init__(self, message: str, missing_keys=(), unexpected_keys=(), mismatched=None):
        super().__init__(message)
        self.missing_keys = list(missing_keys)
        self.unexpected_keys = list(unexpected_keys)
        self.mismatched = dict(mismatched or {})


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict` returns: the keys it did not find, and the keys it did not use."""

    missing_keys: list
    unexpected_keys: list


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


def _check_name(kind: str, name: Any) -> None:
    if not isinstance(name, str):
        raise ArgumentError(f"{kind} name should be a string, got {type(name).__name__}")
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got {name!r}')


def _as_array(value: Any, key: str) -> np.ndarray:
    """A state-dict entry as a numpy array: Tensors, numpy arrays, anything with ``__array__``."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value)
    except Exception as exc:  # noqa: BLE001
        raise StateDictError(f"state dict entry {key!r} is not array-like: "
                             f"{type(value).__name__} ({exc})") from None


def _kind(dt: np.dtype) -> str:
    if dt.kind == "b":
        return "bool"
    if dt.kind in "iu":
        return "integer"
    if dt.kind == "f":
        return "floating-point"
    return dt.kind


class NnModule:
    """Base class for layers and models: subclass it, assign layers and `Parameter`s in
    ``__init__`` (after ``super().__init__()``) and define ``forward``.

    >>> class Net(NnModule):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = Parameter(Tensor.ones("f32", 3))
    ...     def forward(self, x):
    ...         return x * self.scale
    """

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())

    # -- calling ----------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'module {type(self).__name__} is missing the required '
                                  f'"forward" method')

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # -- registration -----------------------------------------------------------------------------
    def _require_init(self, what: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before NnModule.__init__() call "
                                 f"(call super().__init__() first in {type(self).__name__})")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (or None, a declared but absent parameter such as ``bias=False``)."""
        self._require_init("parameters")
        _check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute {name!r} already exists")
        if param is not None and not isinstance(param, Parameter):
            raise ArgumentError(f"cannot assign a {type(param).__name__} object to parameter "
                                f"{name!r} (om.nn.Parameter or None expected)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | np.ndarray | None,
                        persistent: bool = True) -> None:
        """Register a tensor that is state but not trained (running statistics).

        Persistent buffers appear in ``state_dict()``; ``persistent=False`` keeps one out.
        """
        self._require_init("buffers")
        _check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute {name!r} already exists")
        if isinstance(tensor, np.ndarray):
            tensor = Tensor.from_numpy(tensor)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise ArgumentError(f"cannot assign a {type(tensor).__name__} object to buffer "
                                f"{name!r} (Tensor or None expected)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: "NnModule | None") -> None:
        """Register a submodule under ``name`` (what attribute assignment does)."""
        self._require_init("child modules")
        _check_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute {name!r} already exists")
        if module is not None and not isinstance(module, NnModule):
            raise ArgumentError(f"{type(module).__name__} is not an NnModule subclass")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            self._require_init("parameters")
            self._forget(name)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise ArgumentError(f"cannot assign a {type(value).__name__} object to parameter "
                                    f"{name!r} (om.nn.Parameter or None expected)")
            params[name] = None
            return
        modules = d.get("_modules")
        if isinstance(value, NnModule):
            self._require_init("child modules")
            self._forget(name)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise ArgumentError(f"cannot assign a {type(value).__name__} object to child "
                                    f"module {name!r} (NnModule or None expected)")
            modules[name] = None
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if isinstance(value, np.ndarray):
                value = Tensor.from_numpy(value)
            if value is not None and not isinstance(value, Tensor):
                raise ArgumentError(f"cannot assign a {type(value).__name__} object to buffer "
                                    f"{name!r} (Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        self.__dict__.pop(name, None)
        for table in ("_parameters", "_buffers", "_modules"):
            self.__dict__[table].pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup failed: look in the three tables
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            t = d.get(table)
            if t is not None and name in t:
                return t[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_buffers", "_modules"):
            t = self.__dict__.get(table)
            if t is not None and name in t:
                del t[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        names = set(super().__dir__())
        for table in ("_parameters", "_buffers", "_modules"):
            names.update(self.__dict__.get(table, ()))
        return sorted(names)

    # -- walking the tree -----------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "NnModule"]]:
        """This module and every submodule with its dotted name (this one is ``""``)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator["NnModule"]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, "NnModule"]]:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator["NnModule"]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, table: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, value in mod.__dict__[table].items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, mod, name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, Parameter)`` pairs, each shared parameter once (PyTorch's order)."""
        for full, _mod, _name, p in self._named_members("_parameters", prefix, recurse,
                                                         remove_duplicate):
            yield full, p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        for full, _mod, _name, b in self._named_members("_buffers", prefix, recurse,
                                                         remove_duplicate):
            yield full, b

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn) -> "NnModule":
        """Call ``fn(module)`` on every submodule (children first), then on this one."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- modes and gradients --------------------------------------------------------------------
    def train(self, mode: bool = True) -> "NnModule":
        """Set training mode on this module and every submodule; returns self."""
        if not isinstance(mode, bool):
            raise ArgumentError(f"train(mode): mode is expected to be a bool, got {mode!r}")
        object.__setattr__(self, "training", mode)
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> "NnModule":
        """Evaluation mode (dropout off, batch norm uses its running statistics); returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "NnModule":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop (or zero) the gradient of every parameter."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = Tensor._wrap(np.zeros_like(p.grad._data))

    def to(self, dtype) -> "NnModule":
        """Cast every floating-point parameter and buffer to ``dtype`` (in place; returns self)."""
        dt = DType.parse(dtype)
        if not dt.is_float:
            raise ArgumentError(f"NnModule.to only accepts floating point dtypes, got {dt}")
        for t in list(self.parameters()) + list(self.buffers()):
            if t.dtype.is_float and t._data.dtype != dt.numpy:
                t._data = t._data.astype(dt.numpy)
                t._version += 1
                if t.grad is not None:
                    t.grad = Tensor._wrap(t.grad._data.astype(dt.numpy))
        return self

    def float(self) -> "NnModule":
        return self.to(DType.F32)

    def double(self) -> "NnModule":
        return self.to(DType.F64)

    # -- state dict -----------------------------------------------------------------------------
    def _state_entries(self) -> Iterator[tuple[str, Tensor]]:
        """Every persistent entry with its dotted key (shared tensors under each of their names)."""
        for prefix, mod in self.named_modules(remove_duplicate=True):
            dot = prefix + ("." if prefix else "")
            for name, p in mod._parameters.items():
                if p is not None:
                    yield dot + name, p
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent_buffers:
                    yield dot + name, b

    def state_dict(self, *, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> "OrderedDict[str, Tensor]":
        """Parameters and persistent buffers by dotted name.

        Values are Tensors sharing memory with the module (``np.asarray(v)`` gives the array);
        ``keep_vars=True`` returns the Parameter objects themselves.
        """
        out = OrderedDict() if destination is None else destination
        for key, t in self._state_entries():
            out[prefix + key] = t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any],
                        strict: bool = True) -> IncompatibleKeys:
        """Copy values from ``state_dict`` (Tensors, numpy arrays, or any array-like such as a
        PyTorch tensor) into this module's parameters and buffers, in place.

        Every entry is checked before anything changes: a wrong shape or an incompatible dtype
        (integer into float, float into integer, ...) is always an error; missing and unexpected
        keys are an error when ``strict`` (the default) and are returned either way.
        """
        if not isinstance(state_dict, Mapping):
            raise ArgumentError(f"load_state_dict expects a mapping of names to arrays, got "
                                f"{type(state_dict).__name__}")
        own = OrderedDict(self._state_entries())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        mismatched: dict[str, str] = {}
        updates = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            arr = _as_array(state_dict[key], key)
            tshape = target._data.shape
            if arr.shape != tshape:
                mismatched[key] = (f"size mismatch for {key}: copying a param with shape "
                                   f"{tuple(arr.shape)} from checkpoint, the shape in current "
                                   f"model is {tuple(tshape)}")
                continue
            src_kind, dst_kind = _kind(arr.dtype), _kind(target._data.dtype)
            if src_kind != dst_kind:
                mismatched[key] = (f"dtype mismatch for {key}: cannot load {src_kind} values "
                                   f"({arr.dtype}) into a {dst_kind} tensor "
                                   f"({target._data.dtype})")
                continue
            updates.append((target, arr))
        if mismatched or (strict and (missing or unexpected)):
            lines = []
            if strict and unexpected:
                lines.append("Unexpected key(s) in state_dict: "
                             + ", ".join(f'"{k}"' for k in unexpected) + ".")
            if strict and missing:
                lines.append("Missing key(s) in state_dict: "
                             + ", ".join(f'"{k}"' for k in missing) + ".")
            lines.extend(mismatched.values())
            raise StateDictError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(lines), missing, unexpected, mismatched)
        for target, arr in updates:
            data = target._data
            if data.flags.writeable:
                np.copyto(data, arr, casting="unsafe")
            else:
                target._data = np.array(arr, dtype=data.dtype, copy=True)
            target._version += 1
        return IncompatibleKeys(missing, unexpected)

    # -- tracing ----------------------------------------------------------------------------------
    def trace(self, example, *axis_names, check: bool = True):
        """Record this module's forward into a `TracedModel` (see ``onemodel.trace``): one axis
        name or None per axis of ``example``; named axes stay symbolic."""
        from ..trace import trace_module

        return trace_module(self, example, *axis_names, check=check)

    # -- printing ---------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The constructor arguments shown in ``repr`` (override in layers)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = type(self).__name__ + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


__all__ = ["NnModule", "StateDictError", "IncompatibleKeys"]
