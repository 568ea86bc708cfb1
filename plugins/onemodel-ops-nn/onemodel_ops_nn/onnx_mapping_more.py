"""ONNX mappings of the newer nn ops (conv_more, pool_more, norm_more, resize...), merged into
`onnx_mapping.ONNX` by plugin.py. Same ctx API as onnx_mapping.py.

* 1-D pools lower as the 2-D pool over an unsqueezed height of one, reusing its ceil-mode and
  padding rules; conv1d is a 1-D ``Conv``.
* group_norm, normalize and cosine_similarity export through their decompositions (no code
  here); rms_norm as ``RMSNormalization`` at opset 23+, else its decomposition.
* adaptive pools: ``GlobalAveragePool`` / ``GlobalMaxPool`` for an output of 1 (any input size,
  symbolic included), a plain pool when the input divides evenly, else (fixed sizes, average)
  one ``MatMul`` per axis by the averaging matrix of PyTorch's windows.
"""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.core.symbolic import Dim
from onemodel.core.types import numel, same_dim
from onemodel.registry import OnnxSpec

from .conv_more import single
from .onnx_mapping import _cast_all, conv_inputs, max_pool_with_indices
from .pool_more import _averaging


# -- conv1d -------------------------------------------------------------------------------------
def _export_conv1d(ctx, node):
    ins = conv_inputs(ctx, node)
    wt = ctx.input_types(node)[1]
    p = node.params
    pad = int(single("conv1d", "padding", p["padding"]))
    ctx.make_node("Conv", ins, ctx.outputs(node), kernel_shape=[int(wt.shape[2])],
                  strides=[int(single("conv1d", "stride", p["stride"]))], pads=[pad, pad],
                  dilations=[int(single("conv1d", "dilation", p["dilation"]))],
                  group=int(p["groups"]))


# -- transposed convolutions ----------------------------------------------------------------------
def _ints(v, n):
    return [int(e) for e in v] if isinstance(v, (tuple, list)) and len(v) == n else [int(
        v[0] if isinstance(v, (tuple, list)) else v)] * n


def _export_conv_transpose(n):
    def export(ctx, node):
        ins = conv_inputs(ctx, node)
        wt = ctx.input_types(node)[1]
        p = node.params
        pads = _ints(p["padding"], n)
        ctx.make_node("ConvTranspose", ins, ctx.outputs(node),
                      kernel_shape=[int(d) for d in wt.shape[2:]],
                      strides=_ints(p["stride"], n), pads=pads + pads,
                      output_padding=_ints(p["output_padding"], n),
                      dilations=_ints(p["dilation"], n), group=int(p["groups"]))

    return export


def _transpose_pads(ctx, node, spatial, n, s, k, d, op):
    """(begin, end) pads of a ConvTranspose: ``pads``, or from ``output_shape`` / ``auto_pad``
    by ONNX's rule (total = s (in - 1) + output_padding + reach - out; SAME_UPPER puts the
    smaller half first, the others the larger; a negative total grows the end)."""
    mode = node.attr("auto_pad", "NOTSET") or "NOTSET"
    shape = node.attr("output_shape")
    if not shape and mode in ("NOTSET", "VALID"):
        pads = list(node.attr("pads") or [0] * (2 * n)) if mode == "NOTSET" else [0] * (2 * n)
        return pads[:n], pads[n:]
    if shape and len(shape) > n:
        shape = shape[-n:]  # output_shape may hold the batch and channel sizes too
    begin, end = [], []
    for i in range(n):
        if isinstance(spatial[i], Dim):
            ctx.unsupported(f"ConvTranspose with {'output_shape' if shape else 'auto_pad=' + mode}"
                            f" on the symbolic spatial size {spatial[i]}")
        want = int(shape[i]) if shape else spatial[i] * s[i]
        total = s[i] * (spatial[i] - 1) + op[i] + (k[i] - 1) * d[i] + 1 - want
        small = total // 2
        first = small if mode == "SAME_UPPER" else total - small
        if total < 0:
            first = 0  # an output past the full one grows at the end (onnx, ONNX Runtime)
        begin.append(first)
        end.append(total - first)
    return begin, end


