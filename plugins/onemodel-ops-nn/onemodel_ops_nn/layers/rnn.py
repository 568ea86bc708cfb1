"""LSTM and GRU with PyTorch's constructor arguments, parameter names and state_dict layout.

Each layer and direction is one ``ops.lstm`` / ``ops.gru`` application (the loop over time runs
inside the op), so a trace with a symbolic batch and sequence records a few nodes whatever the
length. Parameters: ``weight_ih_l{k}`` (G*H, in), ``weight_hh_l{k}`` (G*H, H), ``bias_ih_l{k}``,
``bias_hh_l{k}`` (G*H,), and the same with ``_reverse`` for the second direction, G = 4 (LSTM,
gates i, f, g, o) or 3 (GRU, gates r, z, n); all start as U(-1/sqrt(H), 1/sqrt(H)) as in PyTorch.
"""
from __future__ import annotations

import math
import numbers

from onemodel import ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule, init

from ._util import as_tensor, new_param, positive_int, probability


class _RNNBase(NnModule):
    _gates = 0
    _name = ""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None) -> None:
        super().__init__()
        name = self._name
        self.input_size = positive_int(name, "input_size", input_size)
        self.hidden_size = positive_int(name, "hidden_size", hidden_size)
        self.num_layers = positive_int(name, "num_layers", num_layers)
        self.bias = bool(bias)
        self.batch_first = bool(batch_first)
        self.dropout = probability(name, "dropout", dropout)
        self.bidirectional = bool(bidirectional)
        if proj_size:
            raise ArgumentError(f"{name}: proj_size={proj_size!r} (projected LSTM states) is not "
                                f"supported; use proj_size=0")
        if device not in (None, "cpu"):
            raise ArgumentError(f"{name}: device {device!r}: OneModel modules live on the CPU "
                                f"(device=None or 'cpu')")
        self.proj_size = 0
        g, h = self._gates, self.hidden_size
        for layer in range(self.num_layers):
            size = self.input_size if layer == 0 else h * self.num_directions
            for sfx in self._suffixes(layer):
                setattr(self, f"weight_ih{sfx}", new_param((g * h, size), dtype))
                setattr(self, f"weight_hh{sfx}", new_param((g * h, h), dtype))
                if self.bias:
                    setattr(self, f"bias_ih{sfx}", new_param((g * h,), dtype))
                    setattr(self, f"bias_hh{sfx}", new_param((g * h,), dtype))
        self.reset_parameters()

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    def _suffixes(self, layer: int):
        return [f"_l{layer}"] + ([f"_l{layer}_reverse"] if self.bidirectional else [])

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def flatten_parameters(self) -> None:
        """PyTorch packs weights for cuDNN here; OneModel keeps them as they are, so models that
        call it run unchanged."""

    def _layer_params(self, sfx: str):
        bias = (getattr(self, f"bias_ih{sfx}"), getattr(self, f"bias_hh{sfx}")) if self.bias \
            else (None, None)
        return (getattr(self, f"weight_ih{sfx}"), getattr(self, f"weight_hh{sfx}")) + bias

    def _direction(self, x, sfx: str, init_states, reverse: bool):
        """One layer in one direction over time-major ``x``: (output, *final states)."""
        op = getattr(ops, self._name.lower())
        return op(x, *self._layer_params(sfx), *init_states, reverse=reverse)

    def _check_state(self, what: str, s, batched: bool):
        s = as_tensor(s)
        want = 3 if batched else 2
        if s.ndim != want:
            raise ArgumentError(f"{self._name}: {what} must have {want} axes (num_layers * "
                                f"num_directions{', batch' if batched else ''}, hidden_size) for "
                                f"{'batched' if batched else 'unbatched'} input, got shape "
                                f"{tuple(s.shape)}")
        n = self.num_layers * self.num_directions
        first = s.shape[0]
        if isinstance(first, numbers.Integral) and first != n:
            raise ArgumentError(f"{self._name}: {what} has {first} rows on axis 0, expected "
                                f"num_layers * num_directions = {n}")
        return s if batched else s.unsqueeze(1)

    def _run(self, input, states):
        """The layers over time-major input: (output, final states, one tensor per state)."""
        x = as_tensor(input)
        if x.ndim not in (2, 3):
            raise ArgumentError(f"{self._name}: input must be (seq, batch, input_size), (batch, "
                                f"seq, input_size) with batch_first=True, or unbatched (seq, "
                                f"input_size); got shape {tuple(x.shape)}")
        size = x.shape[-1]
        if isinstance(size, numbers.Integral) and size != self.input_size:
            raise ArgumentError(f"{self._name}: input has {size} features on its last axis, "
                                f"expected input_size={self.input_size}")
        batched = x.ndim == 3
        if not batched:
            x = x.unsqueeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        states = [None if s is None else self._check_state(name, s, batched)
                  for name, s in states]
        finals = [[] for _ in states]
        for layer in range(self.num_layers):
            outs = []
            for d, sfx in enumerate(self._suffixes(layer)):
                k = layer * self.num_directions + d
                init_states = [None if s is None else s[k] for s in states]
                res = self._direction(x, sfx, init_states, d == 1)
                outs.append(res[0])
                for f, r in zip(finals, res[1:]):
                    f.append(r.unsqueeze(0))
            x = outs[0] if len(outs) == 1 else ops.concat(outs, axis=2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = ops.dropout(x, p=self.dropout, training=True)
        finals = [f[0] if len(f) == 1 else ops.concat(f, axis=0) for f in finals]
        if not batched:
            x = x.squeeze(1)
            finals = [f.squeeze(1) for f in finals]
        elif self.batch_first:
            x = x.transpose(0, 1)
        return x, finals

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        for name, default in (("bias", True), ("batch_first", False), ("dropout", 0.0),
                              ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s


class LSTM(_RNNBase):
    """A multi-layer LSTM as torch.nn.LSTM: ``lstm(input, (h0, c0)=None) -> (output, (h_n,
    c_n))``; output is (seq, batch, D*H) or (batch, seq, D*H) with ``batch_first``, the states
    (num_layers*D, batch, H)."""

    _gates = 4
    _name = "LSTM"

    def forward(self, input, hx=None):
        if hx is None:
            h0 = c0 = None
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise ArgumentError("LSTM: hx must be a pair (h_0, c_0) of tensors")
            h0, c0 = hx
        out, (h_n, c_n) = self._run(input, [("h_0", h0), ("c_0", c0)])
        return out, (h_n, c_n)


class GRU(_RNNBase):
    """A multi-layer GRU as torch.nn.GRU: ``gru(input, h0=None) -> (output, h_n)``; output is
    (seq, batch, D*H) or (batch, seq, D*H) with ``batch_first``, h_n (num_layers*D, batch, H)."""

    _gates = 3
    _name = "GRU"

    def __init__(self, *args, **kwargs) -> None:
        if kwargs.get("proj_size"):
            raise ArgumentError("GRU: proj_size is an LSTM argument (torch.nn.GRU has none)")
        super().__init__(*args, **kwargs)

    def forward(self, input, hx=None):
        out, (h_n,) = self._run(input, [("h_0", hx)])
        return out, h_n
