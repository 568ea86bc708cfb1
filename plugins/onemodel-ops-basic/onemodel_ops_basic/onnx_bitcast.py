"""ONNX mapping of bitcast.py (``ONNX = {op_name: OnnxSpec}``, merged by plugin.py): BitCast
(opset 26) both ways. ONNX's BitCast keeps the width, so a bitcast to a dtype of another width
exports through unsigned integers: to a narrower one, each wide word is cut into its
little-endian pieces (BitShift, BitwiseAnd, Cast) laid along a new last axis and merged into the
last axis; to a wider one, the last axis is cut into groups whose pieces are shifted into place
and or-ed. A target dtype OneModel lacks (bfloat16, float8, 4-bit, complex) is refused by name
on import."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.formats.onnx_api import OnnxSpec

_UINT = {1: DType.U8, 2: DType.U16, 4: DType.U32, 8: DType.U64}


def _bits(ctx, x: str, src: DType, dst: DType, out=None) -> str:
    """x reinterpreted as dst, a dtype of its width (no node when they are one dtype). A bool
    reads each nonzero byte as True, as the kernel does, and a bool's byte is its value (0 or 1):
    both are a Cast (BitCast would keep a byte other than 0 or 1, and ONNX Runtime has no bool
    BitCast)."""
    if src == dst:
        return x if out is None else ctx.make_node("Identity", [x], out)
    op = "Cast" if DType.BOOL in (src, dst) else "BitCast"
    return ctx.make_node(op, [x], out, to=ctx.onnx_dtype(dst))


def _to_narrower(ctx, x, src, dst, out_shape, out):
    wide, narrow = _UINT[src.itemsize], _UINT[dst.itemsize]
    u = _bits(ctx, x, src, wide)
    step, k = 8 * dst.itemsize, src.itemsize // dst.itemsize
    mask = ctx.const(np.array(2 ** step - 1, wide.numpy))
    pieces = []
    for j in range(k):  # little endian: the lowest bits come first
        s = u if j == 0 else ctx.make_node(
            "BitShift", [u, ctx.const(np.array(j * step, wide.numpy))], direction="RIGHT")
        piece = ctx.make_node("Cast", [ctx.make_node("BitwiseAnd", [s, mask])],
                              to=ctx.onnx_dtype(narrow))
        pieces.append(ctx.make_node("Unsqueeze", [piece, ctx.ints([-1])]))
    joined = ctx.make_node("Concat", pieces, axis=-1)
    flat = ctx.make_node("Reshape", [joined, ctx.reshape_target(out_shape)])
    _bits(ctx, flat, narrow, dst, out)


def _to_wider(ctx, x, src, dst, in_shape, out):
    narrow, wide = _UINT[src.itemsize], _UINT[dst.itemsize]
    u = _bits(ctx, x, src, narrow)
    step, k = 8 * src.itemsize, dst.itemsize // src.itemsize
    groups = ctx.make_node("Reshape", [u, ctx.reshape_target(
        (*in_shape[:-1], in_shape[-1] // k, k))])
    acc = None
    for j in range(k):
        piece = ctx.make_node("Gather", [groups, ctx.const(np.array(j, np.int64))], axis=-1)
        w = ctx.make_node("Cast", [piece], to=ctx.onnx_dtype(wide))
        if j:
            w = ctx.make_node("BitShift", [w, ctx.const(np.array(j * step, wide.numpy))],
                              direction="LEFT")
        acc = w if acc is None else ctx.make_node("BitwiseOr", [acc, w])
    _bits(ctx, acc, wide, dst, out)


def _export(ctx, node):
    (xt,), (yt,) = ctx.input_types(node), ctx.output_types(node)
    src, dst = xt.dtype, yt.dtype
    if ctx.opset < 26:
        ctx.unsupported(node, f"BitCast needs opset 26 (exporting at {ctx.opset})")
    (x,), out = ctx.inputs(node), ctx.outputs(node)
    if src.itemsize == dst.itemsize:
        _bits(ctx, x, src, dst, out)
    elif src.itemsize > dst.itemsize:
        _to_narrower(ctx, x, src, dst, yt.shape, out)
    else:
        _to_wider(ctx, x, src, dst, xt.shape, out)


def _import(ctx, node):
    x = node.inputs[0]
    src = ctx.type(x).dtype
    dst = ctx.dtype(node.attr("to"), "BitCast's attribute 'to'")
    if src.itemsize != dst.itemsize:
        ctx.unsupported(f"BitCast from {src.name.lower()} to {dst.name.lower()}: the attribute "
                        f"'to' must name a type of the input's width ({src.itemsize} bytes)")
    return [ctx.emit("bitcast", [x], dtype=dst)]


ONNX = {"bitcast": OnnxSpec(export=_export, imports={"BitCast": _import})}
