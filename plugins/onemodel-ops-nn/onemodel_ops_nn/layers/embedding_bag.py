"""EmbeddingBag as torch.nn.EmbeddingBag: sums, means or maxima of bags of embeddings.

Built from ``embedding`` and masks, with no op of its own. Bags come as the rows of a 2-D input,
or as a 1-D input cut at ``offsets``; there a (bags, positions) membership mask is made from
comparisons (``offsets[b] <= i < offsets[b + 1]``, the positions counted by ``cumsum``, so no
size is read and a trace keeps both lengths symbolic), and the bags reduce with a matmul (sum,
mean) or a masked max. Entries equal to ``padding_idx`` leave their bag; an empty bag gives zeros.
"""
from __future__ import annotations

import numpy as np

from onemodel import DType, Tensor, ops
from onemodel.core import tracing_hooks
from onemodel.errors import ArgumentError
from onemodel.nn import Parameter, init

from ._util import as_tensor, new_param, positive_int
from .basic import NnModule

MODES = ("sum", "mean", "max")
_END = np.iinfo(np.int64).max   # the end of the last bag when offsets has no closing entry


class EmbeddingBag(NnModule):
    """``bag(input, offsets=None, per_sample_weights=None) -> (bags, embedding_dim)``;
    ``weight`` is (num_embeddings, embedding_dim) ~ N(0, 1), the ``padding_idx`` row zero."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device=None, dtype=None) -> None:
        super().__init__()
        name = "EmbeddingBag"
        self.num_embeddings = positive_int(name, "num_embeddings", num_embeddings, 0)
        self.embedding_dim = positive_int(name, "embedding_dim", embedding_dim, 0)
        if mode not in MODES:
            raise ArgumentError(f"{name}: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise ArgumentError(f"{name}: max_norm, scale_grad_by_freq and sparse are not "
                                f"supported (leave them at None / False)")
        if device not in (None, "cpu"):
            raise ArgumentError(f"{name}: device {device!r}: OneModel modules live on the CPU "
                                f"(device=None or 'cpu')")
        if padding_idx is not None:
            if isinstance(padding_idx, bool) or not isinstance(padding_idx, int) or \
                    not -num_embeddings <= padding_idx < num_embeddings:
                raise ArgumentError(f"{name}: padding_idx must be an int within num_embeddings "
                                    f"({num_embeddings}), got {padding_idx!r}")
            padding_idx %= num_embeddings
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.mode = mode
        self.include_last_offset = bool(include_last_offset)
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = new_param((num_embeddings, embedding_dim), dtype)
            self.reset_parameters()
        else:
            w = np.asarray(_weight._data if isinstance(_weight, Tensor) else _weight)
            if w.shape != (num_embeddings, embedding_dim):
                raise ArgumentError(f"{name}: _weight has shape {w.shape}, expected "
                                    f"{(num_embeddings, embedding_dim)}")
            self.weight = Parameter(Tensor.from_numpy(np.array(w)))

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, **kwargs) -> "EmbeddingBag":
        arr = np.array(embeddings._data if isinstance(embeddings, Tensor) else embeddings)
        if arr.ndim != 2:
            raise ArgumentError("EmbeddingBag.from_pretrained: embeddings must be 2-d")
        bag = cls(arr.shape[0], arr.shape[1], _weight=arr, **kwargs)
        bag.weight.requires_grad_(not freeze)
        return bag

    def forward(self, input, offsets=None, per_sample_weights=None):
        x = as_tensor(input)
        if x.dtype.is_float or x.dtype == DType.BOOL:
            raise ArgumentError(f"EmbeddingBag: input must hold integer indices, got {x.dtype}")
        weights = None
        if per_sample_weights is not None:
            if self.mode != "sum":
                raise ArgumentError(f"EmbeddingBag: per_sample_weights are only supported for "
                                    f"mode='sum' (got mode={self.mode!r}), as in PyTorch")
            weights = as_tensor(per_sample_weights)
            if weights.ndim != x.ndim:
                raise ArgumentError(f"EmbeddingBag: per_sample_weights must have the shape of "
                                    f"input {tuple(x.shape)}, got {tuple(weights.shape)}")
        if x.ndim == 2:
            if offsets is not None:
                raise ArgumentError("EmbeddingBag: offsets must be None when input is 2-D "
                                    "(each row is a bag)")
            return self._rows(x, weights)
        if x.ndim != 1:
            raise ArgumentError(f"EmbeddingBag: input must be 1-D (with offsets) or 2-D (bags "
                                f"as rows), got shape {tuple(x.shape)}")
        if offsets is None:
            raise ArgumentError("EmbeddingBag: offsets must be given when input is 1-D")
        return self._cut(x, self._offsets(offsets), weights)

    def _offsets(self, offsets):
        off = as_tensor(offsets)
        if off.ndim != 1 or off.dtype.is_float or off.dtype == DType.BOOL:
            raise ArgumentError(f"EmbeddingBag: offsets must be a 1-D integer tensor, got "
                                f"{off.dtype} of shape {tuple(off.shape)}")
        if tracing_hooks.current() is None and off.shape[0] and int(off.numpy()[0]) != 0:
            raise ArgumentError(f"EmbeddingBag: offsets[0] has to be 0 (the first bag starts "
                                f"at position 0), got {int(off.numpy()[0])}")
        return off.to(DType.I64)

    def _keep(self, x):
        """1.0 where an entry counts (not ``padding_idx``), or None when all do."""
        if self.padding_idx is None:
            return None
        return (x != self.padding_idx).to(self.weight.dtype)

    def _rows(self, x, weights):
        emb = ops.embedding(x, self.weight)                          # (B, N, D)
        keep = self._keep(x)
        if self.mode == "max":
            if keep is None:
                return emb.max(axis=1)
            return _masked_max(emb, keep.unsqueeze(-1) > 0, axis=1)
        scale = _mul(keep, weights)
        total = emb.sum(axis=1) if scale is None else (emb * scale.unsqueeze(-1)).sum(axis=1)
        if self.mode == "sum":
            return total
        if keep is None:
            return emb.mean(axis=1)
        return total / ops.clip(keep.sum(axis=1, keepdims=True), 1.0, None)

    def _cut(self, x, off, weights):
        emb = ops.embedding(x, self.weight)                          # (n, D)
        pos = ops.cumsum(ops.ones_like(x, dtype=DType.I64), axis=0) - 1      # 0 .. n-1
        if self.include_last_offset:
            starts, ends = off[:-1], off[1:]
        else:
            ends = ops.concat([off[1:], np.array([_END], np.int64)], axis=0)
            starts = off
        at = pos.unsqueeze(0)
        member = ops.logical_and(starts.unsqueeze(1) <= at, at < ends.unsqueeze(1))  # (B, n)
        keep = self._keep(x)
        if keep is not None:
            member = ops.logical_and(member, keep.unsqueeze(0) > 0)
        if self.mode == "max":
            return _masked_max(emb.unsqueeze(0), member.unsqueeze(-1), axis=1)
        share = member.to(self.weight.dtype)
        if weights is not None:
            share = share * weights.unsqueeze(0)
        total = ops.matmul(share, emb)                               # (B, D)
        if self.mode == "sum":
            return total
        count = member.to(self.weight.dtype).sum(axis=1, keepdims=True)
        return total / ops.clip(count, 1.0, None)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


def _mul(a, b):
    if a is None:
        return b
    return a if b is None else a * b


def _masked_max(values, mask, axis: int):
    """The max over ``axis`` of the entries where ``mask`` holds; 0 where none does."""
    top = ops.where(mask, values, float("-inf")).max(axis=axis)
    return ops.where(mask.any(axis=axis), top, 0.0)


__all__ = ["EmbeddingBag"]
