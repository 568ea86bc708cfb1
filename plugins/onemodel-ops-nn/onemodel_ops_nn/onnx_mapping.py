"""ONNX mappings of the nn ops: ``ONNX = {op_name: OnnxSpec(export=..., imports=...)}``.

``export(ctx, node)`` lowers one OneModel node (ctx API: ``onemodel.formats.onnx_export``);
``imports[onnx_type](ctx, node)`` turns one ONNX node into OneModel nodes (ctx API:
``onemodel.formats.onnx_import``; plugins import from ``onemodel.formats.onnx_api``). plugin.py
attaches each entry to its op record with ``attach_onnx``, which refuses an unknown op name.
Import rules may emit basic ops by name (``transpose``, ``reshape``...) through ``ctx.emit``.
"""
from __future__ import annotations

import math

import numpy as np

from onemodel.core import DType, Dim
from onemodel.core.types import numel
from onemodel.formats.onnx_lowering import scalar_const
from onemodel.registry import OnnxSpec

from .onnx_conv_same import cut_to_same, same_pads


def _pair(v):
    if isinstance(v, (tuple, list)):
        return tuple(int(x) for x in v)
    return (int(v), int(v))


def _cast_all(ctx, node, dtype):
    return [ctx.cast(n, t.dtype, dtype) if t is not None else n
            for n, t in zip(ctx.inputs(node), ctx.input_types(node))]


def conv_inputs(ctx, node) -> list:
    """A convolution's inputs cast to its output dtype, an absent trailing bias left out."""
    ins = _cast_all(ctx, node, ctx.output_types(node)[0].dtype)
    while ins and not ins[-1]:
        ins.pop()
    return ins


# -- linear ---------------------------------------------------------------------------------------
def _export_linear(ctx, node):
    out = ctx.output_types(node)[0]
    x, w, b = (_cast_all(ctx, node, out.dtype) + [""])[:3]
    xt = ctx.input_types(node)[0]
    if len(xt.shape) == 2:
        ctx.make_node("Gemm", [x, w] + ([b] if b else []), ctx.outputs(node), transB=1)
        return
    wt = ctx.make_node("Transpose", [w], name="weight_t", perm=[1, 0])
    if b:
        y = ctx.make_node("MatMul", [x, wt], name="matmul")
        ctx.make_node("Add", [y, b], ctx.outputs(node))
    else:
        ctx.make_node("MatMul", [x, wt], ctx.outputs(node))


def _import_gemm(ctx, node):
    a, b = node.inputs[0], node.inputs[1]
    c = node.input(2)
    alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
    if node.attr("transA", 0):
        a = ctx.emit("transpose", [a], axis0=0, axis1=1)
    if not node.attr("transB", 0):
        b = ctx.emit("transpose", [b], axis0=0, axis1=1)  # folds when b is a constant
    bias = None
    if c and beta != 0:
        ct = ctx.type(c)
        out_n = ctx.type(b).shape[0]
        if len(ct.shape) == 1 and beta == 1.0 and (isinstance(ct.shape[0], Dim)
                                                    or ct.shape[0] != 1 or out_n == 1):
            bias = c
    y = ctx.emit("linear", [a, b, bias] if bias is not None else [a, b])
    if alpha != 1.0:
        y = ctx.emit("mul", [y, np.array(alpha, dtype=ctx.type(y).dtype.numpy)])
    if c and beta != 0 and bias is None:
        cc = c if beta == 1.0 else ctx.emit("mul", [c, np.array(beta, ctx.type(c).dtype.numpy)])
        y = ctx.emit("add", [y, cc])
    return [y]


# -- conv / pool ----------------------------------------------------------------------------------
def _export_conv(ctx, node):
    ins = conv_inputs(ctx, node)
    wt = ctx.input_types(node)[1]
    p = node.params
    ph, pw = _pair(p["padding"])
    ctx.make_node("Conv", ins, ctx.outputs(node),
                  kernel_shape=[int(d) for d in wt.shape[2:]], strides=list(_pair(p["stride"])),
                  pads=[ph, pw, ph, pw], dilations=list(_pair(p["dilation"])),
                  group=int(p["groups"]))


