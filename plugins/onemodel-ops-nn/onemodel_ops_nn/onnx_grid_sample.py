"""ONNX mapping of ``grid_sample``: GridSample (opset 16: 2-D, modes bilinear / nearest /
bicubic; opset 20 and later: any rank, modes linear / nearest / cubic).

ONNX's GridSample is PyTorch's, with one difference: in cubic mode ONNX clamps or reflects an
out-of-range source position before taking its four taps, PyTorch pads each tap's index
instead. So cubic with ``border`` or ``reflection`` padding is refused both ways (naming
``padding_mode``) rather than computed the other way; every other combination maps exactly.
"""
from __future__ import annotations

from onemodel.registry import OnnxSpec

_FROM_ONNX = {"linear": "bilinear", "bilinear": "bilinear", "nearest": "nearest",
              "cubic": "bicubic", "bicubic": "bicubic"}
_TO_ONNX_20 = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}
_PADDINGS = ("zeros", "border", "reflection")


def _cubic_padding_differs(mode: str, padding_mode: str) -> bool:
    return mode == "bicubic" and padding_mode != "zeros"


def _import_grid_sample(ctx, node):
    x, grid = node.inputs[:2]
    xt, gt = ctx.type(x), ctx.type(grid)
    mode = node.attr("mode", "linear" if ctx.opset >= 20 else "bilinear")
    padding_mode = node.attr("padding_mode", "zeros")
    align_corners = bool(node.attr("align_corners", 0))
    if mode not in _FROM_ONNX:
        ctx.unsupported(f"GridSample mode={mode!r} (one of linear, nearest, cubic)")
    if padding_mode not in _PADDINGS:
        ctx.unsupported(f"GridSample padding_mode={padding_mode!r} (one of "
                        f"{', '.join(_PADDINGS)})")
    mode = _FROM_ONNX[mode]
    if _cubic_padding_differs(mode, padding_mode):
        ctx.unsupported(f"GridSample mode=cubic with padding_mode={padding_mode!r} (ONNX pads "
                        f"the source position, PyTorch's bicubic each tap; only zeros agree)")
    if not xt.dtype.is_float or not gt.dtype.is_float:
        ctx.unsupported(f"GridSample of {xt.dtype} input and {gt.dtype} grid (float only)")
    if len(xt.shape) < 3:
        ctx.unsupported(f"GridSample of a rank-{len(xt.shape)} input (N, C, *spatial needed)")
    if gt.dtype != xt.dtype:
        grid = ctx.emit("cast", [grid], dtype=xt.dtype)
    return [ctx.emit("grid_sample", [x, grid], mode=mode, padding_mode=padding_mode,
                     align_corners=align_corners)]


def _export_grid_sample(ctx, node):
    p = node.params
    xt = ctx.input_types(node)[0]
    if _cubic_padding_differs(p["mode"], p["padding_mode"]):
        ctx.unsupported(node, f"GridSample's cubic mode pads the source position, PyTorch's "
                              f"bicubic each tap: padding_mode={p['padding_mode']!r} differs")
    if ctx.opset < 20 and len(xt.shape) != 4:
        ctx.unsupported(node, f"GridSample before opset 20 is 2-D only; the input is {xt}")
    mode = p["mode"] if ctx.opset < 20 else _TO_ONNX_20[p["mode"]]
    x, grid = ctx.inputs(node)
    gt = ctx.input_types(node)[1]
    out = ctx.output_types(node)[0]
    x, grid = ctx.cast(x, xt.dtype, out.dtype), ctx.cast(grid, gt.dtype, out.dtype)
    ctx.make_node("GridSample", [x, grid], ctx.outputs(node), mode=mode,
                  padding_mode=p["padding_mode"], align_corners=int(bool(p["align_corners"])))


ONNX = {"grid_sample": OnnxSpec(export=_export_grid_sample,
                                imports={"GridSample": _import_grid_sample},
                                doc="export; import GridSample (cubic: zeros padding only)")}
