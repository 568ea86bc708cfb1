"""ONNX's quantized ops imported as their float equivalent, exact to onnx's rules.

Each becomes standard ops (``div``, ``round``, ``clip``, ``cast``, ``matmul``...), so every
backend runs it with its own kernels and no new op exists for it:

* ``QuantizeLinear``: ``saturate(round_half_even(x / scale) + zero_point)`` into the zero
  point's dtype (uint8 when absent, or ``output_dtype``), the division in the input's dtype;
* ``DequantizeLinear``: ``(float32(x) - zero_point) * scale``, cast to the scale's dtype;
* per-axis scales and zero points (a 1-D tensor along ``axis``) broadcast along that axis;
  blocked quantization (``block_size``) and float8/int4 types are refused;
* ``DynamicQuantizeLinear``: uint8 over ``[min(0, min x), max(0, max x)]``, as onnx computes it;
* ``MatMulInteger`` / ``QLinearMatMul``: the product of the zero-point-shifted integers, in
  float64 (exact: every sum of uint8/int8 products is far below 2^53), then int32, or
  requantized with the float32 multiplier ``a_scale * b_scale / y_scale``.
"""
from __future__ import annotations

import numpy as np

from onemodel.core import DType

_RANGES = {DType.U8: (0, 255), DType.I8: (-128, 127), DType.U16: (0, 65535),
           DType.I16: (-32768, 32767)}
_ONNX_INT = {2: DType.U8, 3: DType.I8, 4: DType.U16, 5: DType.I16}


def _along(ctx, node, v, rank, axis):
    """A scale or zero point shaped to broadcast against a rank-``rank`` input: a scalar or
    one-element tensor as is, a 1-D tensor along ``axis`` (per-axis quantization)."""
    if node.attr("block_size", 0):
        ctx.unsupported(f"{node.op_type} with block_size={node.attr('block_size')} (blocked "
                        f"quantization)")
    shape = ctx.type(v).shape
    if len(shape) == 0:
        return v
    if len(shape) != 1:
        ctx.unsupported(f"{node.op_type} with a scale or zero point of rank {len(shape)}")
    if shape[0] == 1:
        return ctx.emit("reshape", [v], shape=())
    axis %= max(rank, 1)
    target = [1] * rank
    target[axis] = shape[0]
    return ctx.emit("reshape", [v], shape=tuple(target))


def _f32(ctx, v):
    return v if ctx.type(v).dtype == DType.F32 else ctx.emit("cast", [v], dtype=DType.F32)


def _saturate(ctx, v, dtype):
    """A float tensor of whole numbers clipped to ``dtype``'s range and cast to it."""
    lo, hi = _RANGES[dtype]
    return ctx.emit("cast", [ctx.emit("clip", [v], min=float(lo), max=float(hi))], dtype=dtype)


def _target(ctx, node, zp):
    if zp:
        dtype = ctx.type(zp).dtype
    else:
        code = node.attr("output_dtype", 0)
        if code and code not in _ONNX_INT:
            ctx.unsupported(f"QuantizeLinear to ONNX type {code} (uint8, int8, uint16 and "
                            f"int16 are imported)")
        dtype = _ONNX_INT.get(code, DType.U8)
    if dtype not in _RANGES:
        ctx.unsupported(f"QuantizeLinear to {dtype.name.lower()} (uint8, int8, uint16 and "
                        f"int16 are imported)")
    return dtype


def import_quantize(ctx, node):
    x, scale, zp = node.inputs[0], node.inputs[1], node.input(2)
    rank, axis = ctx.rank(x), int(node.attr("axis", 1))
    if node.attr("precision", 0):
        ctx.unsupported("QuantizeLinear with precision")
    dtype = _target(ctx, node, zp)
    xt = ctx.type(x).dtype
    if not xt.is_float:
        x = ctx.emit("cast", [x], dtype=DType.F32)  # int32 input: divided in float32
        xt = DType.F32
    s = _along(ctx, node, scale, rank, axis)
    if ctx.type(s).dtype != xt:
        s = ctx.emit("cast", [s], dtype=xt)
    q = _f32(ctx, ctx.emit("round", [ctx.emit("div", [x, s])]))
    if zp:
        q = ctx.emit("add", [q, _f32(ctx, _along(ctx, node, zp, rank, axis))])
    return [_saturate(ctx, q, dtype)]


