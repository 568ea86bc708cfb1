"""MaxPool with its Indices output (2-D pooling): ``max_pool2d(return_indices=True)`` counts
into each (H, W) plane, row-major, as torch does; ONNX counts into the whole flattened input,
``((n * C + c) * H + h) * W + w``, or with ``storage_order=1`` the plane column-major,
``(n * C + c) * H * W + w * H + h``. The rule wraps MaxPool's own rule (plugin.py), which keeps
every node without an Indices output."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.core.symbolic import Dim


def with_indices(base):
    def rule(ctx, node):
        if len(node.outputs) < 2 or not node.outputs[1]:
            return base(ctx, node)
        from .onnx_mapping import _auto_pads_full, _emit_pool2d

        x = node.inputs[0]
        xt = ctx.type(x)
        if len(xt.shape) != 4 or any(isinstance(d, Dim) for d in xt.shape):
            ctx.unsupported(f"MaxPool with an Indices output on shape "
                            f"{[str(d) for d in xt.shape]} (2-D pooling of a fixed shape)")
        if not xt.dtype.is_float:
            ctx.unsupported(f"MaxPool with an Indices output of a {xt.dtype.name.lower()} "
                            f"tensor (floats)")
        n, c, h, w = (int(d) for d in xt.shape)
        k = list(node.attr("kernel_shape"))
        s = list(node.attr("strides") or [1, 1])
        d = list(node.attr("dilations") or [1, 1])
        begin, end = _auto_pads_full(ctx, node, xt.shape[2:], k, s, d)
        values, plane = _emit_pool2d(ctx, "max_pool2d", x, k, s, d, begin, end,
                                     bool(node.attr("ceil_mode", 0)), {"return_indices": True})
        plane = ctx.emit("cast", [plane], dtype=DType.I64) \
            if ctx.type(plane).dtype != DType.I64 else plane
        if node.attr("storage_order", 0):
            row = ctx.emit("floor_divide", [plane, np.array(w, np.int64)])
            col = ctx.emit("sub", [plane, ctx.emit("mul", [row, np.array(w, np.int64)])])
            plane = ctx.emit("add", [ctx.emit("mul", [col, np.array(h, np.int64)]), row])
        offset = (np.arange(n * c, dtype=np.int64) * (h * w)).reshape(n, c, 1, 1)
        return [values, ctx.emit("add", [plane, offset])]
    return rule
