"""Conv1d, ConvTranspose1d, ConvTranspose2d: PyTorch's arguments, parameter shapes, init, repr.

``Conv1d`` takes PyTorch's ``padding="same"`` (asymmetric when the kernel span is even) and the
``padding_mode``\\ s ``"reflect"`` and ``"replicate"`` by padding with ``ops.pad`` first.
"""
from __future__ import annotations


from onemodel import ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule

from ._checks import UnsupportedArgument, flag, ntuple, with_batch
from ._util import positive_int, reset_weight_and_bias, weight_and_bias

_PAD_OP_MODE = {"reflect": "reflect", "replicate": "replicate"}


class _ConvBase(NnModule):
    """The shared parts of PyTorch's ``_ConvNd``: channels, groups, weight/bias, init, repr."""

    _dims = 1
    _transposed = False

    def _setup(self, in_channels, out_channels, kernel_size, stride, dilation, groups, bias,
               padding_mode, dtype) -> None:
        name, n = type(self).__name__, self._dims
        self.in_channels = positive_int(name, "in_channels", in_channels)
        self.out_channels = positive_int(name, "out_channels", out_channels)
        self.groups = positive_int(name, "groups", groups)
        if in_channels % groups:
            raise ArgumentError(f"{name}: in_channels ({in_channels}) must be divisible by "
                                f"groups ({groups})")
        if out_channels % groups:
            raise ArgumentError(f"{name}: out_channels ({out_channels}) must be divisible by "
                                f"groups ({groups})")
        self.kernel_size = ntuple(name, "kernel_size", kernel_size, n, 1)
        self.stride = ntuple(name, "stride", stride, n, 1)
        self.dilation = ntuple(name, "dilation", dilation, n, 1)
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ArgumentError(f"{name}: padding_mode must be one of 'zeros', 'reflect', "
                                f"'replicate' or 'circular', got {padding_mode!r}")
        if padding_mode == "circular" or (self._transposed and padding_mode != "zeros"):
            raise UnsupportedArgument(f"{name}: padding_mode {padding_mode!r} is not supported"
                                      + (" (only 'zeros', as PyTorch)" if self._transposed
                                         else ""))
        self.padding_mode = padding_mode
        flag(name, "bias", bias)
        if self._transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        weight_and_bias(self, shape, out_channels if bias else None, dtype)

    def reset_parameters(self) -> None:
        reset_weight_and_bias(self)

    def extra_repr(self) -> str:
        n = self._dims
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if getattr(self, "output_padding", (0,) * n) != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvBase):
    """1-d convolution over (N, C, L) or unbatched (C, L); ``weight`` is (out, in/groups, k).

    Initialised as PyTorch: weight ~ kaiming_uniform(a=sqrt(5)), bias ~ U(+-1/sqrt(fan_in)).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, dilation, groups, bias,
                    padding_mode, dtype)
        (k,), (d,) = self.kernel_size, self.dilation
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ArgumentError(f"Conv1d: invalid padding string {padding!r}, should be one "
                                    f"of 'valid', 'same'")
            if padding == "same" and self.stride != (1,):
                raise ArgumentError("Conv1d: padding='same' is not supported for strided "
                                    "convolutions")
            self.padding = padding
            total = d * (k - 1) if padding == "same" else 0
            self._sides = (total // 2, total - total // 2)
        else:
            self.padding = ntuple("Conv1d", "padding", padding, 1, 0)
            self._sides = (self.padding[0], self.padding[0])

    def forward(self, x):
        x, unbatched = with_batch("Conv1d", x, 1)
        left, right = self._sides
        if self.padding_mode == "zeros" and left == right:
            y = ops.conv1d(x, self.weight, self.bias, stride=self.stride, padding=(left,),
                           dilation=self.dilation, groups=self.groups)
        else:
            mode = _PAD_OP_MODE.get(self.padding_mode, "constant")
            x = ops.pad(x, pad=(left, right), mode=mode)
            y = ops.conv1d(x, self.weight, self.bias, stride=self.stride, padding=(0,),
                           dilation=self.dilation, groups=self.groups)
        return y.squeeze(0) if unbatched else y


class _ConvTransposeBase(_ConvBase):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__()
        name, n = type(self).__name__, self._dims
        if isinstance(padding, str):
            raise ArgumentError(f"{name}: padding must be an int or {n} ints (PyTorch's "
                                f"transposed convolutions take no padding string), got "
                                f"{padding!r}")
        self.padding = ntuple(name, "padding", padding, n, 0)
        self._setup(in_channels, out_channels, kernel_size, stride, dilation, groups, bias,
                    padding_mode, dtype)
        self.output_padding = ntuple(name, "output_padding", output_padding, n, 0)
        for o, s, d in zip(self.output_padding, self.stride, self.dilation):
            if o >= max(s, d):
                raise ArgumentError(f"{name}: output_padding {self.output_padding} must be "
                                    f"smaller than either stride {self.stride} or dilation "
                                    f"{self.dilation}")

    def _output_padding(self, x, output_size) -> tuple[int, ...]:
        """PyTorch's ``_output_padding``: the output_padding that gives ``output_size``."""
        if output_size is None:
            return self.output_padding
        name, n = type(self).__name__, self._dims
        size = list(output_size)[-n:]
        if len(size) != n:
            raise ArgumentError(f"{name}: output_size must have {n} or {n + 2} elements, got "
                                f"{output_size!r}")
        extra = []
        for i in range(n):
            in_size = x.shape[x.ndim - n + i]
            smallest = ((in_size - 1) * self.stride[i] - 2 * self.padding[i]
                        + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            o = int(size[i]) - smallest
            if not 0 <= o < max(self.stride[i], self.dilation[i]):
                raise ArgumentError(f"{name}: requested an output size of {tuple(size)}, but "
                                    f"valid sizes range from {smallest} to "
                                    f"{smallest + max(self.stride[i], self.dilation[i]) - 1} "
                                    f"on axis {i} (for an input of {tuple(x.shape)})")
            extra.append(o)
        return tuple(extra)


class ConvTranspose1d(_ConvTransposeBase):
    """Transposed 1-d convolution (the gradient of Conv1d) over (N, C, L) or (C, L);
    ``weight`` is (in, out/groups, k)."""

    _dims = 1

    def forward(self, x, output_size=None):
        x, unbatched = with_batch(type(self).__name__, x, self._dims)
        y = ops.conv_transpose1d(x, self.weight, self.bias, stride=self.stride,
                                 padding=self.padding,
                                 output_padding=self._output_padding(x, output_size),
                                 groups=self.groups, dilation=self.dilation)
        return y.squeeze(0) if unbatched else y


class ConvTranspose2d(_ConvTransposeBase):
    """Transposed 2-d convolution over (N, C, H, W) or (C, H, W); ``weight`` is
    (in, out/groups, kH, kW)."""

    _dims = 2

    def forward(self, x, output_size=None):
        x, unbatched = with_batch(type(self).__name__, x, self._dims)
        y = ops.conv_transpose2d(x, self.weight, self.bias, stride=self.stride,
                                 padding=self.padding,
                                 output_padding=self._output_padding(x, output_size),
                                 groups=self.groups, dilation=self.dilation)
        return y.squeeze(0) if unbatched else y


__all__ = ["Conv1d", "ConvTranspose1d", "ConvTranspose2d"]
