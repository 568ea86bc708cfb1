"""ONNX mapping of det (``ONNX = {op_name: OnnxSpec}``, merged by plugin.py): Det both ways
(opset 11+)."""
from __future__ import annotations

from onemodel.registry import OnnxSpec


def _export(ctx, node):
    if ctx.opset < 11:
        ctx.unsupported(node, f"Det needs opset 11 (exporting at {ctx.opset})")
    ctx.make_node("Det", ctx.inputs(node), ctx.outputs(node))


def _import(ctx, node):
    if not ctx.type(node.inputs[0]).dtype.is_float:
        ctx.unsupported(f"Det of a {ctx.type(node.inputs[0]).dtype.name.lower()} tensor")
    return [ctx.emit("det", [node.inputs[0]])]


ONNX = {"det": OnnxSpec(export=_export, imports={"Det": _import})}
