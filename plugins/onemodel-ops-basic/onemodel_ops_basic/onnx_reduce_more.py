"""ONNX mappings of reduce_more.py, scan.py and sort.py (merged into ``ONNX`` by plugin.py).

ONNX has ReduceLogSumExp, ReduceProd, ReduceL1/L2, ArgMin, CumSum and TopK; var, std, the other
norms and cumprod are written as compositions of standard nodes. Sizes of symbolic axes are
computed from the inputs' shapes (``ctx.dim``), so a file works at every size.
"""
from __future__ import annotations

import math

import numpy as np

from onemodel.core import DType, Dim
from onemodel.core.types import numel
from onemodel.formats.onnx_lowering import scalar_const
from onemodel.registry import OnnxSpec

from .onnx_mapping import _export_reduce, _import_reduce
from .reduce_more import norm_order

#: opset from which each reduction takes its axes as an input instead of an attribute
_AXES_INPUT_SINCE = {"ReduceSum": 13}


def _axes(node, rank):
    axis = node.params.get("axis")
    if axis is None or (isinstance(axis, (tuple, list)) and not axis):
        return list(range(rank))
    return sorted({int(a) % max(rank, 1) for a in (axis if isinstance(axis, (tuple, list))
                                                   else (axis,))})


def reduce_node(ctx, onnx_type, x, axes, keep, outputs=None):
    """One ONNX reduction over ``axes`` (a list), axes as input or attribute by opset."""
    if ctx.opset >= _AXES_INPUT_SINCE.get(onnx_type, 18):
        return ctx.make_node(onnx_type, [x, ctx.ints(axes, hint="axes")], outputs,
                             keepdims=int(keep))
    return ctx.make_node(onnx_type, [x], outputs, keepdims=int(keep), axes=axes)


def _prepare(ctx, node):
    (x,) = ctx.inputs(node)
    t_in, t_out = ctx.input_types(node)[0], ctx.output_types(node)[0]
    return ctx.cast(x, t_in.dtype, t_out.dtype), t_in, t_out


# -- logsumexp --------------------------------------------------------------------------------
def _export_logsumexp(ctx, node):
    """max + log(sum(exp(x - max))) with an infinite max replaced by 0 (as the kernel)."""
    x, t_in, t_out = _prepare(ctx, node)
    rank = len(t_in.shape)
    if rank == 0:
        ctx.make_node("Identity", [x], ctx.outputs(node))
        return
    axes = _axes(node, rank)
    keep = bool(node.params.get("keepdims"))
    m = reduce_node(ctx, "ReduceMax", x, axes, True)
    zero = scalar_const(ctx, 0, t_out.dtype)
    m = ctx.make_node("Where", [ctx.make_node("IsInf", [m]), zero, m], name="shift")
    e = ctx.make_node("Exp", [ctx.make_node("Sub", [x, m])])
    s = ctx.make_node("Log", [reduce_node(ctx, "ReduceSum", e, axes, keep)])
    if not keep:
        m = ctx.make_node("Squeeze", [m, ctx.ints(axes, hint="axes")])
    ctx.make_node("Add", [s, m], ctx.outputs(node))


def _import_logsumexp(ctx, node):
    return _import_reduce("logsumexp", 18)(ctx, node)


# -- var / std --------------------------------------------------------------------------------
def _dof(ctx, node, t_in, axes, dtype):
    """N - correction (at least 0) as a scalar of ``dtype``; N computed when symbolic."""
    from .reduce_more import _correction

    c = _correction(node.op, node.params.get("correction"), node.params.get("unbiased"))
    n = numel([t_in.shape[a] for a in axes])
    if not isinstance(n, Dim):
        return scalar_const(ctx, max(n - c, 0), dtype)
    size = ctx.cast(ctx.scalar_dim(n), DType.I64, dtype)
    dof = ctx.make_node("Sub", [size, scalar_const(ctx, c, dtype)], name="dof")
    return ctx.make_node("Max", [dof, scalar_const(ctx, 0, dtype)], name="dof")


