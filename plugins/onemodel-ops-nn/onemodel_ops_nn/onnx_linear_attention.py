"""ONNX's LinearAttention (opset 27) imported as its recurrence, unrolled over the (fixed)
sequence length: for each token the float32 state (B, H_kv, d_k, d_v) is decayed by
``exp(decay)`` ('gated', 'gated_delta'), the value corrected by ``beta * (v - S^T k)`` ('delta',
'gated_delta'), ``k ⊗ v`` added, and the output read as ``scale * q^T S`` with each key/value
head shared by its group of query heads, in the order of onnx's reference. Claimed by
scaled_dot_product_attention's record (plugin.py)."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.core.symbolic import Dim

#: the longest sequence the rule unrolls (one group of nodes per token)
MAX_STEPS = 1024

_RULES = ("linear", "gated", "delta", "gated_delta")


def _heads_first(ctx, x, heads: int, what: str):
    """(B, T, heads * D) -> float32 (B, heads, T, D)."""
    t = ctx.type(x)
    if len(t.shape) != 3:
        ctx.unsupported(f"{what} must be 3-D (batch, sequence, heads * size), got {t}")
    b, s, hidden = t.shape
    if isinstance(hidden, Dim) or int(hidden) % heads:
        ctx.unsupported(f"the last axis of {what} ({hidden}) must be a fixed multiple of "
                        f"{heads}")
    y = ctx.emit("reshape", [x], shape=(b, s, heads, int(hidden) // heads))
    y = ctx.emit("permute", [y], axes=(0, 2, 1, 3))
    return y if t.dtype == DType.F32 else ctx.emit("cast", [y], dtype=DType.F32)


def _step(ctx, x, i: int):
    return ctx.emit("narrow", [x], axis=2, start=i, length=1)


def import_linear_attention(ctx, node):
    q, k, v = node.inputs[:3]
    past, decay, beta = (node.input(i) or None for i in (3, 4, 5))
    rule = node.attr("update_rule", "gated_delta")
    if rule not in _RULES:
        ctx.unsupported(f"update_rule {rule!r} (one of {', '.join(map(repr, _RULES))})")
    hq, hkv = node.attr("q_num_heads"), node.attr("kv_num_heads")
    if hq is None or hkv is None:
        ctx.unsupported("the q_num_heads and kv_num_heads attributes are required")
    hq, hkv = int(hq), int(hkv)
    if hq <= 0 or hkv <= 0 or hq % hkv:
        ctx.unsupported(f"q_num_heads ({hq}) must be a positive multiple of kv_num_heads "
                        f"({hkv})")
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    for name, given, needed in (("decay", decay, gating), ("beta", beta, delta)):
        if needed and given is None:
            ctx.unsupported(f"update_rule {rule!r} needs the {name} input")
        if not needed and given is not None:
            ctx.unsupported(f"update_rule {rule!r} takes no {name} input")
    qt = ctx.type(q)
    if not qt.dtype.is_float:
        ctx.unsupported(f"LinearAttention of {qt.dtype} inputs (float inputs are supported)")
    q4 = _heads_first(ctx, q, hq, "query")
    k4 = _heads_first(ctx, k, hkv, "key")
    v4 = _heads_first(ctx, v, hkv, "value")
    b, _, steps, d_k = ctx.type(k4).shape
    d_v = ctx.type(v4).shape[3]
    if isinstance(steps, Dim):
        ctx.unsupported(f"LinearAttention is unrolled over the sequence, whose length must be "
                        f"fixed, got the symbolic size {steps}")
    if int(steps) > MAX_STEPS:
        ctx.unsupported(f"a sequence of {steps} tokens (the recurrence is unrolled up to "
                        f"{MAX_STEPS})")
    if decay is not None:
        last = ctx.type(decay).shape[-1]
        if _same(last, hkv):
            g = ctx.emit("permute", [ctx.emit("reshape", [decay], shape=(b, steps, hkv, 1))],
                         axes=(0, 2, 1, 3))
        elif _same(last, hkv * d_k):
            g = ctx.emit("permute", [ctx.emit("reshape", [decay], shape=(b, steps, hkv, d_k))],
                         axes=(0, 2, 1, 3))
        else:
            ctx.unsupported(f"decay's last axis ({last}) must be kv_num_heads ({hkv}) or "
                            f"kv_num_heads * d_k ({hkv * d_k})")
        g = ctx.emit("cast", [g], dtype=DType.F32)
    if beta is not None:
        last = ctx.type(beta).shape[-1]
        if not (_same(last, hkv) or _same(last, 1)):
            ctx.unsupported(f"beta's last axis ({last}) must be kv_num_heads ({hkv}) or 1")
        bt = ctx.emit("permute", [ctx.emit("reshape", [beta], shape=(b, steps, int(last), 1))],
                      axes=(0, 2, 1, 3))
        bt = ctx.emit("cast", [bt], dtype=DType.F32)
    if past is not None:
        state_dtype = ctx.type(past).dtype
        state = ctx.emit("cast", [past], dtype=DType.F32)
    else:
        state_dtype = qt.dtype
        state = ctx.emit("full", [], shape=(b, hkv, d_k, d_v), value=0.0, dtype=DType.F32)
    scale = float(node.attr("scale", 0.0) or 0.0) or 1.0 / np.sqrt(int(ctx.type(q4).shape[3]))
    scale = np.array(scale, np.float32)
    outs = []
    for i in range(int(steps)):
        k_t, v_t = _step(ctx, k4, i), _step(ctx, v4, i)  # (B, H, 1, d)
        if gating:  # (B, H, 1, 1 or d_k) -> (B, H, 1 or d_k, 1), broadcast over d_v
            gate = ctx.emit("exp", [ctx.emit("permute", [_step(ctx, g, i)], axes=(0, 1, 3, 2))])
            state = ctx.emit("mul", [state, gate])
        if delta:
            retrieved = ctx.emit("matmul", [k_t, state])  # (B, H, 1, d_v)
            v_t = ctx.emit("mul", [_step(ctx, bt, i), ctx.emit("sub", [v_t, retrieved])])
        k_col = ctx.emit("permute", [k_t], axes=(0, 1, 3, 2))
        state = ctx.emit("add", [state, ctx.emit("matmul", [k_col, v_t])])
        read = state if hq == hkv else ctx.emit("repeat_interleave", [state],
                                                repeats=hq // hkv, axis=1)
        outs.append(ctx.emit("mul", [ctx.emit("matmul", [_step(ctx, q4, i), read]), scale]))
    y = outs[0] if len(outs) == 1 else ctx.emit("concat", outs, axis=2)  # (B, H_q, T, d_v)
    y = ctx.emit("reshape", [ctx.emit("permute", [y], axes=(0, 2, 1, 3))],
                 shape=(b, steps, hq * int(d_v)))
    if qt.dtype != DType.F32:
        y = ctx.emit("cast", [y], dtype=qt.dtype)
    if state_dtype != DType.F32:
        state = ctx.emit("cast", [state], dtype=state_dtype)
    return [y, state]


def _same(a, b) -> bool:
    return not isinstance(a, Dim) and not isinstance(b, Dim) and int(a) == int(b)


IMPORTS = {"LinearAttention": import_linear_attention}
