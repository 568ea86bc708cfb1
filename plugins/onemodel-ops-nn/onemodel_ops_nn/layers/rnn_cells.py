"""RNNCell, LSTMCell and GRUCell: one time step, as torch.nn's cells.

Parameters as PyTorch names and shapes them: ``weight_ih`` (G*H, input_size), ``weight_hh``
(G*H, H), ``bias_ih`` and ``bias_hh`` (G*H,), G = 1 (RNNCell), 4 (LSTMCell, gates i, f, g, o) or
3 (GRUCell, gates r, z, n), all U(-1/sqrt(H), 1/sqrt(H)). A step is written with ``linear`` and
pointwise ops, so it traces with a symbolic batch and exports to plain ONNX nodes. Without ``hx``
the state is zero: its products are left out rather than made from a zeros tensor, so no size is
read from the input.
"""
from __future__ import annotations

import math
import numbers

from onemodel import ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule, init

from ._util import as_tensor, new_param, positive_int

NONLINEARITIES = ("tanh", "relu")


def nonlinearity_arg(layer: str, value) -> str:
    if value not in NONLINEARITIES:
        raise ArgumentError(f"{layer}: nonlinearity must be 'tanh' or 'relu', got {value!r}")
    return value


class _CellBase(NnModule):
    _gates = 1
    _name = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        name = self._name
        self.input_size = positive_int(name, "input_size", input_size)
        self.hidden_size = positive_int(name, "hidden_size", hidden_size)
        if not isinstance(bias, bool):
            raise ArgumentError(f"{name}: bias must be True or False, got {bias!r}")
        if device not in (None, "cpu"):
            raise ArgumentError(f"{name}: device {device!r}: OneModel modules live on the CPU "
                                f"(device=None or 'cpu')")
        self.bias = bias
        g, h = self._gates, self.hidden_size
        self.weight_ih = new_param((g * h, self.input_size), dtype)
        self.weight_hh = new_param((g * h, h), dtype)
        if bias:
            self.bias_ih = new_param((g * h,), dtype)
            self.bias_hh = new_param((g * h,), dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _input(self, input):
        """The input as (batch, input_size) and whether it came unbatched."""
        x = as_tensor(input)
        if x.ndim not in (1, 2):
            raise ArgumentError(f"{self._name}: Expected input to be 1D or 2D, got {x.ndim}D "
                                f"input (shape {tuple(x.shape)})")
        size = x.shape[-1]
        if isinstance(size, numbers.Integral) and size != self.input_size:
            raise ArgumentError(f"{self._name}: input has {size} features on its last axis, "
                                f"expected input_size={self.input_size}")
        return (x, True) if x.ndim == 2 else (x.unsqueeze(0), False)

    def _state(self, what: str, s, batched: bool):
        if s is None:
            return None
        s = as_tensor(s)
        want = 2 if batched else 1
        if s.ndim != want:
            raise ArgumentError(f"{self._name}: {what} must be {want}-D for "
                                f"{'batched 2-D' if batched else 'unbatched 1-D'} input, got "
                                f"shape {tuple(s.shape)}")
        size = s.shape[-1]
        if isinstance(size, numbers.Integral) and size != self.hidden_size:
            raise ArgumentError(f"{self._name}: {what} has {size} features on its last axis, "
                                f"expected hidden_size={self.hidden_size}")
        return s if batched else s.unsqueeze(0)

    def _hidden_part(self, h):
        """``h @ weight_hh.T + bias_hh``; with no state, just the bias (or None)."""
        if h is None:
            return self.bias_hh
        return ops.linear(h, self.weight_hh, self.bias_hh)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        return s


def _add(a, b):
    return a if b is None else a + b


class RNNCell(_CellBase):
    """An Elman cell as torch.nn.RNNCell: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)`` with
    ``act`` tanh or relu; ``cell(input, hx=None) -> h'``."""

    _gates = 1
    _name = "RNNCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        self.nonlinearity = nonlinearity_arg("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        x, batched = self._input(input)
        h = self._state("hx", hx, batched)
        pre = _add(ops.linear(x, self.weight_ih, self.bias_ih), self._hidden_part(h))
        out = ops.tanh(pre) if self.nonlinearity == "tanh" else ops.relu(pre)
        return out if batched else out.squeeze(0)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        if self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class LSTMCell(_CellBase):
    """An LSTM step as torch.nn.LSTMCell: ``cell(input, (h, c)=None) -> (h', c')``."""

    _gates = 4
    _name = "LSTMCell"

    def forward(self, input, hx=None):
        x, batched = self._input(input)
        if hx is None:
            h = c = None
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise ArgumentError("LSTMCell: hx must be a pair (h_0, c_0) of tensors")
            h, c = self._state("h_0", hx[0], batched), self._state("c_0", hx[1], batched)
        gates = _add(ops.linear(x, self.weight_ih, self.bias_ih), self._hidden_part(h))
        i, f, g, o = ops.chunk(gates, 4, axis=-1)
        new_c = ops.sigmoid(i) * ops.tanh(g)
        if c is not None:
            new_c = ops.sigmoid(f) * c + new_c
        new_h = ops.sigmoid(o) * ops.tanh(new_c)
        if not batched:
            return new_h.squeeze(0), new_c.squeeze(0)
        return new_h, new_c


class GRUCell(_CellBase):
    """A GRU step as torch.nn.GRUCell: ``cell(input, hx=None) -> h'`` with
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`` and ``h' = (1 - z) * n + z * h``."""

    _gates = 3
    _name = "GRUCell"

    def forward(self, input, hx=None):
        x, batched = self._input(input)
        h = self._state("hx", hx, batched)
        gi = ops.linear(x, self.weight_ih, self.bias_ih)
        gh = self._hidden_part(h)
        i_r, i_z, i_n = ops.chunk(gi, 3, axis=-1)
        if gh is None:
            r, z, n = ops.sigmoid(i_r), ops.sigmoid(i_z), ops.tanh(i_n)
        else:
            h_r, h_z, h_n = ops.chunk(gh, 3, axis=-1)
            r, z = ops.sigmoid(i_r + h_r), ops.sigmoid(i_z + h_z)
            n = ops.tanh(i_n + r * h_n)
        new_h = (1.0 - z) * n
        if h is not None:
            new_h = new_h + z * h
        return new_h if batched else new_h.squeeze(0)


__all__ = ["RNNCell", "LSTMCell", "GRUCell"]