def _import_conv_transpose(ctx, node):
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2) or None
    rank = len(ctx.type(x).shape)
    if rank not in (3, 4):
        ctx.unsupported(f"a {rank - 2}-D ConvTranspose (1-D and 2-D are supported)")
    n = rank - 2
    spatial = ctx.type(x).shape[2:]
    k = list(node.attr("kernel_shape") or [int(v) for v in ctx.type(w).shape[2:]])
    s = list(node.attr("strides") or [1] * n)
    d = list(node.attr("dilations") or [1] * n)
    op = list(node.attr("output_padding") or [0] * n)
    begin, end = _transpose_pads(ctx, node, spatial, n, s, k, d, op)
    groups = int(node.attr("group", 1))
    op_name = "conv_transpose1d" if n == 1 else "conv_transpose2d"
    if any(v < 0 for v in begin + end):
        # an output_shape past the full output: the full output without bias, grown by
        # zeros (a negative width crops), then the bias, which is all the new places hold
        y = ctx.emit(op_name, [x, w, None], stride=tuple(s), padding=(0,) * n,
                     output_padding=(0,) * n, dilation=tuple(d), groups=groups)
        widths = []
        for i in reversed(range(n)):
            widths += [-begin[i], op[i] - end[i]]
        y = ctx.emit("pad", [y], pad=tuple(widths))
        if b:
            y = ctx.emit("add", [y, ctx.emit("reshape", [b], shape=(-1,) + (1,) * n)])
        return [y]
    sym = [min(bb, e) for bb, e in zip(begin, end)]
    # the symmetric part as padding; what is left is cut from the output's start or end
    # (an end cut shorter than output_padding asks the op for the rest as output_padding)
    extra_op = [max(0, o - (e - m)) for o, e, m in zip(op, end, sym)]
    params = {"stride": tuple(s), "padding": tuple(sym), "output_padding": tuple(extra_op),
              "dilation": tuple(d), "groups": groups}
    y = ctx.emit(op_name, [x, w, b], **params)
    for i in range(n):
        cut_start = begin[i] - sym[i]
        length = (spatial[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 + op[i] - begin[i] - end[i]
        if cut_start or not same_dim(ctx.type(y).shape[2 + i], length):
            y = ctx.emit("narrow", [y], axis=2 + i, start=cut_start, length=length)
    return [y]


# -- interpolate / pixel_shuffle ----------------------------------------------------------------
def _export_interpolate(ctx, node):
    """Resize: nearest as asymmetric + floor, linear as align_corners or half_pixel (PyTorch's
    rule, ONNX Runtime clamping the source index as PyTorch does); ``scales`` when a
    scale_factor was given (the same source scale), else ``sizes`` (computed when symbolic)."""
    (x,) = ctx.inputs(node)
    xt = ctx.input_types(node)[0]
    out = ctx.output_types(node)[0]
    p = node.params
    n = len(xt.shape) - 2
    if p["mode"] == "nearest":
        attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                 "nearest_mode": "floor"}
    else:
        attrs = {"mode": "linear", "coordinate_transformation_mode":
                 "align_corners" if p["align_corners"] else "half_pixel"}
    if p["scale_factor"] is not None:
        sf = p["scale_factor"]
        sf = list(sf) if isinstance(sf, (tuple, list)) else [sf] * n
        scales = ctx.const(np.array([1.0, 1.0] + [float(v) for v in sf], np.float32),
                           hint="scales")
        ctx.make_node("Resize", [x, "", scales], ctx.outputs(node), **attrs)
    else:
        ctx.make_node("Resize", [x, "", "", ctx.shape(out.shape)], ctx.outputs(node), **attrs)


def _import_resize(ctx, node):
    x = node.inputs[0]
    xt = ctx.type(x)
    rank = len(xt.shape)
    mode = node.attr("mode", "nearest")
    ctm = node.attr("coordinate_transformation_mode", "half_pixel")
    for attr, default in (("antialias", 0), ("exclude_outside", 0), ("axes", None)):
        if node.attr(attr, default) not in (default, [], None):
            ctx.unsupported(f"Resize with {attr}")
    if rank not in (3, 4):
        ctx.unsupported(f"Resize of a rank-{rank} tensor (1-D and 2-D spatial only)")
    if mode == "nearest":
        if ctm != "asymmetric" or node.attr("nearest_mode", "round_prefer_floor") != "floor":
            ctx.unsupported(f"nearest Resize with coordinate_transformation_mode={ctm} and "
                            f"nearest_mode={node.attr('nearest_mode', 'round_prefer_floor')} "
                            f"(PyTorch's is asymmetric + floor)")
        params = {"mode": "nearest"}
    elif mode == "linear":
        if ctm not in ("align_corners", "half_pixel", "pytorch_half_pixel"):
            ctx.unsupported(f"linear Resize with coordinate_transformation_mode={ctm}")
        params = {"mode": "linear" if rank == 3 else "bilinear",
                  "align_corners": ctm == "align_corners"}
    else:
        ctx.unsupported(f"Resize mode {mode!r}")
    scales = ctx.const(node.input(2)) if node.input(2) else None
    if scales is not None and np.asarray(scales).size:
        scales = [float(v) for v in np.asarray(scales).reshape(-1)]
        if scales[:2] != [1.0, 1.0]:
            ctx.unsupported("Resize scaling the batch or channel axis")
        params["scale_factor"] = tuple(scales[2:])
    else:
        sizes = ctx.symbolic(node.input(3)) if node.input(3) else None
        if sizes is None:
            ctx.unsupported("Resize with sizes computed from data")
        sizes = list(np.asarray(sizes).reshape(-1))
        sizes = [int(v) if not isinstance(v, Dim) else v for v in sizes]
        if ctm == "pytorch_half_pixel" and any(isinstance(v, Dim) or v == 1 for v in sizes[2:]):
            ctx.unsupported("pytorch_half_pixel Resize to a size of 1 (or a symbolic size)")
        params["size"] = tuple(sizes[2:])
    return [ctx.emit("interpolate", [x], **params)]


def _export_pixel_shuffle(ctx, node):
    if len(ctx.input_types(node)[0].shape) != 4:
        ctx.decompose(node)  # DepthToSpace wants (N, C, H, W)
        return
    ctx.make_node("DepthToSpace", ctx.inputs(node), ctx.outputs(node),
                  blocksize=int(node.params["upscale_factor"]), mode="CRD")


def _space_depth_import(to_space):
    def rule(ctx, node):
        x = node.inputs[0]
        shape = ctx.type(x).shape
        if len(shape) != 4:
            ctx.unsupported(f"{node.op_type} of a rank-{len(shape)} tensor")
        r = int(node.attr("blocksize"))
        if node.attr("mode", "DCR") == "CRD":  # SpaceToDepth has a mode from opset 25
            return [ctx.emit("pixel_shuffle" if to_space else "pixel_unshuffle", [x],
                             **{"upscale_factor" if to_space else "downscale_factor": r})]
        n, c, h, w = shape
        if to_space:  # DCR: the block offset is the slow part of the channel
            y = ctx.emit("reshape", [x], shape=(n, r, r, c // (r * r), h, w))
            y = ctx.emit("permute", [y], axes=(0, 3, 4, 1, 5, 2))
            return [ctx.emit("reshape", [y], shape=(n, c // (r * r), h * r, w * r))]
        y = ctx.emit("reshape", [x], shape=(n, c, h // r, r, w // r, r))
        y = ctx.emit("permute", [y], axes=(0, 3, 5, 1, 2, 4))
        return [ctx.emit("reshape", [y], shape=(n, c * r * r, h // r, w // r))]

    return rule


# -- 1-D pools ----------------------------------------------------------------------------------
def _export_pool1d(op2d):
    def export(ctx, node):
        (x,) = ctx.inputs(node)
        xt = ctx.input_types(node)[0]
        p = dict(node.params)
        k = single(op2d, "kernel_size", p.pop("kernel_size"))
        stride = p.pop("stride")
        s = k if stride in (None, ()) else single(op2d, "stride", stride)
        pad = single(op2d, "padding", p.pop("padding"))
        params = dict(p, kernel_size=(1, k), stride=(1, s), padding=(0, pad))
        if "dilation" in params:
            params["dilation"] = (1, single(op2d, "dilation", params["dilation"]))
        x4 = ctx.make_node("Unsqueeze", [x, ctx.ints([2])], name=f"{node.op}_x")
        t4 = TensorType(xt.dtype, (xt.shape[0], xt.shape[1], 1, xt.shape[2]))
        outs = ctx.lower(op2d, [x4], [t4], params)  # values (and indices): squeeze each
        for y4, out in zip(outs, ctx.outputs(node)):
            ctx.make_node("Squeeze", [y4, ctx.ints([2])], [out])

    return export


# -- adaptive pools -----------------------------------------------------------------------------
def _export_adaptive(n, reduce):
    global_op = "GlobalAveragePool" if reduce == "avg" else "GlobalMaxPool"
    pool_op = "AveragePool" if reduce == "avg" else "MaxPool"

    def export(ctx, node):
        (x,) = ctx.inputs(node)
        xt = ctx.input_types(node)[0]
        out = ctx.output_types(node)[0]
        spatial = xt.shape[-n:]
        sizes = tuple(out.shape[-n:])
        batched = len(xt.shape) == n + 2
        if not batched:  # ONNX pools want (N, C, ...): add the batch axis for the pool
            x = ctx.make_node("Unsqueeze", [x, ctx.ints([0])], name=f"{node.op}_x")
        outputs = ctx.outputs(node) if batched else None
        if node.params.get("return_indices"):
            return _adaptive_with_indices(ctx, node, x, spatial, sizes, batched)
        if all(isinstance(o, int) and o == 1 for o in sizes):
            y = ctx.make_node(global_op, [x], outputs)
        elif not any(isinstance(d, Dim) for d in (*spatial, *sizes)) and all(
                s % o == 0 for s, o in zip(spatial, sizes)):
            k = [s // o for s, o in zip(spatial, sizes)]
            y = ctx.make_node(pool_op, [x], outputs, kernel_shape=k, strides=k)
        elif not any(isinstance(d, Dim) for d in spatial):
            rank = len(xt.shape) + (0 if batched else 1)
            build = _averaging_matmuls if reduce == "avg" else _window_maxima
            y = build(ctx, x, rank, n, spatial, sizes, out.dtype, outputs)
        else:
            ctx.unsupported(node, f"{node.op} to {list(sizes)} of an input of spatial size "
                                  f"{list(map(str, spatial))} (ONNX has no adaptive pool; "
                                  f"exported are outputs of 1, inputs that divide evenly and "
                                  f"fixed sizes)")
        if not batched:
            ctx.make_node("Squeeze", [y, ctx.ints([0])], ctx.outputs(node))

    return export


def _adaptive_with_indices(ctx, node, x, spatial, sizes, batched):
    """adaptive_max_pool2d's indices: one MaxPool with Indices when the windows tile the input
    evenly (fixed sizes); ONNX has no other pool that returns where its maxima are."""

    if any(isinstance(d, Dim) for d in (*spatial, *sizes)) or not all(
            s % o == 0 for s, o in zip(spatial, sizes)):
        ctx.unsupported(node, f"{node.op} with return_indices to {list(sizes)} of an input of "
                              f"spatial size {list(map(str, spatial))}: only fixed sizes that "
                              f"divide evenly export (one MaxPool with its Indices output)")
    k = [int(s) // int(o) for s, o in zip(spatial, sizes)]
    xt = ctx.input_types(node)[0]
    outputs = ctx.outputs(node) if batched else [ctx.fresh("values"), ctx.fresh("indices")]
    max_pool_with_indices(ctx, x, xt if batched else TensorType(xt.dtype, (1, *xt.shape)),
                          outputs, kernel_shape=k, strides=k)
    if not batched:
        for y, out in zip(outputs, ctx.outputs(node)):
            ctx.make_node("Squeeze", [y, ctx.ints([0])], [out])


def _window_maxima(ctx, x, rank, n, spatial, sizes, dtype, outputs):
    """Max is separable: per axis, ``ReduceMax`` over each window's ``Slice``, joined by
    ``Concat`` (PyTorch's windows, fixed sizes)."""
    from .pool_more import windows

    y = x
    for a in range(n):
        axis = rank - n + a
        starts, ends = windows(int(spatial[a]), int(sizes[a]))
        cells = []
        for s0, e0 in zip(starts, ends):
            piece = ctx.make_node("Slice", [y, ctx.ints([int(s0)]), ctx.ints([int(e0)]),
                                            ctx.ints([axis])])
            if ctx.opset >= 18:
                cells.append(ctx.make_node("ReduceMax", [piece, ctx.ints([axis])], keepdims=1))
            else:
                cells.append(ctx.make_node("ReduceMax", [piece], axes=[axis], keepdims=1))
        last = a == n - 1
        y = ctx.make_node("Concat", cells, outputs if last else None, axis=axis)
    return y


def _averaging_matmuls(ctx, x, rank, n, spatial, sizes, dtype, outputs):
    """Average each spatial axis by a MatMul with PyTorch's (L, out) window matrix, moving the
    axis last and back (a Transpose pair per axis)."""
    y = x
    for a in range(n):
        axis = rank - n + a
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        moved = y if axis == rank - 1 else ctx.make_node("Transpose", [y], perm=perm)
        mat = ctx.const(_averaging(int(spatial[a]), int(sizes[a]), dtype.numpy),
                        hint="adaptive_avg")
        last = a == n - 1
        if axis == rank - 1:
            y = ctx.make_node("MatMul", [moved, mat], outputs if last else None)
        else:
            prod = ctx.make_node("MatMul", [moved, mat])
            y = ctx.make_node("Transpose", [prod], outputs if last else None, perm=perm)
    return y


# -- norms --------------------------------------------------------------------------------------
def _import_group_norm(ctx, node):
    """GroupNormalization: opset 21+ scales per channel (PyTorch's rule); opset 18's scale and
    bias are per group, repeated here over each group's channels."""
    x, scale, bias = node.inputs[0], node.inputs[1], node.inputs[2]
    groups = int(node.attr("num_groups"))
    if ctx.opset < 21:
        c = ctx.type(x).shape[1]
        if isinstance(c, Dim):
            ctx.unsupported("GroupNormalization-18 (per-group scale) on a symbolic channel axis")
        per = c // groups

        def channels(v):
            v = ctx.emit("reshape", [v], shape=(groups, 1))
            return ctx.emit("reshape", [ctx.emit("expand", [v], shape=(groups, per))],
                            shape=(c,))

        scale, bias = channels(scale), channels(bias)
    return [ctx.emit("group_norm", [x, scale, bias], num_groups=groups,
                     eps=float(node.attr("epsilon", 1e-5)))]


def _export_instance_norm(ctx, node):
    p = node.params
    out = ctx.output_types(node)[0]
    x, mean, var, w, b = (_cast_all(ctx, node, out.dtype) + [""] * 5)[:5]
    types = ctx.input_types(node)
    if not p["use_input_stats"]:  # the running statistics: batch_norm in evaluation mode
        ctx.lower("batch_norm", [x, mean, var, w, b], types, {"training": False,
                                                               "eps": p["eps"]},
                  outputs=ctx.outputs(node))
        return
    c = types[0].shape[1]
    if (not w or not b) and isinstance(c, Dim):
        ctx.unsupported(node, "instance_norm without weight/bias on a symbolic channel axis")
    w = w or ctx.const(np.ones(c, out.dtype.numpy), hint="in_scale")
    b = b or ctx.const(np.zeros(c, out.dtype.numpy), hint="in_bias")
    ctx.make_node("InstanceNormalization", [x, w, b], ctx.outputs(node),
                  epsilon=float(p["eps"]))


def _import_instance_norm(ctx, node):
    x, scale, bias = node.inputs[0], node.inputs[1], node.inputs[2]
    return [ctx.emit("instance_norm", [x, None, None, scale, bias],
                     eps=float(node.attr("epsilon", 1e-5)))]


def _export_rms_norm(ctx, node):
    if ctx.opset < 23:
        ctx.decompose(node)
        return
    out = ctx.output_types(node)[0]
    x, w = (_cast_all(ctx, node, out.dtype) + [""])[:2]
    ns = tuple(node.params["normalized_shape"])
    eps = node.params["eps"]
    if eps is None:
        eps = float(np.finfo(out.dtype.numpy).eps)
    if not w:  # RMSNormalization needs a scale: ones of normalized_shape
        w = ctx.make_node("Expand", [ctx.const(np.ones(1, out.dtype.numpy), hint="rms_one"),
                                     ctx.shape(ns)], name="rms_scale")
    ctx.make_node("RMSNormalization", [x, w], ctx.outputs(node), axis=-len(ns),
                  epsilon=float(eps))


def _import_rms_norm(ctx, node):
    x, scale = node.inputs[0], node.inputs[1]
    shape = ctx.type(x).shape
    axis = node.attr("axis", -1) % len(shape)
    ns = tuple(shape[axis:])
    st = ctx.type(scale).shape
    if tuple(st) != ns:
        if len(st) > len(ns) or any(isinstance(d, Dim) for d in st) or numel(st) != numel(ns):
            if not (numel(st) == 1 and not any(isinstance(d, Dim) for d in ns)):
                ctx.unsupported(f"scale of shape {list(st)} for normalized shape {list(ns)}")
        scale = ctx.emit("expand", [scale], shape=ns) if numel(st) == 1 else \
            ctx.emit("reshape", [scale], shape=ns)
    return [ctx.emit("rms_norm", [x, scale], normalized_shape=ns,
                     eps=float(node.attr("epsilon", 1e-5)))]


def _import_lp_normalization(ctx, node):
    p = int(node.attr("p", 2))
    if p not in (1, 2):
        ctx.unsupported(f"LpNormalization with p={p}")
    # ONNX gives 0 for a zero vector: divide by max(norm, the dtype's smallest normal number),
    # which leaves every other norm unchanged
    tiny = float(np.finfo(ctx.type(node.inputs[0]).dtype.numpy).tiny)
    return [ctx.emit("normalize", [node.inputs[0]], p=float(p), axis=node.attr("axis", -1),
                     eps=tiny)]


ONNX = {
    "group_norm": OnnxSpec(imports={"GroupNormalization": _import_group_norm},
                           doc="its decomposition (Reshape, ReduceMean, Sub, Mul, Sqrt, Div)"),
    "instance_norm": OnnxSpec(export=_export_instance_norm,
                              imports={"InstanceNormalization": _import_instance_norm},
                              doc="InstanceNormalization, or BatchNormalization for running "
                                  "statistics"),
    "rms_norm": OnnxSpec(export=_export_rms_norm,
                         imports={"RMSNormalization": _import_rms_norm},
                         doc="RMSNormalization (opset 23+) or its decomposition"),
    "normalize": OnnxSpec(imports={"LpNormalization": _import_lp_normalization},
                          doc="its decomposition (ReduceSum, Sqrt or Pow, Max, Div)"),
    "conv1d": OnnxSpec(export=_export_conv1d, doc="Conv (1-D)"),
    "conv_transpose1d": OnnxSpec(export=_export_conv_transpose(1), doc="ConvTranspose (1-D)"),
    "conv_transpose2d": OnnxSpec(export=_export_conv_transpose(2),
                                 imports={"ConvTranspose": _import_conv_transpose}),
    "interpolate": OnnxSpec(export=_export_interpolate,  # imported by onnx_resize.py's rule
                            doc="Resize (nearest asymmetric/floor, linear align_corners or "
                                "half_pixel)"),
    "pixel_shuffle": OnnxSpec(export=_export_pixel_shuffle,
                              imports={"DepthToSpace": _space_depth_import(True)},
                              doc="DepthToSpace (CRD); imports CRD and DCR"),
    "pixel_unshuffle": OnnxSpec(imports={"SpaceToDepth": _space_depth_import(False)},
                                doc="its decomposition (Reshape, Transpose); imports "
                                    "SpaceToDepth"),
    "max_pool1d": OnnxSpec(export=_export_pool1d("max_pool2d"), doc="MaxPool over (1, k)"),
    "avg_pool1d": OnnxSpec(export=_export_pool1d("avg_pool2d"), doc="AveragePool over (1, k)"),
    "adaptive_avg_pool1d": OnnxSpec(export=_export_adaptive(1, "avg"),
                                    doc="GlobalAveragePool, AveragePool or MatMul"),
    "adaptive_avg_pool2d": OnnxSpec(export=_export_adaptive(2, "avg"),
                                    doc="GlobalAveragePool, AveragePool or MatMul"),
    "adaptive_max_pool2d": OnnxSpec(export=_export_adaptive(2, "max"),
                                    doc="GlobalMaxPool or MaxPool"),
}
