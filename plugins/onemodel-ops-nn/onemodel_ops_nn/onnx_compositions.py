"""ONNX op types imported as a few existing ops (no op of their own: PyTorch composes its
``lp_pool*d`` and ``local_response_norm`` from the same pieces): LpPool and LRN. Each rule
follows onnx's definition, in the input's dtype; plugin.py attaches each to the record of the op
at its heart."""
from __future__ import annotations

import numpy as np

from onemodel.core.symbolic import Dim


def _scalar(ctx, x, value):
    return np.array(value, dtype=ctx.type(x).dtype.numpy)


def _float(ctx, node, x):
    if not ctx.type(x).dtype.is_float:
        ctx.unsupported(f"{node.op_type} of a {ctx.type(x).dtype.name.lower()} tensor (floats)")


def import_lp_pool(ctx, node):
    """(sum over each window of |x|^p)^(1/p): an AveragePool of |x|^p with the padding counted
    (zeros), times the window's size. The AveragePool rule reads the same attributes."""
    from onemodel.formats.onnx_api import OnnxNode

    from .onnx_mapping import _import_pool

    x = node.inputs[0]
    _float(ctx, node, x)
    p = node.attr("p", 2)
    if p <= 0:
        ctx.unsupported(f"LpPool with p={p} (p >= 1)")
    a = ctx.emit("abs", [x])
    powered = ctx.emit("mul", [a, a]) if p == 2 else ctx.emit("pow", [a, _scalar(ctx, x, p)])
    attrs = {k: v for k, v in node.attrs.items() if k != "p"}
    attrs["count_include_pad"] = 1
    avg = OnnxNode("AveragePool", [powered], node.outputs[:1], attrs, name=node.name)
    (mean,) = _import_pool("avg_pool2d", "AveragePool")(ctx, avg)
    total = ctx.emit("mul", [mean, _scalar(ctx, x, int(np.prod(node.attr("kernel_shape"))))])
    if p == 1:
        return [total]
    if p == 2:
        return [ctx.emit("sqrt", [total])]
    return [ctx.emit("pow", [total, _scalar(ctx, x, 1.0 / p)])]


def import_lrn(ctx, node):
    """x / (bias + alpha / size * sum of x^2 over the channels c - (size-1)//2 .. c + size//2)
    ^ beta: the squares padded with zeros on the channel axis and summed over size shifted
    windows."""
    x = node.inputs[0]
    _float(ctx, node, x)
    shape = ctx.type(x).shape
    rank = len(shape)
    size = int(node.attr("size"))
    if rank < 3 or size < 1:
        ctx.unsupported(f"LRN of a rank-{rank} input with size {size} (rank >= 3, size >= 1)")
    channels = shape[1]
    if isinstance(channels, Dim):
        ctx.unsupported(f"LRN over the symbolic channel axis {channels}")
    alpha, beta = float(node.attr("alpha", 1e-4)), float(node.attr("beta", 0.75))
    bias = float(node.attr("bias", 1.0))
    before, after = (size - 1) // 2, size // 2
    sq = ctx.emit("mul", [x, x])
    widths = (0, 0) * (rank - 2) + (before, after)
    padded = ctx.emit("pad", [sq], pad=widths, value=0.0)
    total = ctx.emit("narrow", [padded], axis=1, start=0, length=channels)
    for k in range(1, size):
        total = ctx.emit("add", [total, ctx.emit("narrow", [padded], axis=1, start=k,
                                                 length=channels)])
    scale = ctx.emit("add", [ctx.emit("mul", [total, _scalar(ctx, x, alpha / size)]),
                             _scalar(ctx, x, bias)])
    return [ctx.emit("div", [x, ctx.emit("pow", [scale, _scalar(ctx, x, beta)])])]


#: op name -> the ONNX op types its record also claims
RIDERS = {
    "avg_pool2d": {"LpPool": import_lp_pool, "LRN": import_lrn},
}