def _export_moment(sqrt):
    def export(ctx, node):
        x, t_in, t_out = _prepare(ctx, node)
        rank = len(t_in.shape)
        axes = _axes(node, rank)
        keep = bool(node.params.get("keepdims"))
        if rank == 0:  # one element: 0 / (1 - correction)
            d = ctx.make_node("Sub", [x, x])
            ctx.make_node("Div", [d, _dof(ctx, node, t_in, axes, t_out.dtype)], ctx.outputs(node))
            return
        mean = reduce_node(ctx, "ReduceMean", x, axes, True)
        d = ctx.make_node("Sub", [x, mean])
        ss = reduce_node(ctx, "ReduceSum", ctx.make_node("Mul", [d, d]), axes, keep)
        dof = _dof(ctx, node, t_in, axes, t_out.dtype)
        if sqrt:
            ctx.make_node("Sqrt", [ctx.make_node("Div", [ss, dof])], ctx.outputs(node))
        else:
            ctx.make_node("Div", [ss, dof], ctx.outputs(node))
    return export


# -- norm -------------------------------------------------------------------------------------
def _export_norm(ctx, node):
    x, t_in, t_out = _prepare(ctx, node)
    rank = len(t_in.shape)
    order = norm_order(node.params.get("p", 2))
    out = ctx.outputs(node)
    if rank == 0:
        if order == 0:
            nz = ctx.make_node("Not", [ctx.make_node("Equal", [x, scalar_const(ctx, 0, t_out.dtype)])])
            ctx.make_node("Cast", [nz], out, to=ctx.onnx_dtype(t_out.dtype))
        else:
            ctx.make_node("Abs", [x], out)
        return
    axes = _axes(node, rank)
    keep = bool(node.params.get("keepdims"))
    if order == 1:
        reduce_node(ctx, "ReduceL1", x, axes, keep, out)
    elif order == 2:
        reduce_node(ctx, "ReduceL2", x, axes, keep, out)
    elif order in (math.inf, -math.inf):
        reduce_node(ctx, "ReduceMax" if order > 0 else "ReduceMin", ctx.make_node("Abs", [x]),
                    axes, keep, out)
    elif order == 0:
        nz = ctx.make_node("Not", [ctx.make_node("Equal", [x, scalar_const(ctx, 0, t_out.dtype)])])
        reduce_node(ctx, "ReduceSum", ctx.make_node("Cast", [nz], to=ctx.onnx_dtype(t_out.dtype)),
                    axes, keep, out)
    else:
        powed = ctx.make_node("Pow", [ctx.make_node("Abs", [x]),
                                      scalar_const(ctx, order, t_out.dtype)])
        s = reduce_node(ctx, "ReduceSum", powed, axes, keep)
        ctx.make_node("Pow", [s, scalar_const(ctx, 1.0 / order, t_out.dtype)], out)


def _import_norm(p):
    def rule(ctx, node):
        x = node.inputs[0]
        if not ctx.type(x).dtype.is_float:
            ctx.unsupported(f"{node.op_type} of an integer tensor")
        axes = ctx.ints(node, 1, "axes") if ctx.opset >= 18 else node.attr("axes")
        keep = bool(node.attr("keepdims", 1))
        if not axes:
            if node.attr("noop_with_empty_axes", 0):
                return [ctx.emit("abs", [x])]
            axes = None
        rank = ctx.rank(x)
        axis = None if axes is None else tuple(sorted(a % max(rank, 1) for a in axes))
        return [ctx.emit("norm", [x], p=p, axis=axis, keepdims=keep)]
    return rule


