"""ONNX's RotaryEmbedding (opset 23) and SwiGLU (opset 28) imported as the OneModel ops they are
made of, in the order of onnx's reference implementations.

RotaryEmbedding rotates the first ``rotary_embedding_dim`` features of each head (all of them
by default) by the angles whose cosines and sines it reads from ``cos_cache``/``sin_cache``,
indexed by ``position_ids`` when given; pairs are the two halves of those features, or
neighbours when ``interleaved``. SwiGLU is ``A * sigmoid(alpha * A) * B``. Claimed by the
records of ``scaled_dot_product_attention`` and ``glu`` (plugin.py)."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.core.symbolic import Dim


def _fixed(ctx, d, what: str) -> int:
    if isinstance(d, Dim):
        ctx.unsupported(f"RotaryEmbedding needs a fixed {what}, got the symbolic size {d}")
    return int(d)


def _angles(ctx, cache, position_ids, half: int, what: str):
    """The (B, S, 1, half) cosines or sines for each token."""
    if position_ids is not None:
        if ctx.type(position_ids).dtype.is_float:
            ctx.unsupported("position_ids must be integers")
        cache = ctx.emit("take", [cache, position_ids], axis=0)
    ct = ctx.type(cache)
    if len(ct.shape) != 3:
        ctx.unsupported(f"{what} must be (batch, sequence, rotary_embedding_dim / 2) without "
                        f"position_ids, or (positions, rotary_embedding_dim / 2) with them; "
                        f"got {ctx.type(cache)}")
    if isinstance(ct.shape[-1], Dim) or int(ct.shape[-1]) != half:
        ctx.unsupported(f"the last axis of {what} ({ct.shape[-1]}) is not "
                        f"rotary_embedding_dim / 2 ({half})")
    return ctx.emit("unsqueeze", [cache], axis=2)


def import_rotary_embedding(ctx, node):
    x, cos, sin = node.inputs[:3]
    position_ids = node.input(3) or None
    xt = ctx.type(x)
    if not xt.dtype.is_float:
        ctx.unsupported(f"RotaryEmbedding of {xt.dtype} input (float inputs are supported)")
    rank = len(xt.shape)
    if rank == 4:
        x = ctx.emit("permute", [x], axes=(0, 2, 1, 3))  # (B, S, H, D)
    elif rank == 3:
        heads = int(node.attr("num_heads", 0) or 0)
        if heads <= 0:
            ctx.unsupported("a 3-D input needs the num_heads attribute")
        b, s, hidden = xt.shape
        if int(_fixed(ctx, hidden, "hidden size")) % heads:
            ctx.unsupported(f"the hidden size {hidden} is not a multiple of num_heads {heads}")
        x = ctx.emit("reshape", [x], shape=(b, s, heads, int(hidden) // heads))
    else:
        ctx.unsupported(f"the input must be 3-D or 4-D, got {xt}")
    b, s, h, d = ctx.type(x).shape
    d = _fixed(ctx, d, "head size")
    rd = int(node.attr("rotary_embedding_dim", 0) or 0) or d
    if rd > d or rd % 2:
        ctx.unsupported(f"rotary_embedding_dim {rd} must be even and at most the head size {d}")
    half = rd // 2
    cos = _angles(ctx, cos, position_ids, half, "cos_cache")
    sin = _angles(ctx, sin, position_ids, half, "sin_cache")
    dt = ctx.type(x).dtype
    if ctx.type(cos).dtype != dt or ctx.type(sin).dtype != dt:
        ctx.unsupported(f"cos_cache and sin_cache must have the input's dtype {dt}")
    rot = x if rd == d else ctx.emit("narrow", [x], axis=3, start=0, length=rd)
    interleaved = bool(node.attr("interleaved", 0))
    if interleaved:
        pairs = ctx.emit("reshape", [rot], shape=(b, s, h, half, 2))
        x1, x2 = (ctx.emit("reshape", [p], shape=(b, s, h, half))
                  for p in ctx.emit("split", [pairs], sizes=(1, 1), axis=4))
    else:
        x1, x2 = ctx.emit("split", [rot], sizes=(half, half), axis=3)
    real = ctx.emit("sub", [ctx.emit("mul", [cos, x1]), ctx.emit("mul", [sin, x2])])
    imag = ctx.emit("add", [ctx.emit("mul", [sin, x1]), ctx.emit("mul", [cos, x2])])
    if interleaved:
        both = ctx.emit("stack", [real, imag], axis=4)
        rot = ctx.emit("reshape", [both], shape=(b, s, h, rd))
    else:
        rot = ctx.emit("concat", [real, imag], axis=3)
    y = rot if rd == d else ctx.emit(
        "concat", [rot, ctx.emit("narrow", [x], axis=3, start=rd, length=d - rd)], axis=3)
    if rank == 3:
        return [ctx.emit("reshape", [y], shape=tuple(xt.shape))]
    return [ctx.emit("permute", [y], axes=(0, 2, 1, 3))]


def import_swiglu(ctx, node):
    a, b = node.inputs[:2]
    at, bt = ctx.type(a), ctx.type(b)
    if not at.dtype.is_float:
        ctx.unsupported(f"SwiGLU of {at.dtype} inputs (float inputs are supported)")
    if at.dtype != bt.dtype:
        ctx.unsupported(f"SwiGLU's A ({at.dtype}) and B ({bt.dtype}) must have one dtype")
    if at != bt:
        ctx.unsupported(f"SwiGLU's A {at} and B {bt} must have one shape (it does not "
                        f"broadcast)")
    # float16 is computed in float32 and rounded once, as onnx's expected outputs are
    wide = DType.F32 if at.dtype == DType.F16 else at.dtype
    if wide != at.dtype:
        a, b = ctx.emit("cast", [a], dtype=wide), ctx.emit("cast", [b], dtype=wide)
    alpha = np.array(float(node.attr("alpha", 1.0)), dtype=wide.numpy)
    gate = ctx.emit("sigmoid", [ctx.emit("mul", [a, alpha])])
    y = ctx.emit("mul", [ctx.emit("mul", [a, gate]), b])
    return [y if wide == at.dtype else ctx.emit("cast", [y], dtype=at.dtype)]


ROTARY_IMPORTS = {"RotaryEmbedding": import_rotary_embedding}
SWIGLU_IMPORTS = {"SwiGLU": import_swiglu}
