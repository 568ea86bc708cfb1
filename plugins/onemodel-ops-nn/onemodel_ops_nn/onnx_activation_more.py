"""ONNX mappings of activation_more (``ONNX = {op_name: OnnxSpec}``, merged into onnx_mapping's
table by plugin.py).

ONNX's own ops where they exist (Softplus, Elu, Selu, LeakyRelu, PRelu, Softsign, Mish at opset
18+, Clip for hardtanh / relu6); silu, log_sigmoid and glu are compositions (Sigmoid, Softplus,
Split). Softplus has no beta or threshold in ONNX: they become Mul / Div / Where around it, and an
imported Softplus is softplus with beta 1 and no threshold (ln(exp(x) + 1) everywhere).
"""
from __future__ import annotations

import math

import numpy as np

from onemodel.formats.onnx_lowering import scalar_const
from onemodel.registry import OnnxSpec

from .activation_more import SELU_ALPHA, SELU_SCALE


def _x(ctx, node):
    """Input 0 cast to the output dtype, that dtype and a constant maker."""
    x = ctx.inputs(node)[0]
    dt = ctx.output_types(node)[0].dtype
    return ctx.cast(x, ctx.input_types(node)[0].dtype, dt), dt, lambda v: scalar_const(ctx, v, dt)


def _export_softplus(ctx, node):
    x, _dt, c = _x(ctx, node)
    beta, threshold = float(node.params["beta"]), float(node.params["threshold"])
    z = x if beta == 1.0 else ctx.make_node("Mul", [x, c(beta)], name="softplus")
    if math.isinf(threshold) and threshold > 0:
        if beta == 1.0:
            ctx.make_node("Softplus", [z], ctx.outputs(node))
            return
        ctx.make_node("Div", [ctx.make_node("Softplus", [z], name="softplus"), c(beta)],
                      ctx.outputs(node))
        return
    soft = ctx.make_node("Softplus", [z], name="softplus")
    if beta != 1.0:
        soft = ctx.make_node("Div", [soft, c(beta)], name="softplus")
    above = ctx.make_node("Greater", [z, c(threshold)], name="softplus")
    ctx.make_node("Where", [above, x, soft], ctx.outputs(node))


def _import_softplus(ctx, node):
    return [ctx.emit("softplus", [node.inputs[0]], beta=1.0, threshold=math.inf)]


def _export_silu(ctx, node):
    x, _dt, _c = _x(ctx, node)
    ctx.make_node("Mul", [x, ctx.make_node("Sigmoid", [x], name="silu")], ctx.outputs(node))


def _export_mish(ctx, node):
    x, _dt, _c = _x(ctx, node)
    if ctx.opset >= 18:
        ctx.make_node("Mish", [x], ctx.outputs(node))
        return
    t = ctx.make_node("Tanh", [ctx.make_node("Softplus", [x], name="mish")], name="mish")
    ctx.make_node("Mul", [x, t], ctx.outputs(node))


def _export_log_sigmoid(ctx, node):
    x, _dt, _c = _x(ctx, node)
    sp = ctx.make_node("Softplus", [ctx.make_node("Neg", [x], name="log_sigmoid")],
                       name="log_sigmoid")
    ctx.make_node("Neg", [sp], ctx.outputs(node))


def _export_simple(onnx_type, **fixed):
    def export(ctx, node):
        x, _dt, _c = _x(ctx, node)
        attrs = {k: (float(node.params[v]) if isinstance(v, str) else v)
                 for k, v in fixed.items()}
        ctx.make_node(onnx_type, [x], ctx.outputs(node), **attrs)
    return export


def _import_simple(op, **attrs):
    """``op`` with params read from the node's attributes (name -> (attribute, default))."""
    def rule(ctx, node):
        params = {p: float(node.attr(a, d)) for p, (a, d) in attrs.items()}
        return [ctx.emit(op, [node.inputs[0]], **params)]
    return rule


def _import_selu(ctx, node):
    alpha = float(node.attr("alpha", 1.67326319217681884765625))
    gamma = float(node.attr("gamma", 1.05070102214813232421875))
    x = node.inputs[0]
    if math.isclose(alpha, SELU_ALPHA, rel_tol=1e-6) and math.isclose(gamma, SELU_SCALE,
                                                                       rel_tol=1e-6):
        return [ctx.emit("selu", [x])]
    dt = ctx.type(x).dtype
    return [ctx.emit("mul", [ctx.emit("elu", [x], alpha=alpha), np.array(gamma, dt.numpy)])]


