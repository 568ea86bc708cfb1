"""Argument checks and masks the transformer layers share (encoder and decoder alike)."""
from __future__ import annotations

from onemodel import ops
from onemodel.errors import ArgumentError

from ._util import positive_int, probability


def _relu(x):
    return ops.relu(x)


def _gelu(x):
    return ops.gelu(x)


ACTIVATIONS = {"relu": _relu, "gelu": _gelu}


def activation_arg(layer: str, activation):
    """PyTorch's ``_get_activation_fn``: "relu", "gelu", or any callable (a module too)."""
    if isinstance(activation, str):
        if activation not in ACTIVATIONS:
            raise ArgumentError(f"{layer}: activation should be relu/gelu, not {activation!r}")
        return ACTIVATIONS[activation]
    if not callable(activation):
        raise ArgumentError(f"{layer}: activation must be 'relu', 'gelu' or a callable, got "
                            f"{activation!r}")
    return activation


def check_sizes(layer: str, d_model, nhead, dim_feedforward, dropout, device=None) -> None:
    """The size arguments every transformer layer takes, checked under the layer's own name."""
    positive_int(layer, "d_model", d_model)
    positive_int(layer, "nhead", nhead)
    positive_int(layer, "dim_feedforward", dim_feedforward)
    probability(layer, "dropout", dropout)
    if d_model % nhead:
        raise ArgumentError(f"{layer}: d_model ({d_model}) must be divisible by nhead ({nhead})")
    if device not in (None, "cpu"):
        raise ArgumentError(f"{layer}: device {device!r}: OneModel modules live on the CPU "
                            f"(device=None or 'cpu')")


def causal_mask(x, batch_first: bool):
    """The (L, L) float causal mask for the sequence axis of ``x`` (symbolic lengths stay so)."""
    seq = x.shape[0] if (x.ndim == 2 or not batch_first) else x.shape[1]
    return ops.triu(ops.full((seq, seq), float("-inf"), dtype=x.dtype), diagonal=1)


def attention_mask(mask, is_causal, x, batch_first: bool):
    """The mask to hand MultiheadAttention: the given one, or the causal one when only the
    ``is_causal`` hint is set (PyTorch raises there; the hint says what the mask would be)."""
    if mask is None and is_causal:
        return causal_mask(x, batch_first)
    return mask
