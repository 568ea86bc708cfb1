"""RNN (Elman) as torch.nn.RNN, built from ops that already exist.

Parameters as LSTM / GRU lay them out with one gate: ``weight_ih_l{k}`` (H, in), ``weight_hh_l{k}``
(H, H), ``bias_ih_l{k}``, ``bias_hh_l{k}`` (H,), ``_reverse`` for the second direction.

``nonlinearity="tanh"``: each layer and direction is one ``ops.gru`` whose update gate is shut
(weights 0, bias -1e4: z = 0 exactly) and whose reset gate is open (bias +1e4: r = 1), which
leaves ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)``, the Elman step, exactly; the loop over time
stays inside the op, so a trace keeps the sequence symbolic and exports as one ONNX GRU node.
``nonlinearity="relu"`` has no such op: its steps are unrolled, so the sequence length must be a
concrete size when tracing (the batch may stay symbolic).
"""
from __future__ import annotations

import numbers

import numpy as np

from onemodel import ops
from onemodel.errors import TraceException

from .rnn import _RNNBase
from .rnn_cells import nonlinearity_arg

_SHUT = 1e4   # sigmoid(-1e4) == 0 and sigmoid(1e4) == 1 in every float dtype


class RNN(_RNNBase):
    """A multi-layer Elman RNN as torch.nn.RNN: ``rnn(input, h0=None) -> (output, h_n)``;
    output is (seq, batch, D*H) or (batch, seq, D*H) with ``batch_first``, h_n
    (num_layers*D, batch, H)."""

    _gates = 1
    _name = "RNN"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None) -> None:
        self.nonlinearity = nonlinearity_arg("RNN", nonlinearity)
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)

    def forward(self, input, hx=None):
        out, (h_n,) = self._run(input, [("h_0", hx)])
        return out, h_n

    def _direction(self, x, sfx: str, init_states, reverse: bool):
        w_ih, w_hh, b_ih, b_hh = self._layer_params(sfx)
        (h0,) = init_states
        if self.nonlinearity == "tanh":
            return _tanh_as_gru(x, w_ih, w_hh, b_ih, b_hh, h0, reverse)
        return _relu_unrolled(x, w_ih, w_hh, b_ih, b_hh, h0, reverse)


def _tanh_as_gru(x, w_ih, w_hh, b_ih, b_hh, h0, reverse):
    h, size = w_hh.shape[0], w_ih.shape[1]
    dt = w_ih.dtype.numpy
    gru_ih = ops.concat([np.zeros((2 * h, size), dt), w_ih], axis=0)
    gru_hh = ops.concat([np.zeros((2 * h, h), dt), w_hh], axis=0)
    gates = np.concatenate([np.full(h, _SHUT), np.full(h, -_SHUT)]).astype(dt)
    gru_b_ih = ops.concat([gates, b_ih if b_ih is not None else np.zeros(h, dt)], axis=0)
    gru_b_hh = None if b_hh is None else ops.concat([np.zeros(2 * h, dt), b_hh], axis=0)
    return ops.gru(x, gru_ih, gru_hh, gru_b_ih, gru_b_hh, h0, reverse=reverse)


def _relu_unrolled(x, w_ih, w_hh, b_ih, b_hh, h0, reverse):
    seq = x.shape[0]
    if not isinstance(seq, numbers.Integral):
        raise TraceException(f"RNN: nonlinearity='relu' unrolls its steps, so the sequence "
                             f"length must be a concrete size while tracing, got {seq}; trace "
                             f"the sequence axis as None (or use nonlinearity='tanh', which "
                             f"keeps it symbolic)")
    pre = ops.linear(x, w_ih, b_ih)                    # (seq, batch, H): every input product
    if seq == 0:
        h_n = ops.zeros_like(pre.sum(axis=0)) if h0 is None else h0
        return pre, h_n
    h = h0
    outs = [None] * seq
    for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
        step = pre[t]
        if h is not None:
            step = step + ops.linear(h, w_hh, b_hh)
        elif b_hh is not None:
            step = step + b_hh
        h = ops.relu(step)
        outs[t] = h
    return ops.stack(outs, axis=0), h


__all__ = ["RNN"]