# -- argmin -----------------------------------------------------------------------------------
def _export_argmin(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    axis = node.params.get("axis")
    keep = int(bool(node.params.get("keepdims")))
    out = ctx.outputs(node)
    if len(t.shape) == 0:
        ctx.make_node("Identity", [ctx.const(np.array(0, np.int64))], out)
        return
    if axis is None:
        flat = ctx.make_node("Reshape", [x, ctx.ints([-1], hint="shape")], name="flat")
        if keep:
            am = ctx.make_node("ArgMin", [flat], axis=0, keepdims=1)
            ctx.make_node("Reshape", [am, ctx.ints([1] * len(t.shape), hint="shape")], out)
        else:
            ctx.make_node("ArgMin", [flat], out, axis=0, keepdims=0)
        return
    ctx.make_node("ArgMin", [x], out, axis=int(axis) % len(t.shape), keepdims=keep)


def _import_argmin(ctx, node):
    x = node.inputs[0]
    axis = node.attr("axis", 0)
    keep = bool(node.attr("keepdims", 1))
    if not node.attr("select_last_index", 0):
        return [ctx.emit("argmin", [x], axis=axis, keepdims=keep)]
    # the last minimum: argmin of the reversed axis, counted from the end
    shape = ctx.type(x).shape
    axis %= len(shape)
    n = shape[axis]
    if isinstance(n, Dim):
        ctx.unsupported("ArgMin select_last_index=1 over a symbolic axis")
    rev = ctx.emit("flip", [x], axes=(axis,))
    am = ctx.emit("argmin", [rev], axis=axis, keepdims=keep)
    return [ctx.emit("sub", [np.array(n - 1, dtype=np.int64), am])]


# -- cumsum / cumprod -------------------------------------------------------------------------
def _export_cumsum(ctx, node):
    x, t_in, t_out = _prepare(ctx, node)
    if not t_in.shape:
        ctx.make_node("Identity", [x], ctx.outputs(node))
        return
    axis = int(node.params["axis"]) % len(t_in.shape)
    ctx.make_node("CumSum", [x, ctx.const(np.array(axis, np.int64), hint="axis")],
                  ctx.outputs(node))


def _import_cumsum(ctx, node):
    x, a = node.inputs[0], node.inputs[1]
    axis = ctx.const(a)
    if axis is None:
        ctx.unsupported("CumSum's axis must be a constant")
    want = ctx.type(x).dtype
    rank = ctx.rank(x)
    axis = int(np.asarray(axis).reshape(-1)[0])
    if not -rank <= axis < max(rank, 1):
        ctx.unsupported(f"CumSum axis {axis} out of range for rank {rank}")
    axis %= max(rank, 1)
    reverse = bool(node.attr("reverse", 0))
    if reverse:  # a sum from the end: the forward sum of the flipped axis, flipped back
        x = ctx.emit("flip", [x], axes=(axis,))
    out = ctx.emit("cumsum", [x], axis=axis)
    if node.attr("exclusive", 0):  # the sum shifted one place, 0 first: exact
        out = ctx.emit("pad", [out], pad=(0, 0) * (rank - 1 - axis) + (1, -1))
    if reverse:
        out = ctx.emit("flip", [out], axes=(axis,))
    if ctx.type(out).dtype != want:
        out = ctx.emit("cast", [out], dtype=want)
    return [out]


def _export_cumprod(ctx, node):
    """out[i] = prod_j where(j <= i, x[j], 1): x with a new axis before ``axis`` meets a
    lower-triangular [n, n] mask built with Range, then ReduceProd over the old axis."""
    x, t_in, t_out = _prepare(ctx, node)
    rank = len(t_in.shape)
    if rank == 0:
        ctx.make_node("Identity", [x], ctx.outputs(node))
        return
    axis = int(node.params["axis"]) % rank
    n = ctx.scalar_dim(t_in.shape[axis])
    zero, one = (ctx.const(np.array(v, np.int64)) for v in (0, 1))
    r = ctx.make_node("Range", [zero, n, one], name="positions")
    rows = ctx.make_node("Unsqueeze", [r, ctx.ints([1], hint="axes")])
    cols = ctx.make_node("Unsqueeze", [r, ctx.ints([0], hint="axes")])
    mask = ctx.make_node("LessOrEqual", [cols, rows], name="lower")
    trailing = rank - axis - 1
    if trailing:
        mask = ctx.make_node("Unsqueeze", [mask, ctx.ints(range(2, 2 + trailing), hint="axes")])
    xu = ctx.make_node("Unsqueeze", [x, ctx.ints([axis], hint="axes")])
    picked = ctx.make_node("Where", [mask, xu, scalar_const(ctx, 1, t_out.dtype)])
    reduce_node(ctx, "ReduceProd", picked, [axis + 1], False, ctx.outputs(node))


# -- sort / argsort / topk --------------------------------------------------------------------
def _topk_node(ctx, node, k, largest, outputs):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    if not t.shape:
        ctx.unsupported("sorting a 0-d tensor")
    if t.dtype == DType.BOOL:
        x = ctx.cast(x, DType.BOOL, DType.I32)
    axis = int(node.params["axis"]) % len(t.shape)
    vals, idx = outputs
    if t.dtype == DType.BOOL:
        raw = ctx.fresh("values")
        ctx.make_node("TopK", [x, ctx.dim(k)], [raw, idx], axis=axis, largest=int(largest),
                      sorted=1)
        ctx.make_node("Cast", [raw], [vals], to=ctx.onnx_dtype(DType.BOOL))
        return
    ctx.make_node("TopK", [x, ctx.dim(k)], [vals, idx], axis=axis, largest=int(largest), sorted=1)


def _size(ctx, node):
    t = ctx.input_types(node)[0]
    return t.shape[int(node.params["axis"]) % max(len(t.shape), 1)] if t.shape else 1


def _export_sort(ctx, node):
    _topk_node(ctx, node, _size(ctx, node), node.params.get("descending", False),
               ctx.outputs(node))


def _export_argsort(ctx, node):
    _topk_node(ctx, node, _size(ctx, node), node.params.get("descending", False),
               [ctx.fresh("values"), ctx.outputs(node)[0]])


def _export_topk(ctx, node):
    _topk_node(ctx, node, node.params["k"], node.params.get("largest", True), ctx.outputs(node))


def _import_topk(ctx, node):
    x = node.inputs[0]
    if ctx.opset < 10:
        k = node.attr("k")
    else:
        k = ctx.shape_param(node.inputs[1], "the TopK k")
        k = k[0] if len(k) == 1 else ctx.unsupported("TopK's k must hold one value")
    values, indices = ctx.emit("topk", [x], k=k, axis=node.attr("axis", -1),
                               largest=bool(node.attr("largest", 1)),
                               sorted=bool(node.attr("sorted", 1)))
    return [values, indices]


SPEC = {
    "logsumexp": OnnxSpec(export=_export_logsumexp,
                          imports={"ReduceLogSumExp": _import_logsumexp}),
    "var": OnnxSpec(export=_export_moment(False)),
    "std": OnnxSpec(export=_export_moment(True)),
    "norm": OnnxSpec(export=_export_norm,
                     imports={"ReduceL1": _import_norm(1), "ReduceL2": _import_norm(2)}),
    "amax": OnnxSpec(export=_export_reduce("ReduceMax", 18)),
    "amin": OnnxSpec(export=_export_reduce("ReduceMin", 18)),
    "prod": OnnxSpec(export=_export_reduce("ReduceProd", 18),
                     imports={"ReduceProd": _import_reduce("prod", 18)}),
    "argmin": OnnxSpec(export=_export_argmin, imports={"ArgMin": _import_argmin}),
    "cumsum": OnnxSpec(export=_export_cumsum, imports={"CumSum": _import_cumsum}),
    "cumprod": OnnxSpec(export=_export_cumprod),
    "sort": OnnxSpec(export=_export_sort),
    "argsort": OnnxSpec(export=_export_argsort),
    "topk": OnnxSpec(export=_export_topk, imports={"TopK": _import_topk}),
}


# -- ReduceSumSquare / ReduceLogSum (claimed by sum: both are a sum of something) --------------
def _import_sum_of(before=None, after=None):
    """``after(sum(before(x)))`` over constant axes, ONNX's rules for empty axes; run-time
    axes go to shape_from_data (which claims the same op types)."""
    rule = _import_reduce("sum", 18)

    def import_(ctx, node):
        from onemodel.formats.onnx_api import OnnxNode

        x = node.inputs[0]
        if not ctx.type(x).dtype.is_float and after is not None:
            ctx.unsupported(f"{node.op_type} of an integer tensor")
        if ctx.type(x).dtype == DType.BOOL:
            ctx.unsupported(f"{node.op_type} of a bool tensor")
        if ctx.opset >= 18 and node.input(1) and ctx.const(node.input(1)) is None:
            ctx.unsupported("input 1 (axes) must be a constant")
        y = ctx.emit(before, [x, x]) if before else ctx.entry(x)
        noop = node.attr("noop_with_empty_axes", 0) and not (ctx.ints(node, 1, "axes") if
                                                                 ctx.opset >= 18 else
                                                                 node.attr("axes"))
        if noop:  # ONNX: the input itself, not its square or log
            return [ctx.emit("identity", [x])]
        inner = OnnxNode("ReduceSum", list(node.inputs), node.outputs, node.attrs, node.name)
        inner.inputs[0] = ctx.fresh("sum_of_")
        ctx.entries[inner.inputs[0]] = y
        (out,) = rule(ctx, inner)  # reads axes from the input or the attribute by opset
        return [ctx.emit(after, [out]) if after else out]

    return import_


SUM_IMPORTS = {"ReduceSumSquare": _import_sum_of(before="mul"),
               "ReduceLogSum": _import_sum_of(after="log")}
