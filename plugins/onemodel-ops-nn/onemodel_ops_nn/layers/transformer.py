"""TransformerDecoderLayer, TransformerDecoder and Transformer, as PyTorch defines them.

Submodule names are PyTorch's (``self_attn multihead_attn linear1 dropout linear2 norm1 norm2
norm3 dropout1 dropout2 dropout3``; ``encoder.layers.0`` ... ``encoder.norm``, ``decoder.*``), so
a torch ``state_dict`` loads as it is. Written from MultiheadAttention, Linear and LayerNorm, so
a trace keeps batch and sequence axes symbolic. ``is_causal=True`` without a mask builds the
causal mask (``triu(full((L, L), -inf), 1)``) over the input's own, possibly symbolic, length;
PyTorch's modules raise there instead.
"""
from __future__ import annotations

import copy
import numbers

from onemodel import DType, Tensor, ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule, init

from ._seq_util import activation_arg, attention_mask, check_sizes
from ._util import as_tensor, positive_int
from .attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from .basic import Dropout, Linear, ModuleList
from .norm import LayerNorm


def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """An (sz, sz) float mask: -inf above the diagonal (later positions), 0 elsewhere."""
    sz = positive_int("Transformer.generate_square_subsequent_mask", "sz", sz, 0)
    dt = DType.parse(dtype) if dtype is not None else DType.F32
    return ops.triu(ops.full((sz, sz), float("-inf"), dtype=dt), diagonal=1)


class TransformerDecoderLayer(NnModule):
    """Self-attention, attention over ``memory`` and a feed-forward block, each with a residual
    connection and LayerNorm (post-norm by default, pre-norm with ``norm_first=True``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        check_sizes("TransformerDecoderLayer", d_model, nhead, dim_feedforward, dropout, device)
        activation = activation_arg("TransformerDecoderLayer", activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation
        self.batch_first = batch_first

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False):
        x = tgt = as_tensor(tgt)
        tgt_mask = attention_mask(tgt_mask, tgt_is_causal, tgt, self.batch_first)
        if memory_is_causal and memory_mask is None:
            raise ArgumentError("TransformerDecoderLayer: memory_is_causal=True is a hint that "
                                "memory_mask is causal; pass memory_mask as well")
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(NnModule):
    """``num_layers`` copies of ``decoder_layer`` (as ``layers.0`` ...), then an optional norm."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: NnModule | None = None) -> None:
        super().__init__()
        if not isinstance(decoder_layer, NnModule):
            raise ArgumentError(f"TransformerDecoder: decoder_layer must be a module (a "
                                f"TransformerDecoderLayer), got {type(decoder_layer).__name__}")
        self.num_layers = positive_int("TransformerDecoder", "num_layers", num_layers, 0)
        self.layers = ModuleList(copy.deepcopy(decoder_layer) for _ in range(num_layers))
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        if self.norm is not None:
            x = self.norm(x)
        return x


class Transformer(NnModule):
    """An encoder-decoder transformer as torch.nn.Transformer: ``model(src, tgt, ...) -> out``
    with ``encoder`` (a TransformerEncoder ending in a LayerNorm) and ``decoder`` (the same)."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", custom_encoder: NnModule | None = None,
                 custom_decoder: NnModule | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        check_sizes("Transformer", d_model, nhead, dim_feedforward, dropout)
        positive_int("Transformer", "num_encoder_layers", num_encoder_layers, 0)
        positive_int("Transformer", "num_decoder_layers", num_decoder_layers, 0)
        activation = activation_arg("Transformer", activation)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias,
                                            dtype=dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias,
                                            device, dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    generate_square_subsequent_mask = staticmethod(generate_square_subsequent_mask)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False):
        src, tgt = as_tensor(src), as_tensor(tgt)
        if src.ndim == 3 and tgt.ndim == 3:
            axis = 0 if self.batch_first else 1
            a, b = src.shape[axis], tgt.shape[axis]
            if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral) and a != b:
                raise ArgumentError(f"Transformer: the batch number of src ({a}) and tgt ({b}) "
                                    f"must be equal")
        for what, t in (("src", src), ("tgt", tgt)):
            size = t.shape[-1]
            if isinstance(size, numbers.Integral) and size != self.d_model:
                raise ArgumentError(f"Transformer: the feature number of {what} ({size}) must "
                                    f"be equal to d_model ({self.d_model})")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=bool(src_is_causal))
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)


__all__ = ["TransformerDecoderLayer", "TransformerDecoder", "Transformer"]
