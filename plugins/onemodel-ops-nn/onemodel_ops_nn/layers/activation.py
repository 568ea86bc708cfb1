"""Activation layers over the pointwise ops, with PyTorch's arguments and repr.

``inplace=True`` is accepted for PyTorch's signature; the result is a new tensor either way.
"""
from __future__ import annotations

from onemodel import ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule, init

from ._checks import flag, real
from ._util import new_param, positive_int


class _Inplace(NnModule):
    """An activation with only PyTorch's ``inplace`` flag."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = flag(type(self).__name__, "inplace", inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


def _inplace_str(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class LeakyReLU(NnModule):
    """``x`` where positive, else ``negative_slope * x``."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = real("LeakyReLU", "negative_slope", negative_slope)
        self.inplace = flag("LeakyReLU", "inplace", inplace)

    def forward(self, x):
        return ops.leaky_relu(x, negative_slope=self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class SiLU(_Inplace):
    """``x * sigmoid(x)`` (swish)."""

    def forward(self, x):
        return ops.silu(x)


class ELU(NnModule):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = real("ELU", "alpha", alpha)
        self.inplace = flag("ELU", "inplace", inplace)

    def forward(self, x):
        return ops.elu(x, alpha=self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class SELU(_Inplace):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""

    def forward(self, x):
        return ops.selu(x)


class Softplus(NnModule):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = real("Softplus", "beta", beta)
        self.threshold = real("Softplus", "threshold", threshold)
        if self.beta == 0:
            raise ArgumentError("Softplus: beta must not be 0")

    def forward(self, x):
        return ops.softplus(x, beta=self.beta, threshold=self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""

    def forward(self, x):
        return ops.mish(x)


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``."""

    def forward(self, x):
        return ops.hardswish(x)

    def extra_repr(self) -> str:
        return ""


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``."""

    def forward(self, x):
        return ops.hardsigmoid(x)

    def extra_repr(self) -> str:
        return ""


class Hardtanh(NnModule):
    """``x`` clamped to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0,
                 inplace: bool = False) -> None:
        super().__init__()
        name = type(self).__name__
        self.min_val = real(name, "min_val", min_val)
        self.max_val = real(name, "max_val", max_val)
        self.inplace = flag(name, "inplace", inplace)
        if not self.max_val > self.min_val:
            raise ArgumentError(f"{name}: max_val ({max_val}) must be greater than min_val "
                                f"({min_val})")

    def forward(self, x):
        return ops.hardtanh(x, min_val=self.min_val, max_val=self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def forward(self, x):
        return ops.relu6(x)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Softsign(NnModule):
    """``x / (1 + |x|)``."""

    def forward(self, x):
        return ops.softsign(x)


class LogSigmoid(NnModule):
    """``log(sigmoid(x))``, computed without overflow."""

    def forward(self, x):
        return ops.log_sigmoid(x)


class PReLU(NnModule):
    """``x`` where positive, else ``weight * x``; ``weight`` is (num_parameters,) filled with
    ``init``: one slope shared, or one per channel (axis 1)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.num_parameters = positive_int("PReLU", "num_parameters", num_parameters)
        self.init = real("PReLU", "init", init)
        self.weight = new_param((num_parameters,), dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, x):
        return ops.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GLU(NnModule):
    """``a * sigmoid(b)`` for the halves a, b of the input along ``dim``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise ArgumentError(f"GLU: dim must be an int, got {dim!r}")
        self.dim = dim

    def forward(self, x):
        return ops.glu(x, axis=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


__all__ = ["LeakyReLU", "SiLU", "ELU", "SELU", "Softplus", "Mish", "Hardswish", "Hardsigmoid",
           "Hardtanh", "ReLU6", "Softsign", "LogSigmoid", "PReLU", "GLU"]
