"""isnan and isinf (torch.isnan / torch.isinf, ONNX IsNaN / IsInf): bool tensors of the input's
shape. Exporters write them where masking code guards against NaN (transformers' attention
masks), so imported language models need them."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType, TensorType
from onemodel.errors import OpError
from onemodel.registry import OnnxSpec, OpDef, Param, Sample


def _infer(op):
    def infer(x, **params):
        if not (x.dtype.is_float or x.dtype.is_int or x.dtype == DType.BOOL):
            raise OpError(f"ops.{op}: expects a numeric tensor, got {x}")
        return TensorType(DType.BOOL, x.shape)
    return infer


def _isinf(x, positive, negative):
    if positive and negative:
        return np.isinf(x)
    if positive:
        return np.isposinf(x)
    if negative:
        return np.isneginf(x)
    return np.zeros(x.shape, bool)


def _samples(rng):
    x = rng.standard_normal((3, 4))
    x[0, 1], x[1, 2], x[2, 3] = np.nan, np.inf, -np.inf
    yield Sample(args=(x,), grad=False, name="special")
    yield Sample(args=(rng.integers(-3, 3, (5,)),), grad=False, name="ints")


def _inf_samples(rng):
    yield from _samples(rng)
    x = np.array([np.inf, -np.inf, np.nan, 1.0])
    yield Sample(args=(x,), params={"negative": False}, grad=False, name="positive_only")
    yield Sample(args=(x,), params={"positive": False}, grad=False, name="negative_only")


def _export(onnx_type):
    def export(ctx, node):
        attrs = {}
        if onnx_type == "IsInf":
            attrs = {"detect_positive": int(node.params["positive"]),
                     "detect_negative": int(node.params["negative"])}
        x = ctx.inputs(node)[0]
        t = ctx.input_types(node)[0]
        if not t.dtype.is_float:  # ONNX takes floats only; an integer is never NaN or inf
            x = ctx.cast(x, t.dtype, DType.F32)
        ctx.make_node(onnx_type, [x], ctx.outputs(node), **attrs)
    return export


def _import_isnan(ctx, node):
    return [ctx.emit("isnan", [node.inputs[0]])]


def _import_isinf(ctx, node):
    return [ctx.emit("isinf", [node.inputs[0]],
                     positive=bool(node.attr("detect_positive", 1)),
                     negative=bool(node.attr("detect_negative", 1)))]


isnan = OpDef(
    name="isnan", inputs=("x",), kernel=lambda x: np.isnan(x) if x.dtype.kind == "f"
    else np.zeros(x.shape, bool), infer=_infer("isnan"), vjp=None, samples=_samples,
    methods=("isnan",), onnx=OnnxSpec(export=_export("IsNaN"), imports={"IsNaN": _import_isnan}),
    doc="True where x is NaN (torch.isnan).",
)

isinf = OpDef(
    name="isinf", inputs=("x",),
    params={"positive": Param(kind="bool", default=True, doc="detect +inf"),
            "negative": Param(kind="bool", default=True, doc="detect -inf")},
    kernel=_isinf, infer=_infer("isinf"), vjp=None, samples=_inf_samples, methods=("isinf",),
    onnx=OnnxSpec(export=_export("IsInf"), imports={"IsInf": _import_isinf}),
    doc="True where x is infinite (torch.isinf); ``positive`` / ``negative`` pick the signs "
        "(ONNX IsInf's detect_positive / detect_negative).",
)

OPS = (isnan, isinf)
