"""Linear, Embedding, Dropout, activations, Flatten, containers (Sequential, ModuleList)."""
from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Iterable, Iterator

import numpy as np

from onemodel import GradMode, Tensor, ops
from onemodel.core import tracing_hooks
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule, Parameter, init

from ._util import new_param, positive_int, probability, reset_weight_and_bias, weight_and_bias


class Identity(NnModule):
    """Returns its input unchanged (a placeholder that keeps a model's structure)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, x):
        return x


class Linear(NnModule):
    """``y = x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features).

    Initialised as PyTorch: weight ~ kaiming_uniform(a=sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)),
    bias ~ U(-1/sqrt(in), 1/sqrt(in)).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype=None) -> None:
        super().__init__()
        self.in_features = positive_int("Linear", "in_features", in_features, 0)
        self.out_features = positive_int("Linear", "out_features", out_features, 0)
        weight_and_bias(self, (out_features, in_features), out_features if bias else None, dtype)

    def reset_parameters(self) -> None:
        reset_weight_and_bias(self, draw_at_zero_fan_in=True)

    def forward(self, x):
        return ops.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(NnModule):
    """A lookup table ``weight[indices]``; ``weight`` is (num_embeddings, embedding_dim) ~ N(0, 1).

    ``padding_idx``: that row starts at zero and gets no gradient (as in PyTorch).
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight=None, _freeze: bool = False, dtype=None) -> None:
        super().__init__()
        self.num_embeddings = positive_int("Embedding", "num_embeddings", num_embeddings, 0)
        self.embedding_dim = positive_int("Embedding", "embedding_dim", embedding_dim, 0)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ArgumentError(f"Embedding: padding_idx must be within num_embeddings "
                                    f"({num_embeddings}), got {padding_idx}")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx = padding_idx
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError("Embedding: max_norm, scale_grad_by_freq and sparse are "
                                      "not supported")
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = new_param((num_embeddings, embedding_dim), dtype)
            self.reset_parameters()
        else:
            w = np.asarray(_weight._data if isinstance(_weight, Tensor) else _weight)
            if w.shape != (num_embeddings, embedding_dim):
                raise ArgumentError(f"Embedding: _weight has shape {w.shape}, expected "
                                    f"{(num_embeddings, embedding_dim)}")
            self.weight = Parameter(Tensor.from_numpy(w), requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None,
                        **kwargs) -> "Embedding":
        arr = np.array(embeddings._data if isinstance(embeddings, Tensor) else embeddings)
        if arr.ndim != 2:
            raise ArgumentError("Embedding.from_pretrained: embeddings must be 2-d")
        return cls(arr.shape[0], arr.shape[1], padding_idx=padding_idx, _weight=arr,
                   _freeze=freeze, **kwargs)

    def forward(self, indices):
        weight = self.weight
        if (self.padding_idx is not None and weight.requires_grad and GradMode.is_enabled()
                and tracing_hooks.current() is None):
            # same values, but the padding row's gradient is cut (as PyTorch's embedding does)
            keep = np.ones((self.num_embeddings, 1), dtype=weight._data.dtype)
            keep[self.padding_idx] = 0
            weight = weight * keep + weight.detach() * (1 - keep)
        return ops.embedding(indices, weight)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class Dropout(NnModule):
    """Zeroes each element with probability ``p`` in training mode and scales the rest by
    ``1/(1-p)``; the identity in eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        self.p = probability("Dropout", "p", p)
        self.inplace = inplace

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        return ops.dropout(x, p=self.p, training=True)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class ReLU(NnModule):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return ops.relu(x)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(NnModule):
    """``x * Phi(x)``; ``approximate="tanh"`` uses the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ArgumentError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return ops.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Sigmoid(NnModule):
    def forward(self, x):
        return ops.sigmoid(x)


class Tanh(NnModule):
    def forward(self, x):
        return ops.tanh(x)


def _legacy_softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(NnModule):
    """Softmax along ``dim`` (PyTorch's argument name; ``om.ops.softmax`` calls it ``axis``)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x):
        dim = self.dim if self.dim is not None else _legacy_softmax_dim("Softmax", x.ndim)
        return ops.softmax(x, axis=dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(NnModule):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x):
        dim = self.dim if self.dim is not None else _legacy_softmax_dim("LogSoftmax", x.ndim)
        return ops.log_softmax(x, axis=dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Flatten(NnModule):
    """Flattens axes ``start_dim`` .. ``end_dim`` into one (by default all but the batch axis)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return ops.flatten(x, start_axis=self.start_dim, end_axis=self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Sequential(NnModule):
    """Modules applied in order. ``Sequential(a, b, c)`` names them ``0``, ``1``, ``2``;
    ``Sequential(OrderedDict(name=module, ...))`` keeps the given names.

    Indexing with an int gives a module, with a slice a new Sequential sharing the modules.
    """

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (OrderedDict, dict)):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _index(self, idx: int) -> int:
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range for a Sequential of {n} modules")
        return idx % n

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[self._index(idx)]

    def __setitem__(self, idx: int, module: NnModule) -> None:
        key = list(self._modules)[self._index(idx)]
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        targets = keys[idx] if isinstance(idx, slice) else [keys[self._index(idx)]]
        for k in targets:
            del self._modules[k]
        # keep numeric names contiguous, as PyTorch does
        items = list(self._modules.items())
        if all(k.isdigit() for k, _ in items):
            self._modules.clear()
            for i, (_, m) in enumerate(items):
                self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[NnModule]:
        return iter(self._modules.values())

    def append(self, module: NnModule) -> "Sequential":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[NnModule]) -> "Sequential":
        for m in modules:
            self.append(m)
        return self

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x


class ModuleList(NnModule):
    """A list of submodules registered under ``0``, ``1``, ... (no forward of its own)."""

    def __init__(self, modules: Iterable[NnModule] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return type(self)(mods[idx])
        return mods[idx]

    def __setitem__(self, idx: int, module: NnModule) -> None:
        setattr(self, list(self._modules)[idx], module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[NnModule]:
        return iter(self._modules.values())

    def append(self, module: NnModule) -> "ModuleList":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[NnModule]) -> "ModuleList":
        for m in modules:
            self.append(m)
        return self

    def __iadd__(self, modules: Iterable[NnModule]) -> "ModuleList":
        return self.extend(modules)

    def __repr__(self) -> str:
        """PyTorch's: runs of identical children print once, as ``(0-5): 6 x Layer(...)``."""
        runs: list[list] = []
        for i, text in enumerate(repr(m) for m in self):
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        if not runs:
            return type(self).__name__ + "()"
        heads = [f"({a}): {t}" if a == b else f"({a}-{b}): {b - a + 1} x {t}" for a, b, t in runs]
        lines = [h.replace("\n", "\n  ") for h in heads]  # a child's own lines, indented
        return type(self).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"


__all__ = ["Identity", "Linear", "Embedding", "Dropout", "ReLU", "GELU", "Sigmoid", "Tanh",
           "Softmax", "LogSoftmax", "Flatten", "Sequential", "ModuleList"]
