"""ONNX's MaxUnpool imported as the ops it is made of: zeros of the output's size, ``scatter``
of the input at the indices (MaxPool's Indices: flat over the whole output tensor), and a
reshape. The output shape is the ``output_shape`` input when given (a constant or sizes of
input axes), else ONNX's default ``(in - 1) * stride - pads + kernel`` per spatial axis.
With ``output_shape`` the indices address that shape, as in ONNX Runtime and PyTorch (onnx's
reference evaluator, and so the node test ``test_maxunpool_export_with_output_shape``,
scatters into the default shape and pads its end instead). Claimed by the record of
``max_pool2d`` (plugin.py)."""
from __future__ import annotations

import math

from onemodel.core.symbolic import Dim


def _default_shape(ctx, node, shape):
    n = len(shape) - 2
    kernel = node.attr("kernel_shape", None)
    if not kernel or len(kernel) != n:
        ctx.unsupported(f"MaxUnpool kernel_shape={kernel!r} (one size per spatial axis, "
                        f"{n} here)")
    strides = list(node.attr("strides", None) or [1] * n)
    pads = list(node.attr("pads", None) or [0] * (2 * n))
    if len(strides) != n or len(pads) != 2 * n:
        ctx.unsupported(f"MaxUnpool strides={strides} or pads={pads} do not fit {n} axes")
    return tuple(shape[:2]) + tuple(
        (shape[2 + a] - 1) * int(strides[a]) - int(pads[a]) - int(pads[n + a]) + int(kernel[a])
        for a in range(n))


def import_max_unpool(ctx, node):
    x, indices = node.inputs[:2]
    xt, it = ctx.type(x), ctx.type(indices)
    if len(xt.shape) < 3:
        ctx.unsupported(f"MaxUnpool of a rank-{len(xt.shape)} input (N, C, *spatial needed)")
    if it.dtype.is_float:
        ctx.unsupported(f"MaxUnpool indices of {it.dtype} (integers needed)")
    given = node.input(2)
    if given:
        known = ctx.symbolic(given)
        if known is None:
            ctx.unsupported("MaxUnpool output_shape fed at run time (a constant or sizes of "
                            "input axes are imported)")
        out = tuple(v if isinstance(v, Dim) else int(v) for v in known.reshape(-1))
        if len(out) != len(xt.shape):
            ctx.unsupported(f"MaxUnpool output_shape {list(out)} for a rank-{len(xt.shape)} "
                            f"input")
    else:
        out = _default_shape(ctx, node, tuple(xt.shape))
    if any(not isinstance(d, Dim) and d < 1 for d in out):
        ctx.unsupported(f"MaxUnpool output shape {list(out)} has an empty axis")
    total = math.prod(out)
    flat_x = ctx.emit("reshape", [x], shape=(-1,))
    flat_i = ctx.emit("reshape", [indices], shape=(-1,))
    zeros = ctx.emit("full", [], shape=(total,), value=0, dtype=xt.dtype)
    y = ctx.emit("scatter", [zeros, flat_i, flat_x], axis=0)
    return [ctx.emit("reshape", [y], shape=out)]


IMPORTS = {"MaxUnpool": import_max_unpool}
