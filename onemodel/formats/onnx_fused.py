"""ONNX lowerings of the fused op records the passes create (onemodel/passes/fused_ops.py).

A session may run a graph optimized with ``optimization="all"``; exporting such a graph lowers
each fused node back to the standard ops it stands for, through those ops' own lowerings
(``ctx.lower``), so the ONNX file never mentions a fused op. `with_onnx(records)` returns the
records with their ``onnx`` slot filled (fused_ops.py calls it on ``FUSED_OPS``).
"""
from __future__ import annotations

import attrs

from ..registry.records import OnnxSpec


def _activation(name: str):
    if name == "gelu":
        return "gelu", {"approximate": "none"}
    if name == "gelu_tanh":
        return "gelu", {"approximate": "tanh"}
    return name, {}


def _then_activation(base: str, params_of):
    def export(ctx, node):
        ins = ctx.inputs(node)
        types = ctx.input_types(node)
        (mid,) = ctx.lower(base, ins, types, params_of(node.params))
        op, extra = _activation(node.params["activation"])
        mid_t = ctx.output_types(node)[0]
        ctx.lower(op, [mid], [mid_t], extra, outputs=ctx.outputs(node))

    return export


def _export_matmul_t(ctx, node):
    a, b = ctx.inputs(node)
    ta, tb = ctx.input_types(node)
    outs = []
    for name, t, flag in ((a, ta, node.params.get("transpose_a")),
                          (b, tb, node.params.get("transpose_b"))):
        if flag:
            perm = list(range(len(t.shape)))
            perm[-1], perm[-2] = perm[-2], perm[-1]
            name = ctx.make_node("Transpose", [name], name="transpose", perm=perm)
            shape = list(t.shape)
            shape[-1], shape[-2] = shape[-2], shape[-1]
            t = attrs.evolve(t, shape=tuple(shape))
        outs.append((name, t))
    ctx.lower("matmul", [n for n, _ in outs], [t for _, t in outs], outputs=ctx.outputs(node))


def _export_chain(ctx, node):
    ins = ctx.inputs(node)
    types = ctx.input_types(node)
    steps = node.params["steps"]
    acc = acc_t = None
    for k, (op, args, params) in enumerate(steps):
        names = [acc if j == -1 else ins[j] for j in args]
        ts = [acc_t if j == -1 else types[j] for j in args]
        last = k == len(steps) - 1
        (acc,) = ctx.lower(op, names, ts, dict(params),
                           outputs=ctx.outputs(node) if last else None)
        acc_t = ctx.lowered_types[0]


def _conv_params(p):
    return {k: p[k] for k in ("stride", "padding", "dilation", "groups") if k in p}


LOWERINGS = {
    "fused_linear": OnnxSpec(export=_then_activation("linear", lambda p: {})),
    "fused_conv2d": OnnxSpec(export=_then_activation("conv2d", _conv_params)),
    "matmul_t": OnnxSpec(export=_export_matmul_t),
    "elementwise_chain": OnnxSpec(export=_export_chain),
}


def with_onnx(records):
    """The fused records with their ONNX lowering attached."""
    return tuple(attrs.evolve(r, onnx=LOWERINGS[r.name]) if r.name in LOWERINGS else r
                 for r in records)
