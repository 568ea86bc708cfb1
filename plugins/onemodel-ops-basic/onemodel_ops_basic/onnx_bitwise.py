"""ONNX mappings of bitwise.py (``ONNX = {op_name: OnnxSpec}``, merged by plugin.py): BitwiseAnd,
BitwiseOr, BitwiseXor, BitwiseNot (opset 18) both ways. ONNX's bitwise ops take integers of one
dtype, so export casts both inputs to the result's dtype; bools export as And / Or / Xor / Not."""
from __future__ import annotations

from onemodel.core import DType
from onemodel.registry import OnnxSpec

_LOGICAL = {"BitwiseAnd": "And", "BitwiseOr": "Or", "BitwiseXor": "Xor", "BitwiseNot": "Not"}


def _export(onnx_type: str):
    def export(ctx, node):
        out = ctx.output_types(node)[0].dtype
        ins = [ctx.cast(i, t.dtype, out) for i, t in zip(ctx.inputs(node), ctx.input_types(node))]
        if out == DType.BOOL:
            ctx.make_node(_LOGICAL[onnx_type], ins, ctx.outputs(node))
            return
        if ctx.opset < 18:
            ctx.unsupported(node, f"{onnx_type} needs opset 18 (exporting at {ctx.opset})")
        ctx.make_node(onnx_type, ins, ctx.outputs(node))
    return export


def _import(op: str):
    def rule(ctx, node):
        return [ctx.emit(op, [i for i in node.inputs if i])]
    return rule


ONNX = {
    "bitwise_and": OnnxSpec(export=_export("BitwiseAnd"),
                            imports={"BitwiseAnd": _import("bitwise_and")}),
    "bitwise_or": OnnxSpec(export=_export("BitwiseOr"),
                           imports={"BitwiseOr": _import("bitwise_or")}),
    "bitwise_xor": OnnxSpec(export=_export("BitwiseXor"),
                            imports={"BitwiseXor": _import("bitwise_xor")}),
    "bitwise_not": OnnxSpec(export=_export("BitwiseNot"),
                            imports={"BitwiseNot": _import("bitwise_not")}),
}
