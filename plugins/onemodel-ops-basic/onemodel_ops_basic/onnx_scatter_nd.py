"""ONNX mappings of scatter_nd (``ONNX = {op_name: OnnxSpec}``, merged by plugin.py): ScatterND
(every reduction) both ways; ScatterElements with reduction mul / max / min (which ``scatter``
and ``scatter_add`` do not cover) as a scatter_nd over each element's full coordinates; and
Scatter, ScatterElements' name before opset 11, through ScatterElements' rule."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.core.symbolic import Dim
from onemodel.registry import OnnxSpec

from .scatter_nd import REDUCTIONS


def _reduction(ctx, node) -> str:
    r = node.attr("reduction", "none")
    r = r.decode() if isinstance(r, bytes) else r
    if r not in REDUCTIONS:
        ctx.unsupported(f"{node.op_type} with reduction {r!r}")
    if r in ("max", "min") and ctx.opset < 18:
        ctx.unsupported(f"{node.op_type}-{ctx.opset} with reduction {r!r} (opset 18's)")
    return r


def _import_scatter_nd(ctx, node):
    return [ctx.emit("scatter_nd", list(node.inputs[:3]), reduction=_reduction(ctx, node))]


def _export_scatter_nd(ctx, node):
    x, idx, upd = ctx.inputs(node)
    tx, ti, tu = ctx.input_types(node)
    reduction = node.params["reduction"]
    if reduction != "none" and ctx.opset < (18 if reduction in ("max", "min") else 16):
        ctx.unsupported(node, f"ScatterND with reduction {reduction!r} needs opset "
                              f"{18 if reduction in ('max', 'min') else 16}")
    attrs = {"reduction": reduction} if reduction != "none" else {}
    ctx.make_node("ScatterND", [x, ctx.cast(idx, ti.dtype, DType.I64),
                                ctx.cast(upd, tu.dtype, tx.dtype)], ctx.outputs(node), **attrs)


def _import_scatter_elements_reduce(ctx, node):
    """ScatterElements with reduction mul / max / min: each element of ``indices`` names one
    entry of x, at its own coordinates except on ``axis``, so the coordinate tuples stacked on
    a last axis make a ScatterND of the same updates."""
    reduction = _reduction(ctx, node)
    if reduction in ("none", "add"):
        ctx.decline(f"ScatterElements with reduction {reduction!r} is scatter / scatter_add")
    x, idx, upd = node.inputs[0], node.inputs[1], node.inputs[2]
    shape = ctx.type(idx).shape
    rank = len(shape)
    if any(isinstance(d, Dim) for d in shape):
        ctx.unsupported(f"ScatterElements with reduction {reduction!r} and indices of symbolic "
                        f"shape {[str(d) for d in shape]}")
    axis = node.attr("axis", 0) % rank
    n = ctx.type(x).shape[axis]
    if isinstance(n, Dim):
        ctx.unsupported(f"ScatterElements with reduction {reduction!r} on the symbolic axis {n}")
    i64 = ctx.emit("cast", [idx], dtype=DType.I64) if ctx.type(idx).dtype != DType.I64 else idx
    own = ctx.emit("where", [ctx.emit("less", [i64, np.array(0, np.int64)]),
                             ctx.emit("add", [i64, np.array(n, np.int64)]), i64])
    grid = np.indices(shape, dtype=np.int64)
    cols = [own if d == axis else grid[d] for d in range(rank)]
    coords = ctx.emit("stack", cols, axis=rank)
    return [ctx.emit("scatter_nd", [x, coords, upd], reduction=reduction)]


def _import_scatter(ctx, node):
    """Scatter (opsets 9-10) is ScatterElements without a reduction."""
    from .onnx_shape_more import _import_scatter_elements

    return _import_scatter_elements(ctx, node)


ONNX = {
    "scatter_nd": OnnxSpec(export=_export_scatter_nd, imports={
        "ScatterND": _import_scatter_nd, "ScatterElements": _import_scatter_elements_reduce,
        "Scatter": _import_scatter}),
}
