"""ONNX mappings of the basic ops: ``ONNX = {op_name: OnnxSpec(export=..., imports=...)}``.

``export(ctx, node)`` lowers one OneModel node (ctx API: ``onemodel.formats.onnx_export``);
``imports[onnx_type](ctx, node)`` turns one ONNX node into OneModel nodes (ctx API:
``onemodel.formats.onnx_import``; plugins import from ``onemodel.formats.onnx_api``). plugin.py
attaches each entry to its op record with ``attach_onnx``, which refuses an unknown op name.
"""
from __future__ import annotations

import numpy as np

from onemodel.core import DType, Dim
from onemodel.core.guards import require
from onemodel.core.types import numel
from onemodel.formats.onnx_lowering import (INT64_MAX, export_chain,
                                            export_elementwise, import_binary, import_unary,
                                            import_variadic, scalar_const, slice_bounds)
from onemodel.registry import OnnxSpec

from .index import _entries, _expanded
from .onnx_data_shaped import SPEC as DATA_SHAPED
from .shape import _squeeze_axes


# -- elementwise ----------------------------------------------------------------------------------
def _bool_or(onnx_type, bool_type):
    plain = export_elementwise(onnx_type)
    logical = export_elementwise(bool_type)

    def export(ctx, node):
        if ctx.output_types(node)[0].dtype == DType.BOOL:
            return logical(ctx, node)
        return plain(ctx, node)

    return export


def _import_div(ctx, node):
    a, b = node.inputs[0], node.inputs[1]
    want = ctx.type(a).dtype
    out = ctx.emit("div", [a, b])
    if ctx.type(out).dtype != want:  # ONNX integer Div truncates; cast truncates toward zero
        out = ctx.emit("cast", [out], dtype=want)
    return [out]


