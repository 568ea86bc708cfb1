"""MultiheadAttention, TransformerEncoderLayer and TransformerEncoder, as PyTorch defines them.

Written with ops only (linear, reshape, transpose, matmul, softmax) and with sizes read from
``x.shape`` and handed to ``reshape`` unchanged, so a traced model keeps symbolic batch and
sequence axes.
"""
from __future__ import annotations

import copy
import math

from onemodel import DType, ops
from onemodel.errors import ArgumentError
from onemodel.nn import NnModule, init

from ._seq_util import activation_arg, attention_mask, check_sizes
from ._util import as_tensor, new_param, positive_int, probability
from .basic import Dropout, Linear, ModuleList
from .norm import LayerNorm


def _additive(mask, what: str):
    """A boolean mask (True = not allowed) as 0 / -inf; a float mask as it is."""
    mask = as_tensor(mask)
    if mask.dtype.is_float:
        return mask
    if mask.dtype != DType.BOOL:
        raise ArgumentError(f"MultiheadAttention: {what} must be a bool or float tensor, got "
                            f"{mask.dtype}")
    return ops.where(mask, float("-inf"), 0.0)


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's class for ``MultiheadAttention.out_proj``: a Linear under the name torch prints
    (and checks ``isinstance`` against)."""


class MultiheadAttention(NnModule):
    """Multi-head attention. Inputs are (L, N, E) or, with ``batch_first``, (N, L, E); unbatched
    (L, E) also works. Returns ``(output, weights)``: weights (N, L, S) averaged over heads
    (``average_attn_weights=False``: (N, num_heads, L, S)), or None when ``need_weights=False``.

    Masks: ``attn_mask`` (L, S) or (N*num_heads, L, S), ``key_padding_mask`` (N, S); a bool mask
    marks with True the positions that may not be attended to, a float mask is added to the
    attention scores.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, dtype=None) -> None:
        super().__init__()
        self.embed_dim = positive_int("MultiheadAttention", "embed_dim", embed_dim)
        self.num_heads = positive_int("MultiheadAttention", "num_heads", num_heads)
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout = probability("MultiheadAttention", "dropout", dropout)
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise ArgumentError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by "
                                f"num_heads ({num_heads})")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are not "
                                      "supported")
        self.add_zero_attn = add_zero_attn
        if self._qkv_same_embed_dim:
            self.in_proj_weight = new_param((3 * embed_dim, embed_dim), dtype)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = new_param((embed_dim, embed_dim), dtype)
            self.k_proj_weight = new_param((embed_dim, self.kdim), dtype)
            self.v_proj_weight = new_param((embed_dim, self.vdim), dtype)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = new_param((3 * embed_dim,), dtype)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype)
        self.bias_k = self.bias_v = None
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _projections(self):
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            ws = (w[0:e], w[e:2 * e], w[2 * e:3 * e])
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        bs = (b[0:e], b[e:2 * e], b[2 * e:3 * e]) if b is not None else (None, None, None)
        return ws, bs

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
        if is_causal and attn_mask is None:
            raise ArgumentError("MultiheadAttention: is_causal=True is a hint that attn_mask is "
                                "the causal mask; pass attn_mask as well")
        query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
        batched = query.ndim == 3
        if query.ndim not in (2, 3):
            raise ArgumentError(f"MultiheadAttention: query should be 2-d (unbatched) or 3-d, got "
                                f"shape {query.shape}")
        if not batched:  # (L, E): a batch of one
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = as_tensor(key_padding_mask).unsqueeze(0)
        elif not self.batch_first:  # (L, N, E) -> (N, L, E)
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))

        e, h, hd = self.embed_dim, self.num_heads, self.head_dim
        n, tgt = query.shape[0], query.shape[1]
        src = key.shape[1]
        (wq, wk, wv), (bq, bk, bv) = self._projections()
        q = ops.linear(query, wq, bq).reshape(n, tgt, h, hd).transpose(1, 2)  # N, H, L, hd
        k = ops.linear(key, wk, bk).reshape(n, src, h, hd).transpose(1, 2)    # N, H, S, hd
        v = ops.linear(value, wv, bv).reshape(n, src, h, hd).transpose(1, 2)  # N, H, S, hd

        scores = ops.matmul(q * (1.0 / math.sqrt(hd)), k.transpose(2, 3))   # N, H, L, S
        mask = None
        if attn_mask is not None:
            mask = _additive(attn_mask, "attn_mask")
            if mask.ndim == 3:
                mask = mask.reshape(n, h, tgt, src)
            elif mask.ndim != 2:
                raise ArgumentError(f"MultiheadAttention: attn_mask should be 2-d (L, S) or 3-d "
                                    f"(N*num_heads, L, S), got shape {mask.shape}")
        if key_padding_mask is not None:
            kpm = _additive(key_padding_mask, "key_padding_mask").reshape(n, 1, 1, src)
            mask = kpm if mask is None else mask + kpm
        if mask is not None:
            scores = scores + mask
        attn = ops.softmax(scores, axis=-1)
        if self.training and self.dropout > 0.0:
            attn = ops.dropout(attn, p=self.dropout, training=True)
        out = ops.matmul(attn, v).transpose(1, 2).reshape(n, tgt, e)            # N, L, E
        out = self.out_proj(out)

        weights = None
        if need_weights:
            weights = attn.mean(axis=1) if average_attn_weights else attn
        if not batched:
            out = out.squeeze(0)
            if weights is not None:
                weights = weights.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def extra_repr(self) -> str:
        return ""


class TransformerEncoderLayer(NnModule):
    """Self-attention and a feed-forward block, each with a residual connection and LayerNorm
    (post-norm by default, pre-norm with ``norm_first=True``), PyTorch's submodule names:
    ``self_attn linear1 dropout linear2 norm1 norm2 dropout1 dropout2``."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        check_sizes("TransformerEncoderLayer", d_model, nhead, dim_feedforward, dropout, device)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation_arg("TransformerEncoderLayer", activation)
        self.batch_first = batch_first

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        x = src = as_tensor(src)
        src_mask = attention_mask(src_mask, is_causal, src, self.batch_first)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(NnModule):
    """``num_layers`` copies of ``encoder_layer`` (as ``layers.0`` ...), then an optional norm.
    ``enable_nested_tensor`` and ``mask_check`` are accepted and ignored: in PyTorch they choose a
    faster path to the same result."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: NnModule | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        if not isinstance(encoder_layer, NnModule):
            raise ArgumentError(f"TransformerEncoder: encoder_layer must be a module (a "
                                f"TransformerEncoderLayer), got {type(encoder_layer).__name__}")
        positive_int("TransformerEncoder", "num_layers", num_layers, 0)
        # enable_nested_tensor and mask_check pick PyTorch's fast paths; the result is the same
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check
        self.layers = ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal: bool = False):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=is_causal)
        if self.norm is not None:
            x = self.norm(x)
        return x


__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]
