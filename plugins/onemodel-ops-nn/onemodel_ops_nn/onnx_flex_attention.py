"""ONNX's FlexAttention (domain ``ai.onnx.preview``, version 1) imported as the OneModel ops it
is made of.

In the order onnx's reference computes it: Q and K each scaled by ``sqrt(scale)`` (the root taken
in float32, then cast to the input type), ``matmul`` in the input type, the scores cast to the
softmax precision (float32 for float16 inputs unless ``softmax_precision`` says otherwise), the
``score_mod`` graph, ``softmax``, the ``prob_mod`` graph, ``matmul`` with V in that precision and
a cast back to V's type. Grouped heads repeat K and V (``repeat_interleave``). The modifier
graphs are converted in place (``inline_call``), so their ``Shape``/``Range`` index arithmetic
stays symbolic. Claimed by scaled_dot_product_attention's record (plugin.py)."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.core.symbolic import Dim
from onemodel.core.types import same_dim
from onemodel.formats.onnx_api import inline_call

#: softmax_precision codes (ONNX element types) OneModel computes in (bfloat16, 16, it has not)
_PRECISIONS = {1: DType.F32, 10: DType.F16, 11: DType.F64}
_DTYPES = (DType.F16, DType.F32, DType.F64)


def _static(ctx, d, what: str) -> int:
    if isinstance(d, Dim):
        ctx.unsupported(f"FlexAttention needs a fixed {what}, got the symbolic size {d}")
    return int(d)


def _modify(ctx, node, attr: str, x, dtype: DType):
    """``x`` through the graph attribute ``attr`` (if given), in ``dtype`` and ``x``'s shape."""
    graph = node.attr(attr)
    if graph is None:
        return x
    outs = inline_call(ctx, graph, [x], attr)
    if len(outs) != 1 or outs[0] is None:
        ctx.unsupported(f"{attr} must produce exactly 1 output, it has {len(outs)}")
    y = outs[0]
    want, got = ctx.type(x), ctx.type(y)
    if len(got.shape) != len(want.shape) or not all(
            same_dim(a, b) for a, b in zip(got.shape, want.shape)):
        ctx.unsupported(f"{attr} must keep its input's shape {want.shape}, it gives {got.shape}")
    if got.dtype != dtype:
        y = ctx.emit("cast", [y], dtype=dtype)
    return y


def import_flex_attention(ctx, node):
    q, k, v = node.inputs[:3]
    qt, kt, vt = ctx.type(q), ctx.type(k), ctx.type(v)
    dtype = qt.dtype
    if dtype not in _DTYPES or kt.dtype != dtype or vt.dtype != dtype:
        ctx.unsupported(f"Q, K and V must share one of float16, float32, float64, got "
                        f"{qt.dtype}, {kt.dtype}, {vt.dtype}")
    if len(qt.shape) != 4 or len(kt.shape) != 4 or len(vt.shape) != 4:
        ctx.unsupported(f"Q, K and V must be rank 4, got {qt}, {kt}, {vt}")
    precision = node.attr("softmax_precision")
    if precision is None:
        compute = DType.F32 if dtype == DType.F16 else dtype
    elif int(precision) in _PRECISIONS:
        compute = _PRECISIONS[int(precision)]
    else:
        ctx.unsupported(f"softmax_precision {precision} (supported: "
                        f"{', '.join(f'{c} ({d.name})' for c, d in _PRECISIONS.items())})")
    hq = _static(ctx, qt.shape[1], "number of query heads (Q's axis 1)")
    hkv = _static(ctx, kt.shape[1], "number of key heads (K's axis 1)")
    if hq != hkv:
        if hkv <= 0 or hq % hkv:
            ctx.unsupported(f"{hq} query heads are not a multiple of {hkv} key/value heads")
        k = ctx.emit("repeat_interleave", [k], repeats=hq // hkv, axis=1)
        v = ctx.emit("repeat_interleave", [v], repeats=hq // hkv, axis=1)
    scale = node.attr("scale")
    if scale is None:
        scale = 1.0 / np.sqrt(_static(ctx, qt.shape[3], "head size to compute the default "
                                                        "scale"))
    root = np.array(np.sqrt(np.float32(scale)), dtype=dtype.numpy)
    k_t = ctx.emit("permute", [ctx.emit("mul", [k, root])], axes=(0, 1, 3, 2))
    scores = ctx.emit("matmul", [ctx.emit("mul", [q, root]), k_t])
    if compute != dtype:
        scores = ctx.emit("cast", [scores], dtype=compute)
    scores = _modify(ctx, node, "score_mod", scores, compute)
    probs = _modify(ctx, node, "prob_mod", ctx.emit("softmax", [scores], axis=-1), compute)
    if compute != dtype:
        v = ctx.emit("cast", [v], dtype=compute)
    y = ctx.emit("matmul", [probs, v])
    if compute != dtype:
        y = ctx.emit("cast", [y], dtype=dtype)
    return [y]


IMPORTS = {"ai.onnx.preview.FlexAttention": import_flex_attention}
