"""Upsample, PixelShuffle, PixelUnshuffle (PyTorch's arguments and repr)."""
from __future__ import annotations

import numbers

from onemodel import ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule

from ._checks import UnsupportedArgument
from ._util import positive_int

_MODES = ("nearest", "linear", "bilinear")
_TORCH_ONLY = ("bicubic", "trilinear", "nearest-exact", "area")


def _scale(value):
    """PyTorch keeps ``scale_factor`` as a float, or a tuple of floats."""
    if value is None:
        return None
    vals = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or v <= 0:
            raise ArgumentError(f"Upsample: scale_factor must be a positive number or one per "
                                f"spatial axis, got {value!r}")
    return tuple(float(v) for v in vals) if isinstance(value, (tuple, list)) else float(value)


class Upsample(NnModule):
    """Resizes (N, C, L) or (N, C, H, W) input to ``size`` or by ``scale_factor``; with a
    ``scale_factor`` the spatial axes may stay symbolic in a trace."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor=None) -> None:
        super().__init__()
        if mode in _TORCH_ONLY:
            raise UnsupportedArgument(f"Upsample: mode {mode!r} is not supported (only "
                                      f"{', '.join(map(repr, _MODES))})")
        if mode not in _MODES:
            raise ArgumentError(f"Upsample: mode must be one of {', '.join(map(repr, _MODES))}, "
                                f"got {mode!r}")
        if (size is None) == (scale_factor is None):
            raise ArgumentError("Upsample: give exactly one of size and scale_factor")
        if align_corners is not None and mode == "nearest":
            raise ArgumentError("Upsample: align_corners can only be set with the interpolating "
                                "modes linear and bilinear")
        if recompute_scale_factor:
            raise UnsupportedArgument("Upsample: recompute_scale_factor=True is not supported")
        if size is not None:
            for s in (size if isinstance(size, (tuple, list)) else (size,)):
                positive_int("Upsample", "size", s)
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = _scale(scale_factor)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, x):
        return ops.interpolate(x, size=self.size, scale_factor=self.scale_factor, mode=self.mode,
                               align_corners=self.align_corners)

    def extra_repr(self) -> str:
        info = (f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None
                else f"size={self.size!r}")
        return info + f", mode={self.mode!r}"


class PixelShuffle(NnModule):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r)."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = positive_int("PixelShuffle", "upscale_factor", upscale_factor)

    def forward(self, x):
        return ops.pixel_shuffle(x, upscale_factor=self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(NnModule):
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W), the inverse of PixelShuffle."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = positive_int("PixelUnshuffle", "downscale_factor",
                                             downscale_factor)

    def forward(self, x):
        return ops.pixel_unshuffle(x, downscale_factor=self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


__all__ = ["Upsample", "PixelShuffle", "PixelUnshuffle"]
