"""ModuleDict, ParameterList, ParameterDict: PyTorch's containers, with its state_dict keys
(``<dict key>.<name>`` for ModuleDict, ``0``, ``1``... and ``<key>`` for the parameter ones)."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from onemodel import Tensor
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule, Parameter


def _pairs(layer: str, values) -> Iterable[tuple]:
    """The (key, value) pairs of a mapping or of an iterable of pairs, as ``dict.update``."""
    if isinstance(values, Mapping):
        return list(values.items())
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ArgumentError(f"{layer}.update should be called with an iterable of key/value "
                            f"pairs or a mapping, got {type(values).__name__}")
    pairs = []
    for j, item in enumerate(values):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ArgumentError(f"{layer} update sequence element #{j} should be a key/value "
                                f"pair, got {item!r}")
        pairs.append(tuple(item))
    return pairs


def _key(layer: str, key) -> str:
    if not isinstance(key, str):
        raise ArgumentError(f"{layer}: keys must be strings, got {type(key).__name__} {key!r}")
    return key


class ModuleDict(NnModule):
    """Submodules by string key, in insertion order (no forward of its own)."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> NnModule:
        return self._modules[key]

    def __setitem__(self, key: str, module: NnModule) -> None:
        self.add_module(_key("ModuleDict", key), module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> NnModule:
        module = self[key]
        del self[key]
        return module

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        for key, module in _pairs("ModuleDict", modules):
            self[key] = module


def _as_parameter(layer: str, value) -> Parameter:
    """A Parameter as it is; a Tensor or numpy array becomes one (as PyTorch wraps tensors)."""
    if isinstance(value, Parameter):
        return value
    if isinstance(value, np.ndarray):
        value = Tensor.from_numpy(value)
    if isinstance(value, Tensor):
        return Parameter(value.detach())
    raise ArgumentError(f"{layer}: expected an om.nn.Parameter or a Tensor, got "
                        f"{type(value).__name__}")


def _describe(p: Parameter) -> str:
    size = "x".join(str(s) for s in p.shape)
    return f"Parameter containing: [{p._data.dtype.name} of size {size}]"


class ParameterList(NnModule):
    """Parameters registered under ``0``, ``1``, ... (Tensors are wrapped as Parameters)."""

    def __init__(self, values: Iterable | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def _index(self, idx: int) -> int:
        n = len(self)
        if isinstance(idx, bool) or not isinstance(idx, int) or not -n <= idx < n:
            raise IndexError(f"index {idx!r} is out of range for a ParameterList of {n}")
        return idx % n

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._parameters.values())[idx])
        return self._parameters[str(self._index(idx))]

    def __setitem__(self, idx: int, value) -> None:
        self.register_parameter(str(self._index(idx)), _as_parameter("ParameterList", value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())

    def __iadd__(self, values: Iterable) -> "ParameterList":
        return self.extend(values)

    def append(self, value) -> "ParameterList":
        self.register_parameter(str(len(self)), _as_parameter("ParameterList", value))
        return self

    def extend(self, values: Iterable) -> "ParameterList":
        if isinstance(values, Tensor) or not isinstance(values, Iterable):
            raise ArgumentError(f"ParameterList.extend should be called with an iterable, got "
                                f"{type(values).__name__}")
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in self._parameters.items())


class ParameterDict(NnModule):
    """Parameters by string key, in insertion order (Tensors are wrapped as Parameters)."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Parameter:
        return self._parameters[key]

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(_key("ParameterDict", key), _as_parameter("ParameterDict", value))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def __contains__(self, key) -> bool:
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def get(self, key: str, default=None):
        return self._parameters.get(key, default)

    def pop(self, key: str) -> Parameter:
        value = self[key]
        del self[key]
        return value

    def setdefault(self, key: str, default=None) -> Parameter:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        self._parameters.clear()

    def update(self, parameters) -> None:
        for key, value in _pairs("ParameterDict", parameters):
            self[key] = value

    def copy(self) -> "ParameterDict":
        return type(self)(OrderedDict(self._parameters))

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in self._parameters.items())


__all__ = ["ModuleDict", "ParameterList", "ParameterDict"]
