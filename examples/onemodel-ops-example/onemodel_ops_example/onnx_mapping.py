"""How the example ops map to ONNX (standard domain only).

* ``rms_norm_last`` exports as ``RMSNormalization`` where the opset has it (23+), else through
  its record's decomposition (``ctx.decompose``: ``Mul, ReduceMean, Add, Sqrt, Div``).
  ``RMSNormalization`` imports as onemodel-ops-nn's ``rms_norm`` (one import rule per ONNX op).
* ``swish`` exports as ``Swish`` (opset 24+), else ``x * Sigmoid(beta * x)``; the package's pass
  (``passes.py``) folds that pattern back into one ``swish`` node in optimised sessions. A
  float16 ``Swish`` imports as a float32 ``swish`` between casts (rounded once).
"""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.registry import OnnxSpec


def export_rms_norm(ctx, node):
    x, weight = (ctx.inputs(node) + [""])[:2]
    (y,) = ctx.outputs(node)
    xt = ctx.input_types(node)[0]
    eps = float(node.params.get("eps", 1e-6))
    if ctx.opset >= 23:
        scale = weight or ctx.const(np.ones(1, dtype=xt.dtype.numpy), hint="rms_scale")
        if not weight:  # RMSNormalization needs a scale; broadcast ones over the last axis
            scale = ctx.make_node("Expand", [scale, ctx.shape([xt.shape[-1]])], name="rms_scale")
        ctx.make_node("RMSNormalization", [x, scale], [y], axis=-1, epsilon=eps)
        return
    ctx.decompose(node)  # the record's decomposition, each part lowered by its own record


def export_swish(ctx, node):
    (x,) = ctx.inputs(node)
    (y,) = ctx.outputs(node)
    xt = ctx.input_types(node)[0]
    beta = float(node.params.get("beta", 1.0))
    if ctx.opset >= 24:
        ctx.make_node("Swish", [x], [y], alpha=beta)
        return
    scaled = x if beta == 1.0 else ctx.make_node("Mul", [x, ctx.const(beta, xt.dtype)])
    ctx.make_node("Mul", [x, ctx.make_node("Sigmoid", [scaled])], [y])


def import_swish(ctx, node):
    x, beta = node.inputs[0], float(node.attr("alpha", 1.0))
    if ctx.type(x).dtype != DType.F16:
        return [ctx.emit("swish", [x], beta=beta)]
    # float16 is computed in float32 and rounded once, as onnx's expected outputs are: a session
    # fusing float16 pointwise ops would otherwise round the sigmoid and the product apart
    y = ctx.emit("swish", [ctx.emit("cast", [x], dtype=DType.F32)], beta=beta)
    return [ctx.emit("cast", [y], dtype=DType.F16)]


ONNX = {
    "rms_norm_last": OnnxSpec(export=export_rms_norm,
                              doc="RMSNormalization (opset 23+) or its decomposition"),
    "swish": OnnxSpec(export=export_swish, imports={"Swish": import_swish},
                      doc="Swish (opset 24+) or x * Sigmoid(beta * x)"),
}
