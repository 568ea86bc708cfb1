"""Conv2d, MaxPool2d, AvgPool2d (NCHW, PyTorch's arguments and parameter shapes)."""
from __future__ import annotations


from onemodel import ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule

from ._util import pair, positive_int, reset_weight_and_bias, weight_and_bias


def _supports(op_name: str, param: str) -> bool:
    return param in getattr(ops, op_name).op.params


class Conv2d(NnModule):
    """2-d convolution over (N, C, H, W); ``weight`` is (out, in/groups, kH, kW).

    ``padding`` is an int, a pair, ``"valid"`` (0) or ``"same"`` (stride 1, even total padding).
    Initialised as PyTorch: weight ~ kaiming_uniform(a=sqrt(5)), bias ~ U(+-1/sqrt(fan_in)).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 dtype=None) -> None:
        super().__init__()
        self.in_channels = positive_int("Conv2d", "in_channels", in_channels)
        self.out_channels = positive_int("Conv2d", "out_channels", out_channels)
        self.groups = positive_int("Conv2d", "groups", groups)
        if in_channels % groups or out_channels % groups:
            raise ArgumentError(f"Conv2d: in_channels ({in_channels}) and out_channels "
                                f"({out_channels}) must be divisible by groups ({groups})")
        self.kernel_size = pair("Conv2d", "kernel_size", kernel_size, 1)
        self.stride = pair("Conv2d", "stride", stride, 1)
        self.dilation = pair("Conv2d", "dilation", dilation, 1)
        if padding_mode != "zeros":
            raise NotImplementedError(f"Conv2d: padding_mode {padding_mode!r} is not supported "
                                      f"(only 'zeros')")
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            if padding == "valid":
                padding = (0, 0)
            elif padding == "same":
                if self.stride != (1, 1):
                    raise ArgumentError("Conv2d: padding='same' is not supported for strided "
                                        "convolutions")
                totals = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
                if any(t % 2 for t in totals):
                    raise NotImplementedError("Conv2d: padding='same' needs an odd effective "
                                              "kernel size here (asymmetric padding)")
                padding = tuple(t // 2 for t in totals)
            else:
                raise ArgumentError(f"Conv2d: invalid padding string {padding!r}, should be one "
                                    f"of 'valid', 'same'")
        self.padding = pair("Conv2d", "padding", padding, 0)
        kh, kw = self.kernel_size
        weight_and_bias(self, (out_channels, in_channels // groups, kh, kw),
                        out_channels if bias else None, dtype)

    def reset_parameters(self) -> None:
        reset_weight_and_bias(self)

    def forward(self, x):
        return ops.conv2d(x, self.weight, self.bias, stride=self.stride, padding=self.padding,
                          dilation=self.dilation, groups=self.groups)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class MaxPool2d(NnModule):
    """Max over ``kernel_size`` windows; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode
        pair("MaxPool2d", "kernel_size", kernel_size, 1)
        pair("MaxPool2d", "stride", self.stride, 1)
        pair("MaxPool2d", "padding", padding, 0)
        if pair("MaxPool2d", "dilation", dilation, 1) != (1, 1) and \
                not _supports("max_pool2d", "dilation"):
            raise NotImplementedError("MaxPool2d: dilation other than 1 is not supported")
        if return_indices:
            raise NotImplementedError("MaxPool2d: return_indices=True is not supported")
        if ceil_mode and not _supports("max_pool2d", "ceil_mode"):
            raise NotImplementedError("MaxPool2d: ceil_mode=True is not supported")

    def forward(self, x):
        kwargs = {}
        if self.ceil_mode:
            kwargs["ceil_mode"] = True
        if pair("MaxPool2d", "dilation", self.dilation) != (1, 1):
            kwargs["dilation"] = self.dilation
        return ops.max_pool2d(x, kernel_size=self.kernel_size, stride=self.stride,
                              padding=self.padding, **kwargs)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(NnModule):
    """Mean over ``kernel_size`` windows; ``stride`` defaults to ``kernel_size``; padded zeros
    count in the mean unless ``count_include_pad=False``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override
        pair("AvgPool2d", "kernel_size", kernel_size, 1)
        pair("AvgPool2d", "stride", self.stride, 1)
        pair("AvgPool2d", "padding", padding, 0)
        for name, value, default in (("ceil_mode", ceil_mode, False),
                                     ("count_include_pad", count_include_pad, True),
                                     ("divisor_override", divisor_override, None)):
            if value != default and not _supports("avg_pool2d", name):
                raise NotImplementedError(f"AvgPool2d: {name}={value!r} is not supported")

    def forward(self, x):
        kwargs = {}
        for name, default in (("ceil_mode", False), ("count_include_pad", True),
                              ("divisor_override", None)):
            if getattr(self, name) != default:
                kwargs[name] = getattr(self, name)
        return ops.avg_pool2d(x, kernel_size=self.kernel_size, stride=self.stride,
                              padding=self.padding, **kwargs)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


__all__ = ["Conv2d", "MaxPool2d", "AvgPool2d"]