def _export_clip(lo_param, hi_param, lo_default=None, hi_default=None):
    def export(ctx, node):
        x, dt, _c = _x(ctx, node)
        lo = node.params.get(lo_param, lo_default) if lo_param else lo_default
        hi = node.params.get(hi_param, hi_default) if hi_param else hi_default
        if not dt.is_float:
            lo, hi = int(lo), int(hi)
        ctx.make_node("Clip", [x, scalar_const(ctx, lo, dt), scalar_const(ctx, hi, dt)],
                      ctx.outputs(node))
    return export


def _export_prelu(ctx, node):
    x, w = ctx.inputs(node)
    tx, tw = ctx.input_types(node)
    rank = len(tx.shape)
    n = tw.shape[0] if tw.shape else 1
    if rank >= 2 and not (isinstance(n, int) and n == 1):  # ONNX broadcasts from the right
        w = ctx.make_node("Reshape", [w, ctx.ints([-1] + [1] * (rank - 2))], name="prelu_slope")
    ctx.make_node("PRelu", [x, w], ctx.outputs(node))


def _import_prelu(ctx, node):
    x, slope = node.inputs[0], node.inputs[1]
    tx, ts = ctx.type(x), ctx.type(slope)
    rank, srank = len(tx.shape), len(ts.shape)
    dims = [1] * (rank - srank) + list(ts.shape)
    if all(isinstance(d, int) and d == 1 for d in dims):
        return [ctx.emit("prelu", [x, ctx.emit("reshape", [slope], shape=(1,))])]
    others = [d for k, d in enumerate(dims) if k != 1]
    if ts.dtype == tx.dtype and rank >= 2 and srank <= rank and all(
            isinstance(d, int) and d == 1 for d in others):
        return [ctx.emit("prelu", [x, ctx.emit("reshape", [slope], shape=(dims[1],))])]
    # any other broadcastable slope: the definition itself
    zero = np.array(0, tx.dtype.numpy)
    return [ctx.emit("where", [ctx.emit("greater", [x, zero]), x, ctx.emit("mul", [x, slope])])]


def _export_glu(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    axis = node.params["axis"] % len(t.shape)
    half = ctx.output_types(node)[0].shape[axis]
    a, b = ctx.make_node("Split", [x, ctx.shape([half, half])], name="glu", n_outputs=2,
                         axis=axis)
    ctx.make_node("Mul", [a, ctx.make_node("Sigmoid", [b], name="glu")], ctx.outputs(node))


ONNX = {
    "softplus": OnnxSpec(export=_export_softplus, imports={"Softplus": _import_softplus}),
    "silu": OnnxSpec(export=_export_silu, doc="x * Sigmoid(x)"),
    "mish": OnnxSpec(export=_export_mish,
                     imports={"Mish": lambda ctx, node: [ctx.emit("mish", [node.inputs[0]])]}),
    "log_sigmoid": OnnxSpec(export=_export_log_sigmoid, doc="-Softplus(-x)"),
    "softsign": OnnxSpec(export=_export_simple("Softsign"),
                         imports={"Softsign": _import_simple("softsign")}),
    "elu": OnnxSpec(export=_export_simple("Elu", alpha="alpha"),
                    imports={"Elu": _import_simple("elu", alpha=("alpha", 1.0))}),
    "selu": OnnxSpec(export=_export_simple("Selu", alpha=SELU_ALPHA, gamma=SELU_SCALE),
                     imports={"Selu": _import_selu}),
    "leaky_relu": OnnxSpec(export=_export_simple("LeakyRelu", alpha="negative_slope"),
                           imports={"LeakyRelu": _import_simple(
                               "leaky_relu", negative_slope=("alpha", 0.01))}),
    "hardtanh": OnnxSpec(export=_export_clip("min_val", "max_val"), doc="Clip(min_val, max_val)"),
    "relu6": OnnxSpec(export=_export_clip(None, None, 0.0, 6.0), doc="Clip(0, 6)"),
    "prelu": OnnxSpec(export=_export_prelu, imports={"PRelu": _import_prelu}),
    "glu": OnnxSpec(export=_export_glu, doc="Split in halves, then a * Sigmoid(b)"),
}