def import_dequantize(ctx, node):
    x, scale, zp = node.inputs[0], node.inputs[1], node.input(2)
    rank, axis = ctx.rank(x), int(node.attr("axis", 1))
    xt = ctx.type(x).dtype
    if not xt.is_int:
        ctx.unsupported(f"DequantizeLinear of a {xt.name.lower()} tensor (integers only)")
    out = ctx.type(scale).dtype
    code = node.attr("output_dtype", 0)
    if code:
        out = ctx.dtype(code, "DequantizeLinear output_dtype")
    dx = _f32(ctx, x)
    if zp:
        dx = ctx.emit("sub", [dx, _f32(ctx, _along(ctx, node, zp, rank, axis))])
    y = ctx.emit("mul", [dx, _f32(ctx, _along(ctx, node, scale, rank, axis))])
    return [y if out == DType.F32 else ctx.emit("cast", [y], dtype=out)]


def import_dynamic_quantize(ctx, node):
    x = node.inputs[0]
    if ctx.type(x).dtype != DType.F32:
        ctx.unsupported(f"DynamicQuantizeLinear of {ctx.type(x).dtype.name.lower()} (float32)")
    zero = np.array(0, np.float32)
    hi = ctx.emit("maximum", [zero, ctx.emit("amax", [x], axis=None, keepdims=False)])
    lo = ctx.emit("minimum", [zero, ctx.emit("amin", [x], axis=None, keepdims=False)])
    span = ctx.emit("where", [ctx.emit("equal", [hi, lo]), np.array(1, np.float32),
                              ctx.emit("sub", [hi, lo])])
    scale = ctx.emit("div", [span, np.array(255, np.float32)])
    zp0 = ctx.emit("sub", [zero, ctx.emit("div", [lo, scale])])
    zp = ctx.emit("round", [ctx.emit("clip", [zp0], min=0.0, max=255.0)])
    y = ctx.emit("add", [ctx.emit("round", [ctx.emit("div", [x, scale])]), zp])
    return [_saturate(ctx, y, DType.U8), scale, ctx.emit("cast", [zp], dtype=DType.U8)]


def _shifted(ctx, node, v, zp, row):
    """``float64(v) - zero_point``; a 1-D zero point is per row of A (``row``) or per column
    of B."""
    f = ctx.emit("cast", [v], dtype=DType.F64)
    if not zp:
        return f
    if ctx.type(zp).dtype != ctx.type(v).dtype:
        ctx.unsupported(f"{node.op_type}: a zero point's dtype differs from its input's")
    z = ctx.emit("cast", [zp], dtype=DType.F64)
    shape = ctx.type(zp).shape
    if len(shape) == 1 and row and shape[0] != 1:
        z = ctx.emit("reshape", [z], shape=(shape[0], 1))
    elif len(shape) > 1 or (len(shape) == 1 and shape[0] == 1):
        z = ctx.emit("reshape", [z], shape=() if len(shape) == 1 else tuple(shape))
    return ctx.emit("sub", [f, z])


def _int_product(ctx, node, a, b, azp, bzp):
    for v in (a, b):
        if ctx.type(v).dtype not in (DType.U8, DType.I8):
            ctx.unsupported(f"{node.op_type} of {ctx.type(v).dtype.name.lower()} (uint8 and "
                            f"int8)")
    return ctx.emit("matmul", [_shifted(ctx, node, a, azp, True),
                               _shifted(ctx, node, b, bzp, False)])


def import_matmul_integer(ctx, node):
    a, b = node.inputs[0], node.inputs[1]
    c = _int_product(ctx, node, a, b, node.input(2), node.input(3))
    return [ctx.emit("cast", [c], dtype=DType.I32)]


def import_qlinear_matmul(ctx, node):
    a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp = (list(node.inputs) + [""] * 8)[:8]
    c = _int_product(ctx, node, a, b, a_zp, b_zp)
    m = ctx.emit("div", [ctx.emit("mul", [a_s, b_s]), y_s])  # in the scales' dtype, as onnx
    d = ctx.emit("mul", [c, ctx.emit("cast", [m], dtype=DType.F64)])
    dtype = ctx.type(y_zp).dtype if y_zp else ctx.type(a).dtype
    if y_zp:
        d = ctx.emit("add", [d, ctx.emit("cast", [y_zp], dtype=DType.F64)])
    return [_saturate(ctx, ctx.emit("round", [d]), dtype)]


IMPORTS = {"QuantizeLinear": import_quantize, "DequantizeLinear": import_dequantize,
           "DynamicQuantizeLinear": import_dynamic_quantize,
           "MatMulInteger": import_matmul_integer, "QLinearMatMul": import_qlinear_matmul}
