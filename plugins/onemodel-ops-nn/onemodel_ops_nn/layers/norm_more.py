"""BatchNorm1d, GroupNorm, InstanceNorm1d/2d, RMSNorm: PyTorch's arguments, parameters,
buffers, running-statistics rules and repr."""
from __future__ import annotations

import numbers

import numpy as np

from onemodel import ops
from onemodel.core import tracing_hooks
from onemodel.errors import ArgumentError, TraceException
from onemodel.nn import NnModule, init

from ._checks import flag, momentum, non_negative
from ._util import new_param, positive_int
from .norm import (BatchNorm2d, blend_running_stats, norm_extra_repr, register_running_stats,
                   reset_running_stats)


class BatchNorm1d(BatchNorm2d):
    """Batch normalisation of (N, C) or (N, C, L) input per channel, with BatchNorm2d's rules:
    batch statistics and a running-statistics update (``momentum=None``: a cumulative average)
    in training, the running statistics in eval."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        positive_int("BatchNorm1d", "num_features", num_features)
        _check_norm_args("BatchNorm1d", eps, momentum, affine, track_running_stats)
        flag("BatchNorm1d", "bias", bias)
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)

    def _check_input_dim(self, x) -> None:
        if x.ndim not in (2, 3):
            raise ArgumentError(f"BatchNorm1d: expected 2D or 3D input (got {x.ndim}D input)")
        if self.training and tracing_hooks.current() is None and \
                x.shape[0] * (x.shape[2] if x.ndim == 3 else 1) == 1:
            raise ArgumentError(f"BatchNorm1d: expected more than 1 value per channel when "
                                f"training, got input size {tuple(x.shape)}")


def _check_norm_args(layer, eps, momentum_, affine, track_running_stats) -> None:
    non_negative(layer, "eps", eps)
    momentum(layer, momentum_)
    flag(layer, "affine", affine)
    flag(layer, "track_running_stats", track_running_stats)


def _affine_params(module, channels: int, affine: bool, bias: bool, dtype) -> None:
    """``weight`` and (unless ``bias=False``, PyTorch 2.13's keyword) ``bias`` of shape
    (channels,) when ``affine``; both declared absent otherwise."""
    module.register_parameter("weight", new_param((channels,), dtype) if affine else None)
    module.register_parameter("bias", new_param((channels,), dtype) if affine and bias
                              else None)


def _reset_affine(module) -> None:
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class GroupNorm(NnModule):
    """Normalises each of ``num_groups`` channel groups of (N, C, ...) input; ``weight`` ones and
    ``bias`` zeros of shape (C,) when ``affine``."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_groups = positive_int("GroupNorm", "num_groups", num_groups)
        self.num_channels = positive_int("GroupNorm", "num_channels", num_channels)
        if num_channels % num_groups:
            raise ArgumentError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                                f"num_groups ({num_groups})")
        self.eps = non_negative("GroupNorm", "eps", eps)
        self.affine = flag("GroupNorm", "affine", affine)
        flag("GroupNorm", "bias", bias)
        _affine_params(self, num_channels, affine, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, x):
        return ops.group_norm(x, self.num_groups, self.weight, self.bias, eps=self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(NnModule):
    """PyTorch's ``_InstanceNorm``: each channel of each sample normalised over its positions.

    ``track_running_stats``: training updates ``running_mean`` / ``running_var`` with the mean
    over the batch of each sample's statistics (the variance unbiased), as PyTorch does;
    ``momentum=None`` then leaves them unchanged (PyTorch passes 0). Eval normalises with them.
    """

    _batched_ndim = 3

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        name = type(self).__name__
        self.num_features = positive_int(name, "num_features", num_features)
        _check_norm_args(name, eps, momentum, affine, track_running_stats)
        self.eps, self.momentum = float(eps), momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        flag(name, "bias", bias)
        _affine_params(self, num_features, affine, bias, dtype)
        register_running_stats(self, num_features, track_running_stats, dtype)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        reset_running_stats(self)

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def forward(self, x):
        name, nd = type(self).__name__, self._batched_ndim
        if x.ndim not in (nd - 1, nd):
            raise ArgumentError(f"{name}: expected {nd - 1}D or {nd}D input (got {x.ndim}D "
                                f"input)")
        unbatched = x.ndim == nd - 1
        if unbatched:
            x = x.unsqueeze(0)
        use_input_stats = self.training or not self.track_running_stats
        if use_input_stats:
            if self.training and self.track_running_stats:
                self._update_running_stats(x)
            y = ops.instance_norm(x, None, None, self.weight, self.bias, use_input_stats=True,
                                  eps=self.eps)
        else:
            y = ops.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                                  use_input_stats=False, eps=self.eps)
        return y.squeeze(0) if unbatched else y

    def _update_running_stats(self, x) -> None:
        if tracing_hooks.current() is not None:
            raise TraceException(f"{type(self).__name__}: updating the running statistics in "
                                 f"training mode cannot be traced; trace in eval mode")
        factor = 0.0 if self.momentum is None else float(self.momentum)
        data = x._data
        axes = tuple(range(2, data.ndim))
        n = int(np.prod([data.shape[a] for a in axes]))
        mean = data.mean(axis=axes).mean(axis=0)
        var = (data.var(axis=axes) * (n / max(n - 1, 1))).mean(axis=0)
        blend_running_stats(self, mean, var, factor)

    def extra_repr(self) -> str:
        return norm_extra_repr(self)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or unbatched (C, L) input."""

    _batched_ndim = 3


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or unbatched (C, H, W) input."""

    _batched_ndim = 4


class RMSNorm(NnModule):
    """``x / sqrt(mean(x**2 over normalized_shape) + eps) * weight``; ``eps=None`` is the
    dtype's machine epsilon (PyTorch); ``weight`` starts at ones."""

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(positive_int("RMSNorm", "normalized_shape", d)
                                      for d in normalized_shape)
        self.eps = None if eps is None else non_negative("RMSNorm", "eps", eps)
        self.elementwise_affine = flag("RMSNorm", "elementwise_affine", elementwise_affine)
        if elementwise_affine:
            self.weight = new_param(self.normalized_shape, dtype)
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x):
        return ops.rms_norm(x, self.normalized_shape, self.weight, eps=self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


__all__ = ["BatchNorm1d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "RMSNorm"]
