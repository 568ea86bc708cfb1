"""Fused op records the nn passes create: ``fused_linear`` and ``fused_conv2d`` (an activation
applied in the same buffer right after the product).

Ordinary `OpDef`s, so every backend runs them: the kernels compose the registered ops' own
kernels (the reference semantics); a backend may register faster `KernelDef`s. No gradient
(``vjp=None``): fusion happens after tracing. Exporting to ONNX lowers each back to the standard
ops it stands for, so a file never mentions a fused op.
"""
from __future__ import annotations

from onemodel.core.dispatch import infer as _infer
from onemodel.registry import OnnxSpec, OpCost, OpDef, OpTraits, Param, Sample, get_op

from .costs import conv2d_cost, linear_cost

#: activation names a fused op takes: op name, or gelu with its tanh approximation
ACTIVATIONS = ("relu", "sigmoid", "tanh", "gelu", "gelu_tanh")


def activation_op(name: str) -> tuple[str, dict]:
    """The op and params an activation name stands for."""
    if name == "gelu_tanh":
        return "gelu", {"approximate": "tanh"}
    if name == "gelu":
        return "gelu", {"approximate": "none"}
    return name, {}


def activation_name(node) -> str | None:
    """The activation name of a node that is one (for fuse_activation), else None."""
    if node.op in ("relu", "sigmoid", "tanh") and len(node.inputs) == 1:
        return node.op
    if node.op == "gelu":
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(node.params.get("approximate", "none"))
    return None


def _activate(y, activation):
    op, params = activation_op(activation)
    return get_op(op).kernel(y, **params)


def _then_activation(base: str, params_of):
    def export(ctx, node):
        (mid,) = ctx.lower(base, ctx.inputs(node), ctx.input_types(node),
                           params_of(node.params))
        op, extra = activation_op(node.params["activation"])
        ctx.lower(op, [mid], [ctx.output_types(node)[0]], extra, outputs=ctx.outputs(node))

    return export


def _plus_activation(cost):
    def total(ins, outs, params):
        c = cost(ins, outs, params)
        return OpCost(flops=c.flops, bytes=c.bytes + OpCost.passes(outs[0], 1).bytes,
                      packs=c.packs)
    return total


# -- fused_linear ------------------------------------------------------------------------------
def _fused_linear_samples(rng):
    for act in ACTIVATIONS:
        yield Sample(args=(rng.standard_normal((3, 4)), rng.standard_normal((5, 4)),
                           rng.standard_normal(5)), params={"activation": act}, grad=False,
                     name=act)
    yield Sample(args=(rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), None),
                 params={"activation": "relu"}, grad=False, name="nobias")


fused_linear = OpDef(
    name="fused_linear", inputs=("x", "weight", "bias?"),
    params={"activation": Param(kind="str", choices=ACTIVATIONS)},
    kernel=lambda x, w, b=None, activation="relu": _activate(get_op("linear").kernel(x, w, b),
                                                             activation),
    infer=lambda x, w, b=None, activation="relu": _infer(get_op("linear"), [x, w, b], {}),
    vjp=None, samples=_fused_linear_samples,
    onnx=OnnxSpec(export=_then_activation("linear", lambda p: {}),
                  doc="Gemm/MatMul, then the activation"),
    traits=OpTraits(batch="rows", cost=_plus_activation(linear_cost)),
    doc="activation(linear(x, weight, bias)), made by the fuse_activation pass.")


# -- fused_conv2d ------------------------------------------------------------------------------
_CONV_PARAMS = ("stride", "padding", "dilation", "groups")


def _conv_params(p):
    return {k: p[k] for k in _CONV_PARAMS if k in p}


def _fused_conv2d(x, weight, bias=None, activation="relu", **conv):
    return _activate(get_op("conv2d").kernel(x, weight, bias, **conv), activation)


def _fused_conv2d_infer(x, w, b=None, activation="relu", **conv):
    return _infer(get_op("conv2d"), [x, w, b], conv)


def _fused_conv2d_samples(rng):
    yield Sample(args=(rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3)),
                       rng.standard_normal(4)),
                 params={"padding": 1, "activation": "relu"}, grad=False, name="relu")
    yield Sample(args=(rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3)),
                       None), params={"stride": 2, "activation": "tanh"}, grad=False,
                 name="tanh")


fused_conv2d = OpDef(
    name="fused_conv2d", inputs=("x", "weight", "bias?"),
    params={"stride": Param(kind="ints", default=1), "padding": Param(kind="ints", default=0),
            "dilation": Param(kind="ints", default=1), "groups": Param(kind="int", default=1),
            "activation": Param(kind="str", choices=ACTIVATIONS)},
    kernel=_fused_conv2d, infer=_fused_conv2d_infer, vjp=None, samples=_fused_conv2d_samples,
    onnx=OnnxSpec(export=_then_activation("conv2d", _conv_params), doc="Conv, then the activation"),
    traits=OpTraits(batch="rows", cost=_plus_activation(conv2d_cost)),
    doc="activation(conv2d(x, weight, bias, ...)), made by the fuse_activation pass.")

OPS = (fused_linear, fused_conv2d)
