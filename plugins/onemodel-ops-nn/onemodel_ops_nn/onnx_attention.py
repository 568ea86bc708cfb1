"""ONNX's Attention (opsets 23-25) imported as the OneModel ops it is made of.

The op does more than ``scaled_dot_product_attention`` (a scale of its own, a soft cap, caches,
grouped heads, four kinds of masks, a debug output), so the rule builds it from ``matmul``,
``softmax``, ``where``, ``reshape``, ``permute``, ``concat``, ``repeat_interleave`` and
``arange`` comparisons, in the order onnx's reference computes it: Q and K each scaled by
sqrt(scale), ``softcap * tanh(qk / softcap)``, then one additive bias (the mask, the causal
frontier, the sliding window, the padding of ``nonpad_kv_seqlen``), softmax, and rows that no
key may attend set to zero. Positions are compared through ``arange`` with symbolic bounds, so
the batch and sequence axes may be symbolic. Claimed by scaled_dot_product_attention's record
(plugin.py)."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.core.symbolic import Dim
from onemodel.core.types import same_dim

#: softmax_precision codes (ONNX element types) OneModel computes in
_PRECISIONS = {1: DType.F32, 10: DType.F16, 11: DType.F64}


def _static(ctx, d, what: str) -> int:
    if isinstance(d, Dim):
        ctx.unsupported(f"Attention needs a fixed {what}, got the symbolic size {d}")
    return int(d)


def _heads_first(ctx, x, heads: int, what: str):
    """(B, S, heads * D) -> (B, heads, S, D)."""
    b, s, hidden = ctx.type(x).shape
    if not isinstance(hidden, Dim) and int(hidden) % heads:
        ctx.unsupported(f"the hidden size {hidden} of {what} is not a multiple of the "
                        f"{heads} heads")
    y = ctx.emit("reshape", [x], shape=(b, s, heads, -1))
    return ctx.emit("permute", [y], axes=(0, 2, 1, 3))


def _scalar(value, dtype: DType) -> np.ndarray:
    return np.array(value, dtype=dtype.numpy)


def _allowed_bias(ctx, allowed, dtype: DType):
    """0 where ``allowed``, -inf elsewhere."""
    return ctx.emit("where", [allowed, _scalar(0, dtype), _scalar(-np.inf, dtype)])


def _offset_diff(ctx, q_len, kv_len, past_len, nonpad):
    """``(offset + i) - j`` for query i and key j: (q, kv) for a scalar offset (the length of
    ``past_key``, or 0), (B, q, kv) for the per-batch offset ``nonpad_kv_seqlen - q``."""
    j = ctx.emit("reshape", [ctx.emit("arange", [], start=0, stop=kv_len, step=1,
                                      dtype=DType.I64)], shape=(1, kv_len))
    if nonpad is None:
        i = ctx.emit("arange", [], start=past_len, stop=past_len + q_len, step=1,
                     dtype=DType.I64)
        return ctx.emit("sub", [ctx.emit("reshape", [i], shape=(q_len, 1)), j])
    # i + nonpad - q - j = nonpad - (j + (q - i))
    q_minus_i = ctx.emit("arange", [], start=q_len, stop=0, step=-1, dtype=DType.I64)
    t = ctx.emit("add", [j, ctx.emit("reshape", [q_minus_i], shape=(q_len, 1))])
    n = ctx.emit("reshape", [ctx.emit("cast", [nonpad], dtype=DType.I64)], shape=(-1, 1, 1))
    return ctx.emit("sub", [n, t])


def _per_batch(ctx, bias, nonpad, q_len, kv_len):
    """A (B, q, kv) bias as (B, 1, q, kv), so a rank-3 mask keeps its (heads, q, kv) reading."""
    if nonpad is None:
        return bias
    return ctx.emit("reshape", [bias], shape=(-1, 1, q_len, kv_len))


def _mask_bias(ctx, mask, dtype: DType, kv_len):
    """The attn_mask as an additive bias, its last axis padded to the total length (with -inf,
    or False for a boolean mask)."""
    mt = ctx.type(mask)
    if mt.dtype != DType.BOOL and not mt.dtype.is_float:
        ctx.unsupported(f"attn_mask must be boolean or float, got {mt.dtype}")
    last = mt.shape[-1] if mt.shape else 1
    if not mt.shape:
        mask = ctx.emit("reshape", [mask], shape=(1,))
        mt = ctx.type(mask)
    if not same_dim(last, kv_len):
        if isinstance(last, Dim) or isinstance(kv_len, Dim):
            ctx.unsupported(f"attn_mask's last axis {last} and the total key length {kv_len} "
                            f"differ by a symbolic amount (it is padded to that length)")
        pad = int(kv_len) - int(last)
        if pad < 0:
            ctx.unsupported(f"attn_mask's last axis ({last}) is longer than the keys ({kv_len})")
        fill = ctx.emit("full", [], shape=tuple(mt.shape[:-1]) + (pad,),
                        value=False if mt.dtype == DType.BOOL else -np.inf, dtype=mt.dtype)
        mask = ctx.emit("concat", [mask, fill], axis=-1)
    if mt.dtype == DType.BOOL:
        return _allowed_bias(ctx, mask, dtype)
    if mt.dtype != dtype:
        mask = ctx.emit("cast", [mask], dtype=dtype)
    return mask


def _window_allowed(ctx, diff, left: int, right: int):
    allowed = None
    if left >= 0:
        allowed = ctx.emit("less_equal", [diff, np.array(left, np.int64)])
    if right >= 0:
        r = ctx.emit("greater_equal", [diff, np.array(-right, np.int64)])
        allowed = r if allowed is None else ctx.emit("logical_and", [allowed, r])
    return allowed


def import_attention(ctx, node):
    q, k, v = node.inputs[:3]
    mask, past_k, past_v, nonpad = (node.input(i) or None for i in range(3, 7))
    qt, kt, vt = ctx.type(q), ctx.type(k), ctx.type(v)
    dtype = qt.dtype
    if not dtype.is_float:
        ctx.unsupported(f"Attention of {dtype} inputs (float inputs are supported)")
    rank = len(qt.shape)
    if rank not in (3, 4) or len(kt.shape) != rank or len(vt.shape) != rank:
        ctx.unsupported(f"Q, K and V must all be 3-D or all 4-D, got {qt}, {kt}, {vt}")
    if (past_k is None) != (past_v is None):
        ctx.unsupported("past_key and past_value must be given together")
    if nonpad is not None and past_k is not None:
        ctx.unsupported("nonpad_kv_seqlen cannot be combined with past_key/past_value")
    left = int(node.attr("left_window_size", -1))
    right = int(node.attr("right_window_size", -1))
    if left < -1 or right < -1:
        ctx.unsupported(f"left_window_size {left} / right_window_size {right} must be -1 or "
                        f"nonnegative")
    mode = int(node.attr("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        ctx.unsupported(f"qk_matmul_output_mode {mode} (0 to 3 are defined)")
    precision = node.attr("softmax_precision")
    if precision is not None and int(precision) not in _PRECISIONS:
        ctx.unsupported(f"softmax_precision {precision} (supported: "
                        f"{', '.join(f'{c} ({d.name})' for c, d in _PRECISIONS.items())})")

    if vt.dtype != dtype:
        v = ctx.emit("cast", [v], dtype=dtype)
    if kt.dtype != dtype:
        k = ctx.emit("cast", [k], dtype=dtype)
    if rank == 3:
        hq, hkv = node.attr("q_num_heads"), node.attr("kv_num_heads")
        if hq is None or hkv is None:
            ctx.unsupported("3-D Q, K and V need the q_num_heads and kv_num_heads attributes")
        hq, hkv = int(hq), int(hkv)
        if hq <= 0 or hkv <= 0:
            ctx.unsupported(f"q_num_heads {hq} and kv_num_heads {hkv} must be positive")
        q = _heads_first(ctx, q, hq, "Q")
        k = _heads_first(ctx, k, hkv, "K")
        v = _heads_first(ctx, v, hkv, "V")
    else:
        hq = _static(ctx, qt.shape[1], "number of query heads (Q's axis 1)")
        hkv = _static(ctx, kt.shape[1], "number of key heads (K's axis 1)")
    head = ctx.type(q).shape[3]
    scale = node.attr("scale")
    if scale is None:
        scale = 1.0 / np.sqrt(_static(ctx, head, "head size to compute the default scale"))
    root = _scalar(np.sqrt(float(scale)), dtype)

    if past_k is not None:
        k = ctx.emit("concat", [ctx.emit("cast", [past_k], dtype=dtype)
                                if ctx.type(past_k).dtype != dtype else past_k, k], axis=2)
        v = ctx.emit("concat", [ctx.emit("cast", [past_v], dtype=dtype)
                                if ctx.type(past_v).dtype != dtype else past_v, v], axis=2)
    present_k, present_v = k, v
    q_len, kv_len = ctx.type(q).shape[2], ctx.type(k).shape[2]
    past_len = ctx.type(past_k).shape[2] if past_k is not None else 0

    terms = []
    if mask is not None:
        terms.append(_mask_bias(ctx, mask, dtype, kv_len))
    causal = bool(node.attr("is_causal", 0))
    window = left >= 0 or right >= 0
    if causal or window:
        diff = _offset_diff(ctx, q_len, kv_len, past_len, nonpad)
        if causal:
            allowed = ctx.emit("greater_equal", [diff, np.array(0, np.int64)])
            terms.append(_per_batch(ctx, _allowed_bias(ctx, allowed, dtype), nonpad, q_len,
                                    kv_len))
        if window:
            allowed = _window_allowed(ctx, diff, left, right)
            terms.append(_per_batch(ctx, _allowed_bias(ctx, allowed, dtype), nonpad, q_len,
                                    kv_len))
    if nonpad is not None:
        j = ctx.emit("arange", [], start=0, stop=kv_len, step=1, dtype=DType.I64)
        n = ctx.emit("reshape", [ctx.emit("cast", [nonpad], dtype=DType.I64)], shape=(-1, 1))
        valid = ctx.emit("less", [ctx.emit("reshape", [j], shape=(1, kv_len)), n])
        pad = _allowed_bias(ctx, valid, dtype)
        terms.append(ctx.emit("reshape", [pad], shape=(-1, 1, 1, kv_len)))
    bias = None
    for t in terms:
        bias = t if bias is None else ctx.emit("add", [bias, t])

    if hq != hkv:
        if hq % hkv:
            ctx.unsupported(f"{hq} query heads are not a multiple of {hkv} key/value heads")
        k = ctx.emit("repeat_interleave", [k], repeats=hq // hkv, axis=1)
        v = ctx.emit("repeat_interleave", [v], repeats=hq // hkv, axis=1)

    k_t = ctx.emit("permute", [ctx.emit("mul", [k, root])], axes=(0, 1, 3, 2))
    qk = ctx.emit("matmul", [ctx.emit("mul", [q, root]), k_t])
    softcap = float(node.attr("softcap", 0.0) or 0.0)
    if softcap > 0:
        cap = _scalar(softcap, dtype)
        qk = ctx.emit("mul", [ctx.emit("tanh", [ctx.emit("div", [qk, cap])]), cap])
    scores = qk if bias is None else ctx.emit("add", [qk, bias])
    qk_out = scores if mode == 2 else qk
    if precision is not None and _PRECISIONS[int(precision)] != dtype:
        scores = ctx.emit("cast", [scores], dtype=_PRECISIONS[int(precision)])
    probs = ctx.emit("softmax", [scores], axis=-1)
    if bias is not None:
        # a row no key may attend (decided on the bias, not on possibly NaN scores) is zero
        top = ctx.emit("amax", [bias], axis=-1, keepdims=True)
        empty = ctx.emit("equal", [top, _scalar(-np.inf, dtype)])
        probs = ctx.emit("where", [empty, _scalar(0, ctx.type(probs).dtype), probs])
    if ctx.type(probs).dtype != dtype:
        probs = ctx.emit("cast", [probs], dtype=dtype)
    if mode == 3:
        qk_out = probs
    y = ctx.emit("matmul", [probs, v])
    if rank == 3:
        b, _, s, _ = ctx.type(y).shape
        y = ctx.emit("reshape", [ctx.emit("permute", [y], axes=(0, 2, 1, 3))], shape=(b, s, -1))
    want_qk = len(node.outputs) > 3 and node.outputs[3]
    return [y, present_k, present_v, qk_out if want_qk else None]


IMPORTS = {"Attention": import_attention}
