"""MaxPool1d, AvgPool1d and the adaptive pools, with PyTorch's arguments and repr.

PyTorch keeps MaxPool1d's arguments as given but turns AvgPool1d's into 1-tuples; both forms are
kept here so that ``repr`` matches.
"""
from __future__ import annotations

from onemodel import ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule

from ._checks import UnsupportedArgument, flag, ntuple, with_batch
from ._util import positive_int


class MaxPool1d(NnModule):
    """Max over ``kernel_size`` windows of (N, C, L) or (C, L); ``stride`` defaults to
    ``kernel_size``; padding is -inf."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices = flag("MaxPool1d", "return_indices", return_indices)
        self.ceil_mode = flag("MaxPool1d", "ceil_mode", ceil_mode)
        (k,) = ntuple("MaxPool1d", "kernel_size", kernel_size, 1, 1)
        ntuple("MaxPool1d", "stride", self.stride, 1, 1)
        (p,) = ntuple("MaxPool1d", "padding", padding, 1, 0)
        ntuple("MaxPool1d", "dilation", dilation, 1, 1)
        if p > k // 2:
            raise ArgumentError(f"MaxPool1d: padding should be at most half of kernel_size, got "
                                f"padding={padding} and kernel_size={kernel_size}")
        if return_indices:
            raise UnsupportedArgument("MaxPool1d: return_indices=True is not supported")

    def forward(self, x):
        x, unbatched = with_batch("MaxPool1d", x, 1)
        y = ops.max_pool1d(x, kernel_size=self.kernel_size, stride=self.stride,
                           padding=self.padding, dilation=self.dilation, ceil_mode=self.ceil_mode)
        return y.squeeze(0) if unbatched else y

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool1d(NnModule):
    """Mean over ``kernel_size`` windows of (N, C, L) or (C, L); padded zeros count in the mean
    unless ``count_include_pad=False``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = ntuple("AvgPool1d", "kernel_size", kernel_size, 1, 1)
        self.stride = ntuple("AvgPool1d", "stride",
                             stride if stride is not None else kernel_size, 1, 1)
        self.padding = ntuple("AvgPool1d", "padding", padding, 1, 0)
        if self.padding[0] > self.kernel_size[0] // 2:
            raise ArgumentError(f"AvgPool1d: padding should be at most half of kernel_size, got "
                                f"padding={padding} and kernel_size={kernel_size}")
        self.ceil_mode = flag("AvgPool1d", "ceil_mode", ceil_mode)
        self.count_include_pad = flag("AvgPool1d", "count_include_pad", count_include_pad)

    def forward(self, x):
        x, unbatched = with_batch("AvgPool1d", x, 1)
        y = ops.avg_pool1d(x, kernel_size=self.kernel_size, stride=self.stride,
                           padding=self.padding, ceil_mode=self.ceil_mode,
                           count_include_pad=self.count_include_pad)
        return y.squeeze(0) if unbatched else y

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _output_size(layer: str, value, n: int):
    """An int or ``n`` entries, each an int >= 1 or None (keep that axis's size)."""
    vals = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(vals) != n:
        raise ArgumentError(f"{layer}: output_size must be an int or {n} entries, got "
                            f"{value!r}")
    for v in vals:
        if v is not None:
            positive_int(layer, "output_size", v)
    return value


class _AdaptivePool(NnModule):
    _dims = 1

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = _output_size(type(self).__name__, output_size, self._dims)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Mean over ``output_size`` near-equal windows of (N, C, L) or (C, L)."""

    def forward(self, x):
        return ops.adaptive_avg_pool1d(x, output_size=self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Mean over near-equal windows giving ``output_size`` (an int, a pair, None keeps a size)."""

    _dims = 2

    def forward(self, x):
        return ops.adaptive_avg_pool2d(x, output_size=self.output_size)


class AdaptiveMaxPool2d(_AdaptivePool):
    """Max over near-equal windows giving ``output_size``."""

    _dims = 2

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = flag("AdaptiveMaxPool2d", "return_indices", return_indices)
        if return_indices:
            raise UnsupportedArgument("AdaptiveMaxPool2d: return_indices=True is not supported")

    def forward(self, x):
        return ops.adaptive_max_pool2d(x, output_size=self.output_size)


__all__ = ["MaxPool1d", "AvgPool1d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveMaxPool2d"]