def _export_relu(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.output_types(node)[0]
    if t.dtype.is_float:
        ctx.make_node("Relu", [x], ctx.outputs(node))
    else:  # integer Relu is in the spec, but runtimes rarely implement it: max(x, 0)
        ctx.make_node("Max", [x, scalar_const(ctx, 0, t.dtype)], ctx.outputs(node))


def _export_not_equal(ctx, node):
    a, b = ctx.inputs(node)
    ta, tb = ctx.input_types(node)
    from onemodel.core.dtype import promote_types

    d = promote_types(ta.dtype, tb.dtype)
    eq = ctx.make_node("Equal", [ctx.cast(a, ta.dtype, d), ctx.cast(b, tb.dtype, d)], name="eq")
    ctx.make_node("Not", [eq], ctx.outputs(node))


def _export_clip(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.output_types(node)[0]
    x = ctx.cast(x, ctx.input_types(node)[0].dtype, t.dtype)
    lo, hi = node.params.get("min"), node.params.get("max")
    if isinstance(lo, Dim) or isinstance(hi, Dim):
        ctx.unsupported(node, "symbolic clip bounds")
    ins = [x, "" if lo is None else scalar_const(ctx, lo, t.dtype),
           "" if hi is None else scalar_const(ctx, hi, t.dtype)]
    while ins[-1] == "":
        ins.pop()
    ctx.make_node("Clip", ins, ctx.outputs(node))


def _import_clip(ctx, node):
    x = node.inputs[0]
    if ctx.opset < 11:
        lo, hi = node.attr("min"), node.attr("max")
    else:
        lo = hi = None
        if any(node.input(i) and ctx.const(node.input(i)) is None for i in (1, 2)):
            return [_clip_by_tensors(ctx, node)]
        for idx in (1, 2):
            name = node.input(idx)
            if not name:
                continue
            c = ctx.const(name)
            if c.size != 1:
                ctx.unsupported(f"Clip bound {idx} must be a scalar, got shape {list(c.shape)}")
            if idx == 1:
                lo = c.reshape(()).item()
            else:
                hi = c.reshape(()).item()
    if lo is None and hi is None:
        return [ctx.emit("identity", [x])]
    return [ctx.emit("clip", [x], min=lo, max=hi)]


def _clip_by_tensors(ctx, node):
    """Clip with a bound read at run time: ``minimum(maximum(x, min), max)`` (NaN stays NaN,
    as in Clip); a bound must hold one value of x's dtype."""
    cur = node.inputs[0]
    want = ctx.type(cur).dtype
    for idx, op in ((1, "maximum"), (2, "minimum")):
        name = node.input(idx)
        if not name:
            continue
        t = ctx.type(name)
        if t.dtype != want or len(t.shape) > 1 or any(d != 1 for d in t.shape):
            ctx.unsupported(f"Clip bound {idx} must be a scalar of the input's dtype {want}, "
                            f"got {t}")
        bound = ctx.emit("reshape", [name], shape=()) if t.shape else name
        cur = ctx.emit(op, [cur, bound])
    return cur


def _import_where(ctx, node):
    c, a, b = node.inputs[:3]
    want = ctx.type(a).dtype
    out = ctx.emit("where", [c, a, b])
    if ctx.type(out).dtype != want:
        out = ctx.emit("cast", [out], dtype=want)
    return [out]


def _import_pow(ctx, node):
    a, b = node.inputs[0], node.inputs[1]
    want = ctx.type(a).dtype
    tb = ctx.type(b).dtype
    if want.is_int and tb.is_float:
        # ONNX computes in the exponent's float type, then casts to the base's int type
        out = ctx.emit("pow", [ctx.emit("cast", [a], dtype=tb), b])
    else:
        out = ctx.emit("pow", [a, b])
    if ctx.type(out).dtype != want:
        out = ctx.emit("cast", [out], dtype=want)
    return [out]


def _import_compare(op):
    def rule(ctx, node):
        return [ctx.emit(op, [node.inputs[0], node.inputs[1]])]
    return rule


def _export_where(ctx, node):
    c, a, b = ctx.inputs(node)
    tc, ta, tb = ctx.input_types(node)
    out = ctx.output_types(node)[0].dtype
    ctx.make_node("Where", [ctx.cast(c, tc.dtype, DType.BOOL), ctx.cast(a, ta.dtype, out),
                            ctx.cast(b, tb.dtype, out)], ctx.outputs(node))


# -- casts and linear algebra ---------------------------------------------------------------------
def _export_cast(ctx, node):
    (x,) = ctx.inputs(node)
    ctx.make_node("Cast", [x], ctx.outputs(node), to=ctx.onnx_dtype(node.params["dtype"]))


def _import_cast(ctx, node):
    to = ctx.dtype(node.attr("to"), "Cast to")
    return [ctx.emit("cast", [node.inputs[0]], dtype=to)]


def _import_castlike(ctx, node):
    return [ctx.emit("cast", [node.inputs[0]], dtype=ctx.type(node.inputs[1]).dtype)]


# -- shape ops ------------------------------------------------------------------------------------
def _export_transpose(ctx, node):
    (x,) = ctx.inputs(node)
    n = len(ctx.input_types(node)[0].shape)
    perm = list(range(n))
    a, b = node.params["axis0"] % max(n, 1), node.params["axis1"] % max(n, 1)
    if n:
        perm[a], perm[b] = perm[b], perm[a]
    ctx.make_node("Transpose", [x], ctx.outputs(node), perm=perm)


def _export_permute(ctx, node):
    (x,) = ctx.inputs(node)
    n = len(ctx.input_types(node)[0].shape)
    ctx.make_node("Transpose", [x], ctx.outputs(node),
                  perm=[int(a) % max(n, 1) for a in node.params["axes"]])


def _import_transpose(ctx, node):
    x = node.inputs[0]
    n = ctx.rank(x)
    perm = node.attr("perm") or list(range(n))[::-1]
    return [ctx.emit("permute", [x], axes=tuple(perm))]


def _export_reshape(ctx, node):
    (x,) = ctx.inputs(node)
    shape = list(node.params["shape"])
    zero = any(not isinstance(d, Dim) and d == 0 for d in shape)
    target = ctx.shape(shape) if zero or any(not isinstance(d, Dim) and d == -1 for d in shape) \
        else ctx.reshape_target(shape)
    ctx.make_node("Reshape", [x, target], ctx.outputs(node), allowzero=1 if zero else None)


def _export_as_reshape(ctx, node):
    """Any op whose output is its input with another shape (flatten...)."""
    x = ctx.inputs(node)[0]
    out = ctx.output_types(node)[0]
    if any(not isinstance(d, Dim) and d == 0 for d in out.shape):
        target, zero = ctx.shape(out.shape), 1
    else:
        target, zero = ctx.reshape_target(out.shape), None
    ctx.make_node("Reshape", [x, target], ctx.outputs(node), allowzero=zero)


def _import_reshape(ctx, node):
    x, s = node.inputs[0], node.inputs[1]
    shape = list(ctx.shape_param(s, "the Reshape target"))
    in_shape = ctx.type(x).shape
    if not node.attr("allowzero", 0):
        for i, d in enumerate(shape):
            if not isinstance(d, Dim) and d == 0:
                if i >= len(in_shape):
                    ctx.unsupported("Reshape copies a size (0) from an axis the input lacks")
                shape[i] = in_shape[i]
    return [ctx.emit("reshape", [x], shape=tuple(shape))]


def _import_flatten(ctx, node):
    x = node.inputs[0]
    shape = ctx.type(x).shape
    axis = node.attr("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    return [ctx.emit("reshape", [x], shape=(numel(shape[:axis]), numel(shape[axis:])))]


def _export_squeeze(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    axes = _squeeze_axes(t.shape, node.params.get("axis"))
    if not axes:
        ctx.make_node("Identity", [x], ctx.outputs(node))
        return
    ctx.make_node("Squeeze", [x, ctx.ints(axes, hint="axes")], ctx.outputs(node))


def _import_squeeze(ctx, node):
    x = node.inputs[0]
    axes = ctx.ints(node, 1, "axes")
    n = ctx.rank(x)
    if axes is None:
        return [ctx.emit("squeeze", [x])]
    axes = tuple(sorted(a % n for a in axes))
    shape = ctx.type(x).shape
    for a in axes:
        if isinstance(shape[a], Dim):
            ctx.unsupported(f"Squeeze of axis {a}, whose size {shape[a]} is symbolic")
    return [ctx.emit("squeeze", [x], axis=axes)]


def _export_unsqueeze(ctx, node):
    (x,) = ctx.inputs(node)
    n = len(ctx.input_types(node)[0].shape)
    a = node.params["axis"] % (n + 1)
    ctx.make_node("Unsqueeze", [x, ctx.ints([a], hint="axes")], ctx.outputs(node))


def _import_unsqueeze(ctx, node):
    x = node.inputs[0]
    axes = ctx.ints(node, 1, "axes") or []
    out_rank = ctx.rank(x) + len(axes)
    cur = x
    for a in sorted(a % out_rank for a in axes):
        cur = ctx.emit("unsqueeze", [cur], axis=a)
    if not axes:
        cur = ctx.emit("identity", [cur])
    return [cur]


def _export_concat(ctx, node):
    ins = ctx.inputs(node)
    types = ctx.input_types(node)
    out = ctx.output_types(node)[0]
    ins = [ctx.cast(i, t.dtype, out.dtype) for i, t in zip(ins, types)]
    ctx.make_node("Concat", ins, ctx.outputs(node), axis=int(node.params["axis"]))


def _import_concat(ctx, node):
    ins = [i for i in node.inputs if i]
    want = ctx.type(ins[0]).dtype
    out = ctx.emit("concat", ins, axis=node.attr("axis"))
    if ctx.type(out).dtype != want:
        out = ctx.emit("cast", [out], dtype=want)
    return [out]


def _export_split(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    axis = node.params["axis"] % len(t.shape)
    outs = ctx.outputs(node)
    if len(outs) == 1:
        ctx.make_node("Identity", [x], outs)
        return
    sizes = [o.shape[axis] for o in ctx.output_types(node)]
    ctx.make_node("Split", [x, ctx.shape(sizes)], outs, axis=axis)


def _import_split(ctx, node):
    x = node.inputs[0]
    shape = ctx.type(x).shape
    axis = node.attr("axis", 0) % len(shape)
    outs = [o for o in node.outputs]
    sizes = ctx.ints(node, 1, "split")
    size = shape[axis]
    if sizes is None:
        n = node.attr("num_outputs", len(outs))
        if isinstance(size, Dim):
            sizes = [size // n] * n
        else:
            chunk = -(-size // n)
            sizes = [chunk] * (size // chunk) + ([size % chunk] if size % chunk else [])
    if len(sizes) == 1:
        return [ctx.emit("identity", [x])]
    res = ctx.emit("split", [x], sizes=tuple(sizes), axis=axis)
    return list(res)


def _export_expand(ctx, node):
    (x,) = ctx.inputs(node)
    t_in = ctx.input_types(node)[0]
    out = list(ctx.output_types(node)[0].shape)
    lead = len(out) - len(t_in.shape)
    target = []
    for i, d in enumerate(out):
        src = t_in.shape[i - lead] if i >= lead else None
        same = src is not None and (src == d if not isinstance(d, Dim) and not isinstance(src, Dim)
                                    else (isinstance(d, Dim) and isinstance(src, Dim) and d == src))
        target.append(1 if same else d)
    ctx.make_node("Expand", [x, ctx.shape(target)], ctx.outputs(node))


def _import_expand(ctx, node):
    from onemodel.core.types import broadcast_shapes

    x = node.inputs[0]
    dims = ctx.shape_param(node.inputs[1], "the Expand shape")
    try:
        out = broadcast_shapes(ctx.type(x).shape, dims, op="Expand")
    except Exception as exc:  # noqa: BLE001
        ctx.unsupported(str(exc))
    return [ctx.emit("expand", [x], shape=tuple(out))]


def _export_gather(ctx, node):
    x, idx = ctx.inputs(node)
    ctx.make_node("GatherElements", [x, idx], ctx.outputs(node), axis=int(node.params["axis"]))


def _import_gather_elements(ctx, node):
    return [ctx.emit("gather", [node.inputs[0], node.inputs[1]], axis=node.attr("axis", 0))]


def _export_take(ctx, node):
    x, idx = ctx.inputs(node)
    axis = node.params.get("axis")
    if axis is None:
        x = ctx.make_node("Reshape", [x, ctx.ints([-1], hint="shape")], name="flat")
        axis = 0
    ctx.make_node("Gather", [x, idx], ctx.outputs(node), axis=int(axis))


def _import_gather(ctx, node):
    x, idx = node.inputs[0], node.inputs[1]
    return [ctx.emit("take", [x, idx], axis=node.attr("axis", 0))]


# -- reductions -----------------------------------------------------------------------------------
def _export_truth(onnx_type):
    """any / all: the input as bool, then i32 (ONNX reductions take no bools), reduced with
    ReduceMax / ReduceMin and cast back to bool."""
    reduce = _export_reduce(onnx_type, 18)

    def export(ctx, node):
        (x,) = ctx.inputs(node)
        t_in = ctx.input_types(node)[0]
        as_int = ctx.cast(ctx.cast(x, t_in.dtype, DType.BOOL), DType.BOOL, DType.I32)
        out = ctx.fresh(node.op)
        reduce(ctx, node, x=as_int, outputs=[out])
        ctx.make_node("Cast", [out], ctx.outputs(node), to=ctx.onnx_dtype(DType.BOOL))

    return export


def _export_reduce(onnx_type, axes_input_since):
    def export(ctx, node, x=None, outputs=None):
        t_in = ctx.input_types(node)[0]
        if x is None:
            (x,) = ctx.inputs(node)
            x = ctx.cast(x, t_in.dtype, ctx.output_types(node)[0].dtype)
        outputs = outputs or ctx.outputs(node)
        axis = node.params.get("axis")
        keep = 1 if node.params.get("keepdims") else 0
        n = len(t_in.shape)
        if axis is None or (isinstance(axis, tuple) and not axis):
            axes = None
        else:
            axes = [int(a) % max(n, 1) for a in (axis if isinstance(axis, (tuple, list))
                                                 else (axis,))]
        if n == 0:
            ctx.make_node("Identity", [x], outputs)
            return
        if axes is None:
            ctx.make_node(onnx_type, [x], outputs, keepdims=keep)
        elif ctx.opset >= axes_input_since:
            ctx.make_node(onnx_type, [x, ctx.ints(axes, hint="axes")], outputs,
                          keepdims=keep)
        else:
            ctx.make_node(onnx_type, [x], outputs, keepdims=keep, axes=axes)

    return export


def _import_reduce(op, axes_input_since):
    def rule(ctx, node):
        x = node.inputs[0]
        t = ctx.type(x)
        if ctx.opset >= axes_input_since:
            axes = ctx.ints(node, 1, "axes")
        else:
            axes = node.attr("axes")
        keep = bool(node.attr("keepdims", 1))
        if not axes:
            if node.attr("noop_with_empty_axes", 0):
                return [ctx.emit("identity", [x])]
            axes = None
        if t.dtype == DType.BOOL:
            if op not in ("max", "min"):
                ctx.unsupported(f"{node.op_type} of a bool tensor")
            # max/min of bools is any/all: reduce 0/1 as u8 and cast back
            x = ctx.cast(x, DType.U8)
        if any(not isinstance(d, Dim) and d == 0 for d in t.shape) and op in ("max", "min"):
            ctx.unsupported(f"{node.op_type} of an empty tensor")
        axis = None if axes is None else tuple(sorted(a % max(len(t.shape), 1) for a in axes))
        out = ctx.emit(op, [x], axis=axis, keepdims=keep)
        if ctx.type(out).dtype != t.dtype:
            out = ctx.emit("cast", [out], dtype=t.dtype)
        return [out]

    return rule


def _export_argmax(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    axis = node.params.get("axis")
    keep = bool(node.params.get("keepdims"))
    if len(t.shape) == 0:
        ctx.make_node("Cast", [ctx.const(np.array(0, np.int64))], ctx.outputs(node), to=7)
        return
    if axis is None:
        flat = ctx.make_node("Reshape", [x, ctx.ints([-1], hint="shape")], name="flat")
        if keep:
            am = ctx.make_node("ArgMax", [flat], name="argmax", axis=0, keepdims=1)
            ctx.make_node("Reshape", [am, ctx.ints([1] * len(t.shape), hint="shape")],
                          ctx.outputs(node))
        else:
            ctx.make_node("ArgMax", [flat], ctx.outputs(node), axis=0, keepdims=0)
        return
    ctx.make_node("ArgMax", [x], ctx.outputs(node), axis=int(axis) % len(t.shape),
                  keepdims=1 if keep else 0)


def _import_argmax(ctx, node):
    x = node.inputs[0]
    axis = node.attr("axis", 0)
    keep = bool(node.attr("keepdims", 1))
    if not node.attr("select_last_index", 0):
        return [ctx.emit("argmax", [x], axis=axis, keepdims=keep)]
    # the last maximum: argmax of the reversed axis, counted from the end
    shape = ctx.type(x).shape
    axis %= len(shape)
    index = [("slice", None, None, None)] * len(shape)
    index[axis] = ("slice", None, None, -1)
    rev = ctx.emit("index", [x], index=tuple(index))
    am = ctx.emit("argmax", [rev], axis=axis, keepdims=keep)
    n = shape[axis]
    if isinstance(n, Dim):
        ctx.unsupported("ArgMax select_last_index=1 over a symbolic axis")
    return [ctx.emit("sub", [np.array(n - 1, dtype=np.int64), am])]


def _import_logical(op, onnx_type):
    def rule(ctx, node):
        a, b = node.inputs[0], node.inputs[1]
        if ctx.type(a).dtype != DType.BOOL or ctx.type(b).dtype != DType.BOOL:
            ctx.unsupported(f"{onnx_type} of non-bool tensors")
        return [ctx.emit(op, [a, b])]
    return rule


def _import_not(ctx, node):
    x = node.inputs[0]
    if ctx.type(x).dtype != DType.BOOL:
        ctx.unsupported("Not of a non-bool tensor")
    return [ctx.emit("equal", [x, np.array(False)])]


def _import_reciprocal(ctx, node):
    x = node.inputs[0]
    t = ctx.type(x)
    if not t.dtype.is_float:
        ctx.unsupported("Reciprocal of an integer tensor")
    return [ctx.emit("div", [np.array(1, dtype=t.dtype.numpy), x])]


# -- indexing -------------------------------------------------------------------------------------
def _export_index(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    entries = _expanded(_entries(node.params["index"]), len(t.shape))
    starts, ends, axes, steps = [], [], [], []
    squeeze, unsqueeze = [], []
    axis = 0
    out_pos = 0
    for e in entries:
        if e is None:
            unsqueeze.append(out_pos)
            out_pos += 1
            continue
        if isinstance(e, tuple):
            _, s, stop, step = e
            if not (s is None and stop is None and (step is None or step == 1)):
                s, stop, step = slice_bounds(s, stop, step)
                starts.append(s)
                ends.append(stop)
                axes.append(axis)
                steps.append(step)
            out_pos += 1
        else:
            i = e
            starts.append(i)
            ends.append(INT64_MAX if (not isinstance(i, Dim) and i == -1) else i + 1)
            axes.append(axis)
            steps.append(1)
            squeeze.append(axis)
        axis += 1
    cur = x
    outs = ctx.outputs(node)
    steps_left = bool(starts) + bool(squeeze) + bool(unsqueeze)

    def target():
        nonlocal steps_left
        steps_left -= 1
        return outs if steps_left == 0 else None

    if starts:
        cur = ctx.make_node("Slice", [cur, ctx.shape(starts), ctx.shape(ends),
                                      ctx.ints(axes, hint="axes"), ctx.ints(steps, hint="steps")],
                            target(), name="slice")
    if squeeze:
        cur = ctx.make_node("Squeeze", [cur, ctx.ints(squeeze, hint="axes")], target(),
                            name="squeeze")
    if unsqueeze:
        cur = ctx.make_node("Unsqueeze", [cur, ctx.ints(unsqueeze, hint="axes")], target(),
                            name="unsqueeze")
    if not (starts or squeeze or unsqueeze):
        ctx.make_node("Identity", [cur], outs)


#: a fixed Slice bound this far out on a symbolic axis is an exporter's "to the end" (tf2onnx
#: writes 1e9): it reads as the end, under a guard that the axis is no longer (sessions check it)
_TO_THE_END = 10 ** 9


def _onnx_bound(v, n, is_start, step):
    """A Slice bound as a Python slice bound for an axis of size n (ONNX clamping rules)."""
    if isinstance(v, Dim):
        return v
    if v >= 2 ** 62:
        return None
    if v <= -(2 ** 62):
        return None
    if isinstance(n, Dim):
        if step > 0 and (v <= -_TO_THE_END if is_start else v >= _TO_THE_END):
            require(n, abs(v), f"a Slice bound of {v} reads as the end of the axis")
            return None
        return v
    if v < 0:
        v += n
        if v < 0:
            return None if (step < 0 and not is_start) else 0
    return min(v, n)


def _import_slice(ctx, node):
    x = node.inputs[0]
    shape = ctx.type(x).shape
    if ctx.opset < 10:
        starts, ends = node.attr("starts"), node.attr("ends")
        axes = node.attr("axes")
        steps = None
    else:
        starts = ctx.shape_param(node.inputs[1], "Slice starts")
        ends = ctx.shape_param(node.inputs[2], "Slice ends")
        axes = ctx.ints(node, 3, "axes") if node.input(3) else None
        steps = ctx.ints(node, 4, "steps") if node.input(4) else None
    axes = list(axes) if axes is not None else list(range(len(starts)))
    steps = list(steps) if steps is not None else [1] * len(starts)
    index = [("slice", None, None, None)] * len(shape)
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = a % len(shape)
        n = shape[a]
        s2 = _onnx_bound(s, n, True, st)
        e2 = _onnx_bound(e, n, False, st)
        if st < 0 and not isinstance(n, Dim) and not isinstance(s2, Dim) and s2 is not None:
            s2 = min(s2, n - 1)
        index[a] = ("slice", s2, e2, st)
    return [ctx.emit("index", [x], index=tuple(index))]


# -- factories ------------------------------------------------------------------------------------
def _export_full(ctx, node):
    shape = list(node.params["shape"])
    out = ctx.output_types(node)[0]
    value = node.params["value"]
    if isinstance(value, Dim):  # a size used as a value (x / x.shape[1]): computed at run time
        size = ctx.cast(ctx.scalar_dim(value), "i64", out.dtype)
        ctx.make_node("Expand", [size, ctx.shape(shape)], ctx.outputs(node))
        return
    if not any(isinstance(d, Dim) for d in shape):
        ctx.make_node("Identity", [ctx.const(np.full(shape, value, dtype=out.dtype.numpy),
                                             hint="full")], ctx.outputs(node))
        return
    from onemodel.formats.onnx_api import tensor_attribute

    tensor = tensor_attribute(np.array([value], dtype=out.dtype.numpy))
    ctx.make_node("ConstantOfShape", [ctx.shape(shape)], ctx.outputs(node), value=tensor)


def _import_constant_of_shape(ctx, node):
    dims = ctx.shape_param(node.inputs[0], "the ConstantOfShape shape")
    v = node.attr("value")
    if v is None:
        v = np.zeros(1, np.float32)
    value = v.reshape(-1)[0].item()
    dtype = DType.from_numpy(v.dtype)
    return [ctx.emit("full", [], shape=tuple(dims), value=value, dtype=dtype)]


def _export_arange(ctx, node):
    p = node.params
    out = ctx.output_types(node)[0]
    start, stop, step = p["start"], p["stop"], p["step"]
    if stop is None:
        start, stop = 0, start
    if not any(isinstance(v, Dim) for v in (start, stop, step)):
        arr = np.arange(start, stop, step).astype(out.dtype.numpy)
        ctx.make_node("Identity", [ctx.const(arr, hint="arange")], ctx.outputs(node))
        return

    def scalar(v):
        return ctx.scalar_dim(v) if isinstance(v, Dim) else ctx.const(np.array(v, np.int64))

    r = ctx.make_node("Range", [scalar(start), scalar(stop), scalar(step)], name="range")
    ctx.make_node("Cast", [r], ctx.outputs(node), to=ctx.onnx_dtype(out.dtype))


def _import_range(ctx, node):
    vals = []
    for name in node.inputs[:3]:
        s = ctx.symbolic(name)
        c = ctx.const(name)
        if c is not None:
            vals.append(c.reshape(()).item())
        elif s is not None and s.size == 1:
            vals.append(s.reshape(-1)[0])
        else:
            ctx.unsupported("Range bounds must be a constant or sizes of input axes")
    dtype = ctx.type(node.inputs[0]).dtype
    return [ctx.emit("arange", [], start=vals[0], stop=vals[1], step=vals[2], dtype=dtype)]


def _export_fill(ctx, node, value=None):
    x = ctx.inputs(node)[0]
    out = ctx.output_types(node)[0]
    v = node.params["value"] if value is None else value
    shape = ctx.make_node("Shape", [x], name="shape")
    ctx.make_node("Expand", [scalar_const(ctx, v, out.dtype), shape], ctx.outputs(node))


def _export_copy(ctx, node):
    x, src = ctx.inputs(node)
    tx, ts = ctx.input_types(node)
    shape = ctx.make_node("Shape", [x], name="shape")
    ctx.make_node("Expand", [ctx.cast(src, ts.dtype, tx.dtype), shape], ctx.outputs(node))


def _export_identity(ctx, node):
    ctx.make_node("Identity", ctx.inputs(node)[:1], ctx.outputs(node))


def _import_identity(ctx, node):
    return [ctx.emit("identity", [node.inputs[0]])]


def _export_gather_nd(ctx, node):
    x, idx = ctx.inputs(node)
    t = ctx.input_types(node)[1]
    ctx.make_node("GatherND", [x, ctx.cast(idx, t.dtype, DType.I64)], ctx.outputs(node),
                  batch_dims=int(node.params["batch_dims"]))


def _import_gather_nd(ctx, node):
    return [ctx.emit("gather_nd", [node.inputs[0], node.inputs[1]],
                     batch_dims=int(node.attr("batch_dims", 0)))]


ONNX = {
    "shape_from_data": DATA_SHAPED,
    "gather_nd": OnnxSpec(export=_export_gather_nd, imports={"GatherND": _import_gather_nd}),
    "add": OnnxSpec(export=_bool_or("Add", "Or"),
                    imports={"Add": import_binary("add"), "Sum": import_variadic("add"),
                             "Or": _import_logical("add", "Or")}),
    "sub": OnnxSpec(export=export_elementwise("Sub"), imports={"Sub": import_binary("sub")}),
    "mul": OnnxSpec(export=_bool_or("Mul", "And"),
                    imports={"Mul": import_binary("mul"), "And": _import_logical("mul", "And")}),
    "div": OnnxSpec(export=export_elementwise("Div"),
                    imports={"Div": _import_div, "Reciprocal": _import_reciprocal}),
    "pow": OnnxSpec(export=export_elementwise("Pow"), imports={"Pow": _import_pow}),
    "maximum": OnnxSpec(export=export_elementwise("Max"),
                        imports={"Max": import_variadic("maximum")}),
    "minimum": OnnxSpec(export=export_elementwise("Min"),
                        imports={"Min": import_variadic("minimum")}),
    "neg": OnnxSpec(export=export_chain(("Neg", {})), imports={"Neg": import_unary("neg")}),
    "exp": OnnxSpec(export=export_chain(("Exp", {})), imports={"Exp": import_unary("exp")}),
    "log": OnnxSpec(export=export_chain(("Log", {})), imports={"Log": import_unary("log")}),
    "sqrt": OnnxSpec(export=export_chain(("Sqrt", {})), imports={"Sqrt": import_unary("sqrt")}),
    "abs": OnnxSpec(export=export_chain(("Abs", {})), imports={"Abs": import_unary("abs")}),
    "tanh": OnnxSpec(export=export_chain(("Tanh", {})), imports={"Tanh": import_unary("tanh")}),
    "sigmoid": OnnxSpec(export=export_chain(("Sigmoid", {})),
                        imports={"Sigmoid": import_unary("sigmoid")}),
    "relu": OnnxSpec(export=_export_relu, imports={"Relu": import_unary("relu")}),
    "erf": OnnxSpec(export=export_chain(("Erf", {})), imports={"Erf": import_unary("erf")}),
    "where": OnnxSpec(export=_export_where, imports={"Where": _import_where}),
    "clip": OnnxSpec(export=_export_clip, imports={"Clip": _import_clip}),
    "equal": OnnxSpec(export=export_elementwise("Equal", "promote"),
                      imports={"Equal": _import_compare("equal"), "Not": _import_not}),
    "not_equal": OnnxSpec(export=_export_not_equal,
                          imports={"Xor": _import_logical("not_equal", "Xor")}),
    "less": OnnxSpec(export=export_elementwise("Less", "promote"),
                     imports={"Less": _import_compare("less")}),
    "less_equal": OnnxSpec(export=export_elementwise("LessOrEqual", "promote"),
                           imports={"LessOrEqual": _import_compare("less_equal")}),
    "greater": OnnxSpec(export=export_elementwise("Greater", "promote"),
                        imports={"Greater": _import_compare("greater")}),
    "greater_equal": OnnxSpec(export=export_elementwise("GreaterOrEqual", "promote"),
                              imports={"GreaterOrEqual": _import_compare("greater_equal")}),
    "cast": OnnxSpec(export=_export_cast, imports={"Cast": _import_cast,
                                                   "CastLike": _import_castlike}),
    "matmul": OnnxSpec(export=export_elementwise("MatMul"),
                       imports={"MatMul": import_binary("matmul")}),
    "transpose": OnnxSpec(export=_export_transpose),
    "permute": OnnxSpec(export=_export_permute, imports={"Transpose": _import_transpose}),
    "reshape": OnnxSpec(export=_export_reshape, imports={"Reshape": _import_reshape,
                                                         "Flatten": _import_flatten}),
    "flatten": OnnxSpec(export=_export_as_reshape),
    "squeeze": OnnxSpec(export=_export_squeeze, imports={"Squeeze": _import_squeeze}),
    "unsqueeze": OnnxSpec(export=_export_unsqueeze, imports={"Unsqueeze": _import_unsqueeze}),
    "concat": OnnxSpec(export=_export_concat, imports={"Concat": _import_concat}),
    "split": OnnxSpec(export=_export_split, imports={"Split": _import_split}),
    "expand": OnnxSpec(export=_export_expand, imports={"Expand": _import_expand}),
    "gather": OnnxSpec(export=_export_gather, imports={"GatherElements": _import_gather_elements}),
    "take": OnnxSpec(export=_export_take, imports={"Gather": _import_gather}),
    "sum": OnnxSpec(export=_export_reduce("ReduceSum", 13),
                    imports={"ReduceSum": _import_reduce("sum", 13)}),
    "mean": OnnxSpec(export=_export_reduce("ReduceMean", 18),
                     imports={"ReduceMean": _import_reduce("mean", 18)}),
    "max": OnnxSpec(export=_export_reduce("ReduceMax", 18),
                    imports={"ReduceMax": _import_reduce("max", 18)}),
    "min": OnnxSpec(export=_export_reduce("ReduceMin", 18),
                    imports={"ReduceMin": _import_reduce("min", 18)}),
    "argmax": OnnxSpec(export=_export_argmax, imports={"ArgMax": _import_argmax}),
    "any": OnnxSpec(export=_export_truth("ReduceMax")),
    "all": OnnxSpec(export=_export_truth("ReduceMin")),
    "index": OnnxSpec(export=_export_index, imports={"Slice": _import_slice}),
    "full": OnnxSpec(export=_export_full, imports={"ConstantOfShape": _import_constant_of_shape}),
    "arange": OnnxSpec(export=_export_arange, imports={"Range": _import_range}),
    "fill": OnnxSpec(export=_export_fill),
    "zeros_like": OnnxSpec(export=lambda ctx, node: _export_fill(ctx, node, value=0)),
    "copy": OnnxSpec(export=_export_copy),
    "identity": OnnxSpec(export=_export_identity),
}
