"""How the example ops map to ONNX (standard domain only).

* ``rms_norm`` exports as ``RMSNormalization`` where the opset has it (23+), else decomposed into
  ``Mul, ReduceMean, Add, Sqrt, Div`` (which imports back as those primitives; same numbers).
* ``swish`` exports as ``Swish`` (opset 24+), else ``x * Sigmoid(beta * x)``; the package's pass
  (``passes.py``) folds that pattern back into one ``swish`` node in optimised sessions.
"""
from __future__ import annotations

import numpy as np

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
    sq = ctx.make_node("Mul", [x, x], name="rms_sq")
    axes = ctx.ints([-1])
    if ctx.opset >= 18:
        mean = ctx.make_node("ReduceMean", [sq, axes], name="rms_mean", keepdims=1)
    else:
        mean = ctx.make_node("ReduceMean", [sq], name="rms_mean", axes=[-1], keepdims=1)
    denom = ctx.make_node("Sqrt", [ctx.make_node("Add", [mean, ctx.const(eps, xt.dtype)])])
    if weight:
        normed = ctx.make_node("Div", [x, denom], name="rms_normed")
        ctx.make_node("Mul", [normed, weight], [y])
    else:
        ctx.make_node("Div", [x, denom], [y])


def import_rms_norm(ctx, node):
    x, scale = node.inputs[0], node.inputs[1]
    axis = node.attr("axis", -1)
    if axis not in (-1, ctx.rank(x) - 1):
        ctx.unsupported("rms_norm normalises over the last axis only")
    return [ctx.emit("rms_norm", [x, scale], eps=float(node.attr("epsilon", 1e-5)))]


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
    return [ctx.emit("swish", [node.inputs[0]], beta=float(node.attr("alpha", 1.0)))]


ONNX = {
    "rms_norm": OnnxSpec(export=export_rms_norm, imports={"RMSNormalization": import_rms_norm},
                         doc="RMSNormalization (opset 23+) or Mul/ReduceMean/Add/Sqrt/Div"),
    "swish": OnnxSpec(export=export_swish, imports={"Swish": import_swish},
                      doc="Swish (opset 24+) or x * Sigmoid(beta * x)"),
}
