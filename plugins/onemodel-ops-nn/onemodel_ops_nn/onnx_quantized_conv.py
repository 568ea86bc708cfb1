"""ConvInteger and QLinearConv imported as a float64 conv of the zero-point-shifted integers
(exact: every sum of uint8/int8 products is far below 2^53), then int32 (ConvInteger) or
requantized with the multiplier ``x_scale * w_scale / y_scale`` rounded half to even and
saturated (QLinearConv), as onnx's reference computes them. A 1-D ``w_zero_point`` /
``w_scale`` is per output channel. Claimed by conv2d's record (plugin.py)."""
from __future__ import annotations


from onemodel.core import DType

from .onnx_mapping import conv_from

_RANGES = {DType.U8: (0, 255), DType.I8: (-128, 127)}


def _shifted(ctx, node, v, zp, per_channel):
    t = ctx.type(v).dtype
    if t not in _RANGES:
        ctx.unsupported(f"{node.op_type} of {t.name.lower()} (uint8 and int8)")
    f = ctx.emit("cast", [v], dtype=DType.F64)
    if not zp:
        return f
    z = ctx.emit("cast", [zp], dtype=DType.F64)
    shape = ctx.type(zp).shape
    if len(shape) == 1 and shape[0] != 1 and per_channel:
        z = ctx.emit("reshape", [z], shape=(shape[0],) + (1,) * (ctx.rank(v) - 1))
    elif len(shape) == 1:
        z = ctx.emit("reshape", [z], shape=())
    elif len(shape) > 1:
        ctx.unsupported(f"{node.op_type} with a zero point of rank {len(shape)}")
    return ctx.emit("sub", [f, z])


def _per_channel(ctx, v, rank):
    """A scalar, or a 1-D per-output-channel tensor shaped (1, C, 1...) for the output."""
    shape = ctx.type(v).shape
    if len(shape) == 1 and shape[0] != 1:
        return ctx.emit("reshape", [v], shape=(1, shape[0]) + (1,) * (rank - 2))
    return ctx.emit("reshape", [v], shape=()) if len(shape) == 1 else v


def import_conv_integer(ctx, node):
    x, w, xzp, wzp = (list(node.inputs) + [""] * 4)[:4]
    if xzp and ctx.type(xzp).shape not in ((), (1,)):
        ctx.unsupported("ConvInteger with a per-channel x_zero_point")
    y = conv_from(ctx, node, _shifted(ctx, node, x, xzp, False),
                  _shifted(ctx, node, w, wzp, True), None)
    return [ctx.emit("cast", [y], dtype=DType.I32)]


def import_qlinear_conv(ctx, node):
    x, xs, xzp, w, ws, wzp, ys, yzp, b = (list(node.inputs) + [""] * 9)[:9]
    if xzp and ctx.type(xzp).shape not in ((), (1,)):
        ctx.unsupported("QLinearConv with a per-channel x_zero_point")
    bias = ctx.emit("cast", [b], dtype=DType.F64) if b else None
    c = conv_from(ctx, node, _shifted(ctx, node, x, xzp, False),
                  _shifted(ctx, node, w, wzp, True), bias)
    rank = ctx.rank(x)
    m = ctx.emit("div", [ctx.emit("mul", [xs, _per_channel(ctx, ws, rank)]), ys])
    d = ctx.emit("mul", [c, ctx.emit("cast", [m], dtype=DType.F64)])
    dtype = ctx.type(yzp).dtype if yzp else ctx.type(x).dtype
    if yzp:
        d = ctx.emit("add", [d, ctx.emit("cast", [yzp], dtype=DType.F64)])
    lo, hi = _RANGES.get(dtype) or ctx.unsupported(f"QLinearConv to {dtype.name.lower()}")
    d = ctx.emit("clip", [ctx.emit("round", [d])], min=float(lo), max=float(hi))
    return [ctx.emit("cast", [d], dtype=dtype)]


IMPORTS = {"ConvInteger": import_conv_integer, "QLinearConv": import_qlinear_conv}