def asymmetric_excess(begin, end) -> tuple:
    """The widths past the symmetric part of (begin, end) pads, in torch's pad order (last
    axis first), for a ``pad`` before an op that takes one width per axis."""
    out = []
    for b, e in reversed(list(zip(begin, end))):
        m = min(b, e)
        out += [b - m, e - m]
    return tuple(out)


def _auto_pads_full(ctx, node, spatial, kernel, strides, dilations, cut=()):
    """(begin, end) pads per spatial axis from ``pads`` or ``auto_pad``; ``cut`` (a list) takes
    the axes whose SAME pads depend on a symbolic size (``onnx_conv_same``), padded 0 here,
    where the caller can cut them; elsewhere such an axis is refused."""
    mode = node.attr("auto_pad", "NOTSET")
    n = len(kernel)
    if mode in ("NOTSET", ""):
        pads = node.attr("pads") or [0] * (2 * n)
    elif mode == "VALID":
        pads = [0] * (2 * n)
    else:
        pads = [0] * (2 * n)
        for i in range(n):
            size = spatial[i]
            reach = (kernel[i] - 1) * dilations[i] + 1
            if isinstance(size, Dim):
                if strides[i] != 1:  # the total then depends on the size modulo the stride
                    if isinstance(cut, list) and same_pads(mode, size, strides[i], reach):
                        cut.append(i)
                        continue
                    ctx.unsupported(f"auto_pad={mode} with stride {strides[i]} on the symbolic "
                                    f"spatial size {size} (stride 1 is imported, and a conv's "
                                    f"stride up to its kernel's reach)")
                total = reach - 1  # stride 1: the same for every size
            else:
                out = -(-size // strides[i])
                total = max(0, (out - 1) * strides[i] + reach - size)
            lo = total // 2 if mode == "SAME_UPPER" else total - total // 2
            pads[i], pads[i + n] = lo, total - lo
    return list(pads[:n]), list(pads[n:])


def _import_conv(ctx, node):
    return [conv_from(ctx, node, node.inputs[0], node.inputs[1], node.input(2) or None)]


def conv_from(ctx, node, x, w, b):
    """The conv a Conv-like node (Conv, ConvInteger, QLinearConv) computes on ``x`` and ``w``:
    its attributes, asymmetric and ``auto_pad`` padding as a ``pad`` before the conv."""
    xt, wt = ctx.type(x), ctx.type(w)
    if len(xt.shape) not in (3, 4):
        ctx.unsupported(f"a {len(xt.shape) - 2}-D convolution (conv2d and 1-D are supported)")
    n = len(xt.shape) - 2
    kernel = node.attr("kernel_shape") or [int(d) for d in wt.shape[2:]]
    strides = node.attr("strides") or [1] * n
    dilations = node.attr("dilations") or [1] * n
    cut: list[int] = []
    begin, end = _auto_pads_full(ctx, node, xt.shape[2:], kernel, strides, dilations, cut)
    if cut:  # SAME pads that depend on a symbolic size
        reaches = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
        x = cut_to_same(ctx, x, cut, node.attr("auto_pad"), strides, reaches)
    pads = [min(b, e) for b, e in zip(begin, end)]
    if pads != begin or pads != end:  # asymmetric (TensorFlow's SAME): zeros, then the conv
        x = ctx.emit("pad", [x], pad=asymmetric_excess(begin, end))
    group = node.attr("group", 1)
    op = "conv1d" if n == 1 else "conv2d"
    return ctx.emit(op, [x, w, b], stride=tuple(strides), padding=tuple(pads),
                    dilation=tuple(dilations), groups=group)


def _pool_pads(padding):
    """(top, left, bottom, right) from an int, a pair or four ints."""
    if isinstance(padding, (tuple, list)) and len(padding) == 4:
        return [int(v) for v in padding]
    ph, pw = _pair(padding)
    return [ph, pw, ph, pw]


def _ceil_pads(ctx, node, pads, k, s, d, counts_pads):
    """ceil_mode as explicit end padding (ceil_mode=0), or None to write ceil_mode=1: ONNX's
    shape inference does not drop a
    last window that starts in the end padding as PyTorch and ONNX Runtime do, so the padding
    that gives exactly the output size is written instead. Windows only see the input, or the
    padding that counts in an average, so only ``count_include_pad`` with such a window is
    refused."""
    out = ctx.output_types(node)[0].shape[2:]
    spatial = ctx.input_types(node)[0].shape[2:]
    if any(isinstance(v, Dim) for v in (*out, *spatial)):
        return None  # the last window starts inside the input (see pool._out_size): ceil_mode=1
    if all(-(-(n + pads[a] + pads[a + 2] - d[a] * (k[a] - 1) - 1) // s[a]) + 1 == o
           for a, (n, o) in enumerate(zip(spatial, out))):
        return None  # ONNX's own ceil_mode rule gives the same size
    new = list(pads)
    for a in range(2):
        size, o = spatial[a], out[a]
        need = (o - 1) * s[a] + d[a] * (k[a] - 1) + 1 - size - pads[a]
        if counts_pads and need > pads[a + 2]:
            ctx.unsupported(node, "ceil_mode with count_include_pad when a window reaches past "
                                  "the padding")
        new[a + 2] = max(need, 0)
    return new


def _export_pool(onnx_type):
    def export(ctx, node):
        (x,) = ctx.inputs(node)
        p = node.params
        k = _pair(p["kernel_size"])
        s = _pair(p["stride"] if p.get("stride") not in (None, ()) else p["kernel_size"])
        d = _pair(p.get("dilation", 1))
        extra = {}
        if d != (1, 1):
            if onnx_type == "AveragePool" and ctx.opset < 19:
                ctx.unsupported(node, f"a dilated AveragePool needs opset 19 (exporting "
                                      f"{ctx.opset})")
            extra["dilations"] = list(d)
        include = bool(p.get("count_include_pad", True))
        if onnx_type == "AveragePool":
            extra["count_include_pad"] = int(include)
        pads = _pool_pads(p["padding"])
        if p.get("ceil_mode"):
            pads = _ceil_pads(ctx, node, pads, k, s, d, onnx_type == "AveragePool" and include)
            if pads is None:
                pads = _pool_pads(p["padding"])
                extra["ceil_mode"] = 1
        if p.get("return_indices"):
            max_pool_with_indices(ctx, x, ctx.input_types(node)[0], ctx.outputs(node),
                                  kernel_shape=list(k), strides=list(s), pads=pads, **extra)
            return
        ctx.make_node(onnx_type, [x], ctx.outputs(node), kernel_shape=list(k), strides=list(s),
                      pads=pads, **extra)

    return export


def max_pool_with_indices(ctx, x, xt, outputs, **attrs):
    """MaxPool with its optional Indices output, made torch's: ONNX counts into the whole
    flattened (N, C, H, W) input, torch into each (H, W) plane, so the index is taken mod H*W."""
    values, flat = outputs[0], ctx.fresh("flat_indices")
    ctx.make_node("MaxPool", [x], [values, flat], **attrs)
    plane = ctx.shape([numel(tuple(xt.shape[2:]))])
    ctx.make_node("Mod", [flat, plane], [outputs[1]])


def _emit_pool2d(ctx, op, x, k, s, d, begin, end, ceil_mode, params):
    """One 2-D pool node; pads symmetric where they can be, else (top, left, bottom, right)."""
    if begin == end and all(b <= kk // 2 for b, kk in zip(begin, k)):
        pads = tuple(begin)
    else:
        pads = (begin[0], begin[1], end[0], end[1])
    return ctx.emit(op, [x], kernel_size=tuple(k), stride=tuple(s), padding=pads,
                    dilation=tuple(d), ceil_mode=ceil_mode, **params)


def _emit_pool3d(ctx, op, x, k, s, d, begin, end, ceil_mode, params):
    """A 3-D pool as two 2-D pools: over (H, W) with depth folded into channels, then over D
    with H*W as the second axis. Exact because max pooling, a window's sum and its divisor
    (the count of padded or of valid elements, each a product of per-axis counts) all factor
    over the axes."""
    n, c, dd, h, w = ctx.type(x).shape
    x = ctx.emit("reshape", [x], shape=(n, numel((c, dd)), h, w))
    y = _emit_pool2d(ctx, op, x, k[1:], s[1:], d[1:], begin[1:], end[1:], ceil_mode, params)
    _, _, ho, wo = ctx.type(y).shape
    y = ctx.emit("reshape", [y], shape=(n, c, dd, numel((ho, wo))))
    y = _emit_pool2d(ctx, op, y, [k[0], 1], [s[0], 1], [d[0], 1], [begin[0], 0], [end[0], 0],
                     ceil_mode, params)
    return ctx.emit("reshape", [y], shape=(n, c, ctx.type(y).shape[2], ho, wo))


#: ONNX MaxPool's integer dtypes, run exactly through float32 (every value representable)
_INT_VIA_FLOAT = {DType.U8: DType.F32, DType.I8: DType.F32}


def _import_pool(op, onnx_type):
    def rule(ctx, node):
        x = node.inputs[0]
        xt = ctx.type(x)
        if len(xt.shape) not in (3, 4, 5):
            ctx.unsupported(f"{onnx_type} on a rank-{len(xt.shape)} input (1-D, 2-D and 3-D "
                            f"pooling only)")
        if len([o for o in node.outputs if o]) > 1:
            ctx.unsupported(f"{onnx_type} with an Indices output")
        if node.attr("storage_order", 0):
            ctx.unsupported("storage_order=1")
        k = list(node.attr("kernel_shape"))
        n = len(k)
        s = list(node.attr("strides") or [1] * n)
        d = list(node.attr("dilations") or [1] * n)
        cut: list[int] = []
        begin, end = _auto_pads_full(ctx, node, xt.shape[2:], k, s, d, cut)
        params = {}
        if op == "avg_pool2d":
            params["count_include_pad"] = bool(node.attr("count_include_pad", 0))
            if cut and not params["count_include_pad"]:
                ctx.unsupported(f"auto_pad={node.attr('auto_pad')} with a stride on a symbolic "
                                f"size and count_include_pad=0 (the divisor then depends on "
                                f"the size)")
        via = None
        if op == "max_pool2d" and xt.dtype in _INT_VIA_FLOAT:
            if any(p >= (kk - 1) * dd + 1 for p, kk, dd in zip(begin + end, k + k, d + d)):
                ctx.unsupported(f"integer {onnx_type} whose padding can hold a whole window")
            via = _INT_VIA_FLOAT[xt.dtype]
            x = ctx.cast(x, via)
        if cut:  # SAME pads that depend on a symbolic size: a max pool's padding never wins
            reaches = [(kk - 1) * dd + 1 for kk, dd in zip(k, d)]
            x = cut_to_same(ctx, x, cut, node.attr("auto_pad"), s, reaches,
                            value=float("-inf") if op == "max_pool2d" else 0.0)
        ceil_mode = bool(node.attr("ceil_mode", 0))
        if n == 3:
            y = _emit_pool3d(ctx, op, x, k, s, d, begin, end, ceil_mode, params)
        elif n == 1:
            x = ctx.emit("unsqueeze", [x], axis=2)
            y = _emit_pool2d(ctx, op, x, [1] + k, [1] + s, [1] + d, [0] + begin, [0] + end,
                             ceil_mode, params)
            y = ctx.emit("squeeze", [y], axis=(2,))
        else:
            y = _emit_pool2d(ctx, op, x, k, s, d, begin, end, ceil_mode, params)
        if via is not None:
            y = ctx.cast(y, xt.dtype)
        return [y]

    return rule


def _import_global_pool(op):
    def rule(ctx, node):
        x = node.inputs[0]
        xt = ctx.type(x)
        axes = tuple(range(2, len(xt.shape)))
        return [ctx.emit(op, [x], axis=axes, keepdims=True)]

    return rule


# -- normalization --------------------------------------------------------------------------------
def _export_batch_norm(ctx, node):
    if node.params.get("training"):
        ctx.unsupported(node, "batch_norm in training mode")
    out = ctx.output_types(node)[0]
    x, mean, var, w, b = (_cast_all(ctx, node, out.dtype) + [""] * 5)[:5]
    c = ctx.input_types(node)[0].shape[1]
    if not w or not b:
        if isinstance(c, Dim):
            ctx.unsupported(node, "batch_norm without weight/bias on a symbolic channel axis")
        w = w or ctx.const(np.ones(c, out.dtype.numpy), hint="bn_scale")
        b = b or ctx.const(np.zeros(c, out.dtype.numpy), hint="bn_bias")
    ctx.make_node("BatchNormalization", [x, w, b, mean, var], ctx.outputs(node),
                  epsilon=float(node.params["eps"]))


def _import_batch_norm(ctx, node):
    x, scale, bias, mean, var = node.inputs[:5]
    eps = node.attr("epsilon", 1e-5)
    if not node.attr("training_mode", 0):
        if len([o for o in node.outputs if o]) > 1:
            ctx.fail("running_mean / running_var outputs need training_mode=1")
        return [ctx.emit("batch_norm", [x, mean, var, scale, bias], training=False, eps=eps)]
    return _batch_norm_training(ctx, node, x, scale, bias, mean, var, eps)


def _batch_norm_training(ctx, node, x, scale, bias, mean, var, eps):
    """training_mode=1 as ONNX defines it: normalise with the batch's mean and biased variance
    (an eval-mode batch_norm fed those statistics, so the graph stays pure), and return the
    running statistics blended as ``running * momentum + batch * (1 - momentum)``."""
    xt = ctx.type(x)
    axes = (0,) + tuple(range(2, len(xt.shape)))
    dt = xt.dtype.numpy
    batch_mean = ctx.emit("mean", [x], axis=axes, keepdims=False)
    centred = ctx.emit("sub", [x, ctx.emit("mean", [x], axis=axes, keepdims=True)])
    batch_var = ctx.emit("mean", [ctx.emit("mul", [centred, centred])], axis=axes,
                         keepdims=False)
    y = ctx.emit("batch_norm", [x, batch_mean, batch_var, scale, bias], training=False, eps=eps)
    results = [y]
    momentum = float(node.attr("momentum", 0.9))
    for k, (old, new) in enumerate(((mean, batch_mean), (var, batch_var)), start=1):
        if len(node.outputs) <= k or not node.outputs[k]:
            break
        old_dt = ctx.type(old).dtype
        blended = ctx.emit("add", [
            ctx.emit("mul", [old, np.array(momentum, old_dt.numpy)]),
            ctx.emit("mul", [ctx.cast(new, old_dt) if old_dt.numpy != dt
                             else new, np.array(1.0 - momentum, old_dt.numpy)])])
        results.append(blended)
    return results


def _export_layer_norm(ctx, node):
    out = ctx.output_types(node)[0]
    x, w, b = (_cast_all(ctx, node, out.dtype) + ["", ""])[:3]
    ns = tuple(node.params["normalized_shape"])
    if not w:
        if any(isinstance(d, Dim) for d in ns):
            ctx.unsupported(node, "layer_norm without weight over symbolic axes")
        w = ctx.const(np.ones(ns, out.dtype.numpy), hint="ln_scale")
    ins = [x, w] + ([b] if b else [])
    ctx.make_node("LayerNormalization", ins, ctx.outputs(node), axis=-len(ns),
                  epsilon=float(node.params["eps"]))


def _import_layer_norm(ctx, node):
    x = node.inputs[0]
    shape = ctx.type(x).shape
    r = len(shape)
    axis = node.attr("axis", -1) % r
    ns = tuple(shape[axis:])
    scale = node.input(1) or None
    bias = node.input(2) or None
    if scale is not None and tuple(ctx.type(scale).shape) != ns:
        sh = ctx.type(scale).shape
        if numel(sh) != numel(ns) or any(isinstance(d, Dim) for d in sh):
            ctx.unsupported(f"scale of shape {list(sh)} for normalized shape {list(ns)}")
        scale = ctx.emit("reshape", [scale], shape=ns)
    if bias is not None and tuple(ctx.type(bias).shape) != ns:
        sh = ctx.type(bias).shape
        if numel(sh) != numel(ns) or any(isinstance(d, Dim) for d in sh):
            ctx.unsupported(f"bias of shape {list(sh)} for normalized shape {list(ns)}")
        bias = ctx.emit("reshape", [bias], shape=ns)
    eps = node.attr("epsilon", 1e-5)
    y = ctx.emit("layer_norm", [x, scale, bias], normalized_shape=ns, eps=eps)
    if len([o for o in node.outputs if o]) == 1:
        return [y]
    # Mean and InvStdDev (in the stash type, f32 by default), reduced axes kept
    from onemodel.formats.onnx_api import ONNX_TO_DTYPE

    stash = ONNX_TO_DTYPE.get(node.attr("stash_type", 1), DType.F32)
    xs = ctx.emit("cast", [x], dtype=stash) if ctx.type(x).dtype != stash else x
    axes = tuple(range(axis, r))
    mean = ctx.emit("mean", [xs], axis=axes, keepdims=True)
    d = ctx.emit("sub", [xs, mean])
    var = ctx.emit("mean", [ctx.emit("mul", [d, d])], axis=axes, keepdims=True)
    std = ctx.emit("sqrt", [ctx.emit("add", [var, np.array(eps, dtype=stash.numpy)])])
    inv = ctx.emit("div", [np.array(1, dtype=stash.numpy), std])
    return [y, mean, inv]


# -- activations ----------------------------------------------------------------------------------
def _export_softmax(onnx_type):
    def export(ctx, node):
        (x,) = ctx.inputs(node)
        out = ctx.output_types(node)[0]
        x = ctx.cast(x, ctx.input_types(node)[0].dtype, out.dtype)
        ctx.make_node(onnx_type, [x], ctx.outputs(node), axis=int(node.params["axis"]))

    return export


def _import_softmax(op):
    def rule(ctx, node):
        x = node.inputs[0]
        shape = ctx.type(x).shape
        r = len(shape)
        if ctx.opset >= 13:
            return [ctx.emit(op, [x], axis=node.attr("axis", -1))]
        axis = node.attr("axis", 1) % max(r, 1)
        if axis == r - 1:
            return [ctx.emit(op, [x], axis=-1)]
        flat = ctx.emit("reshape", [x], shape=(numel(shape[:axis]), numel(shape[axis:])))
        y = ctx.emit(op, [flat], axis=-1)
        return [ctx.emit("reshape", [y], shape=tuple(shape))]

    return rule


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _export_gelu(ctx, node):
    (x,) = ctx.inputs(node)
    out = ctx.output_types(node)[0]
    x = ctx.cast(x, ctx.input_types(node)[0].dtype, out.dtype)
    approx = node.params.get("approximate", "none")
    if ctx.opset >= 20:
        ctx.make_node("Gelu", [x], ctx.outputs(node), approximate=approx)
        return
    dt = out.dtype

    def c(v):
        return scalar_const(ctx, v, dt)

    if approx == "tanh":
        x3 = ctx.make_node("Mul", [ctx.make_node("Mul", [x, x], name="gelu"), x], name="gelu")
        inner = ctx.make_node("Add", [x, ctx.make_node("Mul", [x3, c(0.044715)], name="gelu")],
                              name="gelu")
        t = ctx.make_node("Tanh", [ctx.make_node("Mul", [inner, c(_SQRT_2_OVER_PI)],
                                                 name="gelu")], name="gelu")
    else:
        t = ctx.make_node("Erf", [ctx.make_node("Div", [x, c(math.sqrt(2.0))], name="gelu")],
                          name="gelu")
    one_plus = ctx.make_node("Add", [t, c(1.0)], name="gelu")
    half_x = ctx.make_node("Mul", [x, c(0.5)], name="gelu")
    ctx.make_node("Mul", [half_x, one_plus], ctx.outputs(node))


def _import_gelu(ctx, node):
    return [ctx.emit("gelu", [node.inputs[0]], approximate=node.attr("approximate", "none"))]


def _export_dropout(ctx, node):
    if node.params.get("training") and node.params.get("p", 0) > 0:
        ctx.unsupported(node, "dropout in training mode")
    ctx.make_node("Identity", ctx.inputs(node)[:1], ctx.outputs(node))


def _import_dropout(ctx, node):
    x = node.inputs[0]
    if node.input(2):
        mode = ctx.const(node.input(2))
        if mode is None or bool(np.asarray(mode).reshape(-1)[0]):
            ratio = ctx.const(node.input(1)) if node.input(1) else np.array(0.5)
            if ratio is None or float(np.asarray(ratio).reshape(-1)[0]) != 0.0:
                ctx.unsupported("Dropout in training mode")
    results = [ctx.entry(x)]
    if len(node.outputs) > 1 and node.outputs[1]:
        results.append(ctx.emit("full", [], shape=tuple(ctx.type(x).shape), value=True,
                                dtype=DType.BOOL))
    return results


def _export_embedding(ctx, node):
    idx, w = ctx.inputs(node)
    ctx.make_node("Gather", [w, idx], ctx.outputs(node), axis=0)


def _export_sdpa(ctx, node):
    out = ctx.output_types(node)[0]
    q, k, v, mask = (_cast_all(ctx, node, out.dtype) + [""] * 4)[:4]
    q_t, k_t = ctx.input_types(node)[0], ctx.input_types(node)[1]
    mask_t = ctx.input_types(node)[3] if len(node.inputs) > 3 else None
    e = q_t.shape[-1]
    rank = len(k_t.shape)
    perm = list(range(rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    kt = ctx.make_node("Transpose", [k], name="attn_kT", perm=perm)
    scores = ctx.make_node("MatMul", [q, kt], name="attn_scores")
    if isinstance(e, Dim):
        ef = ctx.make_node("Cast", [ctx.dim(e)], name="attn_e", to=ctx.onnx_dtype(out.dtype))
        scale = ctx.make_node("Sqrt", [ef], name="attn_scale")
        scores = ctx.make_node("Div", [scores, scale], name="attn_scaled")
    else:
        scores = ctx.make_node("Mul", [scores, scalar_const(ctx, 1.0 / math.sqrt(int(e)),
                                                           out.dtype)], name="attn_scaled")
    if mask:
        if mask_t.dtype == DType.BOOL:
            neg = scalar_const(ctx, -np.inf, out.dtype)
            scores = ctx.make_node("Where", [ctx.inputs(node)[3], scores, neg], name="attn_masked")
        else:
            scores = ctx.make_node("Add", [scores, mask], name="attn_masked")
    attn = ctx.make_node("Softmax", [scores], name="attn_weights", axis=-1)
    ctx.make_node("MatMul", [attn, v], ctx.outputs(node))


# -- hardsigmoid / hardswish ---------------------------------------------------------------------
def _export_hardsigmoid(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    out = ctx.output_types(node)[0]
    ctx.make_node("HardSigmoid", [ctx.cast(x, t.dtype, out.dtype)], ctx.outputs(node),
                  alpha=float(node.params["alpha"]), beta=float(node.params["beta"]))


def _import_hardsigmoid(ctx, node):
    return [ctx.emit("hardsigmoid", [node.inputs[0]], alpha=float(node.attr("alpha", 0.2)),
                     beta=float(node.attr("beta", 0.5)))]


def _export_hardswish(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    out = ctx.output_types(node)[0]
    x = ctx.cast(x, t.dtype, out.dtype)
    if ctx.opset >= 14:
        ctx.make_node("HardSwish", [x], ctx.outputs(node))
        return
    hs = ctx.make_node("HardSigmoid", [x], alpha=1.0 / 6.0, beta=0.5)
    ctx.make_node("Mul", [x, hs], ctx.outputs(node))


def _import_hardswish(ctx, node):
    return [ctx.emit("hardswish", [node.inputs[0]])]


ONNX = {
    "hardsigmoid": OnnxSpec(export=_export_hardsigmoid,
                            imports={"HardSigmoid": _import_hardsigmoid}),
    "hardswish": OnnxSpec(export=_export_hardswish, imports={"HardSwish": _import_hardswish}),
    "linear": OnnxSpec(export=_export_linear, imports={"Gemm": _import_gemm}),
    "conv2d": OnnxSpec(export=_export_conv, imports={"Conv": _import_conv}),
    "max_pool2d": OnnxSpec(export=_export_pool("MaxPool"),
                           imports={"MaxPool": _import_pool("max_pool2d", "MaxPool"),
                                    "GlobalMaxPool": _import_global_pool("max")}),
    "avg_pool2d": OnnxSpec(export=_export_pool("AveragePool"),
                           imports={"AveragePool": _import_pool("avg_pool2d", "AveragePool"),
                                    "GlobalAveragePool": _import_global_pool("mean")}),
    "batch_norm": OnnxSpec(export=_export_batch_norm,
                           imports={"BatchNormalization": _import_batch_norm}),
    "layer_norm": OnnxSpec(export=_export_layer_norm,
                           imports={"LayerNormalization": _import_layer_norm}),
    "softmax": OnnxSpec(export=_export_softmax("Softmax"),
                        imports={"Softmax": _import_softmax("softmax")}),
    "log_softmax": OnnxSpec(export=_export_softmax("LogSoftmax"),
                            imports={"LogSoftmax": _import_softmax("log_softmax")}),
    "gelu": OnnxSpec(export=_export_gelu, imports={"Gelu": _import_gelu}),
    "dropout": OnnxSpec(export=_export_dropout, imports={"Dropout": _import_dropout}),
    "embedding": OnnxSpec(export=_export_embedding),
    "scaled_dot_product_attention": OnnxSpec(export=_export_sdpa),
}

from .onnx_rnn import ONNX as _RNN_ONNX  # noqa: E402  (lstm and gru, in a file of their own)

ONNX.update(_RNN_ONNX)


# -- triu / tril ----------------------------------------------------------------------------------
def _export_trilu(upper):
    def export(ctx, node):
        k = ctx.const(np.array(int(node.params["diagonal"]), np.int64), hint="k")
        ctx.make_node("Trilu", [ctx.inputs(node)[0], k], ctx.outputs(node), upper=int(upper))
    return export


def _trilu_by_tensor(ctx, node):
    """Trilu with k read at run time: keep x where column - row >= k (upper) or <= k (lower),
    the mask built from ``arange`` over the last two axes (symbolic sizes included)."""
    x, k = node.inputs[0], node.input(1)
    shape = ctx.type(x).shape
    tk = ctx.type(k)
    if len(shape) < 2:
        ctx.unsupported(f"Trilu of a rank-{len(shape)} tensor (it needs 2 axes or more)")
    if not tk.dtype.is_int or len(tk.shape) > 1 or any(d != 1 for d in tk.shape):
        ctx.unsupported(f"Trilu's k must be one integer, got {tk}")
    i64 = DType.I64
    rows = ctx.emit("arange", [], start=0, stop=shape[-2], step=1, dtype=i64)
    rows = ctx.emit("reshape", [rows], shape=(shape[-2], 1))
    cols = ctx.emit("arange", [], start=0, stop=shape[-1], step=1, dtype=i64)
    diff = ctx.emit("sub", [cols, rows])
    kk = ctx.emit("cast", [ctx.emit("reshape", [k], shape=()) if tk.shape else k], dtype=i64)
    keep = ctx.emit("greater_equal" if node.attr("upper", 1) else "less_equal", [diff, kk])
    zero = np.zeros((), dtype=ctx.type(x).dtype.numpy)
    return ctx.emit("where", [keep, x, zero])


def _import_trilu(ctx, node):
    k = 0
    if node.input(1):
        kv = ctx.const(node.input(1))
        if kv is None:
            return [_trilu_by_tensor(ctx, node)]
        k = int(np.asarray(kv).reshape(-1)[0])
    return [ctx.emit("triu" if node.attr("upper", 1) else "tril", [node.inputs[0]], diagonal=k)]


ONNX["triu"] = OnnxSpec(export=_export_trilu(True), imports={"Trilu": _import_trilu})
ONNX["tril"] = OnnxSpec(export=_export_trilu(False))
