"""Bilinear as torch.nn.Bilinear: ``y_o = x1^T A_o x2 + b_o``.

``weight`` is (out_features, in1_features, in2_features) and ``bias`` (out_features,), both
U(-1/sqrt(in1_features), 1/sqrt(in1_features)) as in PyTorch. The product is one matmul of x1
with the weight laid out as (in1, out * in2), then a product with x2 summed over in2: ops that
every backend and ONNX have, and leading axes of any (symbolic) size.
"""
from __future__ import annotations

import math
import numbers

from onemodel import ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule, init

from ._util import as_tensor, new_param, positive_int


class Bilinear(NnModule):
    """``bilinear(input1, input2) -> (..., out_features)`` for inputs (..., in1) and
    (..., in2) with the same leading axes."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features = positive_int("Bilinear", "in1_features", in1_features)
        self.in2_features = positive_int("Bilinear", "in2_features", in2_features)
        self.out_features = positive_int("Bilinear", "out_features", out_features)
        if device not in (None, "cpu"):
            raise ArgumentError(f"Bilinear: device {device!r}: OneModel modules live on the CPU "
                                f"(device=None or 'cpu')")
        self.weight = new_param((out_features, in1_features, in2_features), dtype)
        if bias:
            self.bias = new_param((out_features,), dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        x1, x2 = as_tensor(input1), as_tensor(input2)
        for what, x, want in (("input1", x1, self.in1_features),
                              ("input2", x2, self.in2_features)):
            size = x.shape[-1] if x.ndim else None
            if x.ndim == 0 or (isinstance(size, numbers.Integral) and size != want):
                raise ArgumentError(f"Bilinear: {what} must end in {want} features, got shape "
                                    f"{tuple(x.shape)}")
        o, i1, i2 = self.out_features, self.in1_features, self.in2_features
        packed = self.weight.permute(1, 0, 2).reshape(i1, o * i2)     # (in1, out * in2)
        left = ops.unflatten(ops.matmul(x1, packed), -1, (o, i2))     # (..., out, in2)
        y = (left * x2.unsqueeze(-2)).sum(axis=-1)                   # (..., out)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


__all__ = ["Bilinear"]
