"""Dropout1d and Dropout2d: whole channels zeroed in training (PyTorch's ``feature_dropout``)."""
from __future__ import annotations

import warnings

from onemodel import Tensor
from onemodel.core import tracing_hooks
from onemodel.errors import ArgumentError, TraceException
from onemodel.nn import NnModule

from ..dropout import scaled_mask
from ._checks import flag
from ._util import probability


class _ChannelDropout(NnModule):
    """In training, each channel (axis 1) of each sample is zeroed with probability ``p`` and
    the rest scaled by ``1/(1-p)``; the identity in eval mode. The mask comes from the generator
    ``om.manual_seed`` seeds."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        self.p = probability(type(self).__name__, "p", p)
        self.inplace = flag(type(self).__name__, "inplace", inplace)

    def _channels_axis_input(self, x):
        """(x as (N, C, *spatial), whether a batch axis was added)."""
        raise NotImplementedError

    def forward(self, x):
        x, unbatched = self._channels_axis_input(x)
        if self.training and self.p > 0.0:
            if tracing_hooks.current() is not None:
                raise TraceException(f"{type(self).__name__}: dropout in training mode draws a "
                                     f"random mask at every call; trace in eval mode")
            shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2)
            x = x * Tensor.from_numpy(scaled_mask(shape, self.p, x.dtype.numpy))
        return x.squeeze(0) if unbatched else x

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_ChannelDropout):
    """Channel dropout of (N, C, L) or unbatched (C, L) input."""

    def _channels_axis_input(self, x):
        if x.ndim not in (2, 3):
            raise ArgumentError(f"Dropout1d: expected 2D or 3D input, but received a "
                                f"{x.ndim}D input. Note that dropout1d exists to provide "
                                f"channel-wise dropout on inputs with 1 spatial dimension, a "
                                f"channel dimension, and an optional batch dimension")
        return (x.unsqueeze(0), True) if x.ndim == 2 else (x, False)


class Dropout2d(_ChannelDropout):
    """Channel dropout of (N, C, H, W) input; a 3D input is taken as (N, C, L), as PyTorch
    does (with its warning)."""

    def _channels_axis_input(self, x):
        if x.ndim < 2:
            raise ArgumentError(f"Dropout2d: expected a 4D (N, C, H, W) input, got {x.ndim}D")
        if x.ndim == 3:
            warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                          "channel-wise 1D dropout behavior is desired - input is interpreted "
                          "as shape (N, C, L), where C is the channel dim.", stacklevel=3)
        elif x.ndim != 4:
            warnings.warn(f"dropout2d: Received a {x.ndim}-D input to dropout2d; dropout2d "
                          f"exists for 3D or 4D inputs", stacklevel=3)
        return x, False


__all__ = ["Dropout1d", "Dropout2d"]
