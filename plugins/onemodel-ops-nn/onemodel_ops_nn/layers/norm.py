"""BatchNorm2d and LayerNorm with PyTorch's parameters, buffers and running-statistics rule."""
from __future__ import annotations

import numbers

import numpy as np

from onemodel import Tensor, ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule, init

from ._util import new_buffer, new_param, positive_int


def register_running_stats(module: NnModule, num_features: int, track: bool, dtype) -> None:
    """PyTorch's three buffers of a norm that tracks statistics (None each when it does not),
    under torch's names, so its state_dict loads as it is."""
    if track:
        module.register_buffer("running_mean", new_buffer(0.0, (num_features,), dtype))
        module.register_buffer("running_var", new_buffer(1.0, (num_features,), dtype))
        module.register_buffer("num_batches_tracked",
                               Tensor.from_numpy(np.zeros((), dtype=np.int64)))
    else:
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            module.register_buffer(name, None)


def reset_running_stats(module: NnModule) -> None:
    """Mean 0, variance 1, no batches counted (a module without the buffers is left alone)."""
    if module.track_running_stats:
        init.zeros_(module.running_mean)
        init.ones_(module.running_var)
        module.num_batches_tracked._data[...] = 0


def blend_running_stats(module: NnModule, mean: np.ndarray, var: np.ndarray,
                        factor: float) -> None:
    """``running = (1 - factor) * running + factor * batch`` for the mean and the variance, in
    place (their versions bumped), as torch's batch and instance norms update them."""
    for buf, stat in ((module.running_mean, mean), (module.running_var, var)):
        buf._data[...] = (1 - factor) * buf._data + factor * stat.astype(buf._data.dtype)
        buf._version += 1


def norm_extra_repr(module: NnModule) -> str:
    """The repr of torch's ``_NormBase`` (batch and instance norms alike)."""
    return (f"{module.num_features}, eps={module.eps}, momentum={module.momentum}, "
            f"affine={module.affine}, bias={module.bias is not None}, "
            f"track_running_stats={module.track_running_stats}")


class BatchNorm2d(NnModule):
    """Batch normalisation over (N, C, H, W) per channel.

    Training: normalises with the batch's statistics and updates ``running_mean`` /
    ``running_var`` (unbiased) with ``momentum`` (``momentum=None``: a cumulative average), and
    counts ``num_batches_tracked``. Eval: normalises with the running statistics.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None, dtype=None,
                 *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = positive_int("BatchNorm2d", "num_features", num_features)
        self.eps = float(eps)
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = new_param((num_features,), dtype)
            if bias:
                self.bias = new_param((num_features,), dtype)
            else:  # PyTorch 2.13's keyword-only bias=False: a scale without a shift
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        register_running_stats(self, num_features, track_running_stats, dtype)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        reset_running_stats(self)

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, x) -> None:
        if x.ndim != 4:
            raise ArgumentError(f"BatchNorm2d: expected 4D input (got {x.ndim}D input)")

    def forward(self, x):
        self._check_input_dim(x)
        use_batch_stats = self.training or self.running_mean is None
        if self.training and self.track_running_stats:
            self._update_running_stats(x)
        c = self.num_features
        dt = x.dtype.numpy
        if use_batch_stats:
            # the running statistics are updated above; the op sees throw-away copies, so the
            # result is the same whether or not its kernel also updates them
            mean = Tensor.from_numpy(np.zeros(c, dtype=dt))
            var = Tensor.from_numpy(np.ones(c, dtype=dt))
        else:
            mean, var = self.running_mean, self.running_var
        return ops.batch_norm(x, mean, var, self.weight, self.bias, training=use_batch_stats,
                              momentum=0.0 if self.momentum is None else float(self.momentum),
                              eps=self.eps)

    def _update_running_stats(self, x) -> None:
        self.num_batches_tracked._data[...] += 1
        self.num_batches_tracked._version += 1
        factor = (1.0 / float(self.num_batches_tracked._data) if self.momentum is None
                  else float(self.momentum))
        data = x._data
        n = data.size // data.shape[1]
        axes = (0,) + tuple(range(2, data.ndim))  # every axis but the channels
        mean = data.mean(axis=axes)
        var = data.var(axis=axes) * (n / max(n - 1, 1))
        blend_running_stats(self, mean, var, factor)

    def extra_repr(self) -> str:
        return norm_extra_repr(self)


class LayerNorm(NnModule):
    """Normalises over the trailing ``normalized_shape`` axes; ``weight`` ones, ``bias`` zeros."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(positive_int("LayerNorm", "normalized_shape", d)
                                      for d in normalized_shape)
        self.eps = float(eps)
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = new_param(self.normalized_shape, dtype)
            if bias:
                self.bias = new_param(self.normalized_shape, dtype)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, x):
        return ops.layer_norm(x, weight=self.weight, bias=self.bias,
                              normalized_shape=self.normalized_shape, eps=self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


__all__ = ["BatchNorm2d", "LayerNorm"]
