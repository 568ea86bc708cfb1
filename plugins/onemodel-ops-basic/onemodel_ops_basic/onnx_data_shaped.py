"""ONNX mapping of ``shape_from_data`` (data_shaped.py): shape-like inputs that are run-time
tensors. Each import rule here declines (`ctx.decline`) a node whose shape, axes and bounds
are constants or sizes of input axes, so the ops with static params (``reshape``, ``sum``...)
keep those: the fast path. Otherwise the node becomes ``shape_from_data`` with its inputs as
ONNX orders them, and every output size the import cannot know is a new data size
(``ctx.data_dim()``), bound when the node runs."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.registry import OnnxSpec

from .data_shaped import KINDS, PAD_MODES, SELECTING

#: the inputs of each kind that hold a shape, axes, sizes or bounds
_SHAPE_LIKE = {"ConstantOfShape": (0,), "Range": (0, 1, 2), "Slice": (1, 2, 3, 4),
               "Pad": (1, 2, 3)}


def _is_data(ctx, name: str) -> bool:
    return bool(name) and ctx.symbolic(name) is None and ctx.const(name) is None


def _length(ctx, name: str, what: str) -> int:
    """The number of entries of a 1-D shape-like tensor (its length must be static)."""
    shape = ctx.type(name).shape
    if len(shape) != 1 or not isinstance(shape[0], int):
        ctx.unsupported(f"{what} fed at run time must be a 1-D tensor of fixed length, got "
                        f"shape {[str(d) for d in shape]}")
    return shape[0]


def _fresh(ctx, n: int) -> tuple:
    return tuple(ctx.data_dim() for _ in range(n))


def _dims(ctx, kind: str, node, ins: list) -> tuple:
    if kind == "ConstantOfShape":
        return (_fresh(ctx, _length(ctx, ins[0], "the ConstantOfShape shape")),)
    if kind == "Range":
        return ((ctx.data_dim(),),)
    x = ctx.type(ins[0]).shape
    n = len(x)
    if kind == "NonZero":
        return ((max(n, 1), ctx.data_dim()),)
    if kind == "Compress":
        axis = node.attr("axis", 0) % n
        return (tuple(ctx.data_dim() if i == axis else d for i, d in enumerate(x)),)
    if kind == "Unique":  # one count sizes the values, the first indices and the counts
        axis, count = node.attr("axis", 0) % n, ctx.data_dim()
        return (tuple(count if i == axis else d for i, d in enumerate(x)), (count,),
                (x[axis],), (count,))
    if kind in ("CumSum", "CumProd"):
        return (tuple(x),)
    if kind == "TopK":
        axis = node.attr("axis", -1) % n
        out = tuple(ctx.data_dim() if i == axis else d for i, d in enumerate(x))
        return (out, out)
    if kind == "Pad":
        return (_pad_dims(ctx, node, ins, x),)
    if kind == "Reshape":
        return (_fresh(ctx, _length(ctx, ins[1], "the Reshape target")),)
    if kind == "Expand":
        return (_fresh(ctx, max(n, _length(ctx, ins[1], "the Expand shape"))),)
    if kind == "Slice":
        axes = ctx.const(ins[3]) if ins[3] else None
        if ins[3] and axes is None:
            return (_fresh(ctx, n),)
        changed = ({int(a) % n for a in np.asarray(axes).reshape(-1)} if axes is not None
                   else set(range(_length(ctx, ins[1], "Slice starts"))))
        return (tuple(ctx.data_dim() if i in changed else d for i, d in enumerate(x)),)
    if kind == "Split":
        axis = node.attr("axis", 0) % n
        return tuple(tuple(ctx.data_dim() if i == axis else d for i, d in enumerate(x))
                     for o in node.outputs)
    k = _length(ctx, ins[1], f"{kind} axes")
    if kind == "Squeeze":
        if k > n:
            ctx.unsupported(f"Squeeze of {k} axes of a rank-{n} tensor")
        return (_fresh(ctx, n - k),)
    if kind == "Unsqueeze":
        return (_fresh(ctx, n + k),)
    keep = bool(node.attr("keepdims", 1))
    if k == 0:  # the axes are empty whatever their values
        if node.attr("noop_with_empty_axes", 0):
            return (tuple(x),)
        return ((1,) * n if keep else (),)
    if not keep and k > n:
        ctx.unsupported(f"{kind} over {k} axes of a rank-{n} tensor")
    return (_fresh(ctx, n if keep else n - k),)


def _pad_dims(ctx, node, ins, x) -> tuple:
    """Pad's output shape: computed when pads and axes are constants (a run-time
    constant_value or mode wrap), else a data size on each axis the pads may change."""
    n = len(x)
    pads = ctx.const(ins[1]) if ins[1] else None
    axes = ctx.const(ins[3]) if ins[3] else np.arange(n)
    if axes is None:
        return _fresh(ctx, n)
    axes = [int(a) % n for a in np.asarray(axes).reshape(-1)]
    if pads is None:
        return tuple(ctx.data_dim() if i in axes else d for i, d in enumerate(x))
    pads = [int(v) for v in np.asarray(pads).reshape(-1)]
    if len(pads) != 2 * len(axes):
        ctx.unsupported(f"Pad with {len(pads)} pads for {len(axes)} axes")
    out = list(x)
    for i, a in enumerate(axes):
        out[a] = out[a] + pads[i] + pads[len(axes) + i]
    return tuple(out)


def _import(kind: str):
    def rule(ctx, node):
        ins = list(node.inputs) + [""] * (5 - len(node.inputs))
        positions = _SHAPE_LIKE.get(kind, (1,))
        if kind in ("Compress", "Unique") and node.attr("axis") is None:  # the flattened input
            ins[0] = ctx.emit("flatten", [ins[0]])
        wrap = kind == "Pad" and node.attr("mode", "constant") == "wrap"  # pad has no wrap
        if ctx.opset < 11 and kind in ("Pad", "CumSum", "CumProd"):
            ctx.decline(f"{kind}-{ctx.opset} takes its pads as an attribute")
        if kind not in SELECTING and not wrap and \
                not any(_is_data(ctx, ins[i]) for i in positions):
            ctx.decline(f"{kind}'s shape-like inputs are static or sizes of input axes")
        as_bool = False
        if kind in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"):
            if ctx.type(ins[0]).dtype == DType.BOOL:
                if kind in ("ReduceSum", "ReduceMean"):
                    ctx.unsupported(f"{kind} of a bool tensor")
                # max/min of bools is any/all: reduce 0/1 as u8 and cast back
                as_bool, ins[0] = True, ctx.cast(ins[0], DType.U8)
        params = {"kind": kind, "dims": _dims(ctx, kind, node, ins)}
        if kind == "Reshape":
            params["allowzero"] = bool(node.attr("allowzero", 0))
        elif kind in ("Split", "Compress", "Unique"):
            params["axis"] = node.attr("axis", 0) % len(ctx.type(ins[0]).shape)
            if kind == "Unique":
                params["keepdims"] = bool(node.attr("sorted", 1))
        elif kind == "TopK":
            if ctx.opset < 10:
                ctx.decline("TopK-1 takes k as an attribute")
            params["axis"] = node.attr("axis", -1) % len(ctx.type(ins[0]).shape)
            params["largest"] = bool(node.attr("largest", 1))
            params["sorted"] = bool(node.attr("sorted", 1))
        elif kind.startswith("Reduce"):
            params["keepdims"] = bool(node.attr("keepdims", 1))
            params["noop_with_empty_axes"] = bool(node.attr("noop_with_empty_axes", 0))
        elif kind == "Pad":
            params["mode"] = node.attr("mode", "constant")
            if params["mode"] not in PAD_MODES:
                ctx.unsupported(f"Pad mode {params['mode']!r}")
        elif kind in ("CumSum", "CumProd"):
            params["exclusive"] = bool(node.attr("exclusive", 0))
            params["reverse"] = bool(node.attr("reverse", 0))
        elif kind == "ConstantOfShape":
            v = node.attr("value")
            v = np.zeros(1, np.float32) if v is None else v
            params["value"] = v.reshape(-1)[0].item()
            params["dtype"] = DType.from_numpy(v.dtype)
        out = ctx.emit("shape_from_data", ins[:5], **params)
        if as_bool:
            out = ctx.cast(out, DType.BOOL)
        return list(out) if isinstance(out, tuple) else [out]
    return rule


def _export(ctx, node):
    p = node.params
    kind = p["kind"]
    ins = [ctx.name_of(i) for i in node.inputs]
    while ins and not ins[-1]:
        ins.pop()
    attrs = {}
    if kind == "Reshape":
        attrs["allowzero"] = 1 if p["allowzero"] else None
    elif kind in ("Split", "Compress", "Unique"):
        attrs["axis"] = int(p["axis"])
        if kind == "Unique":
            attrs["sorted"] = int(bool(p["keepdims"]))
    elif kind == "TopK":
        attrs.update(axis=int(p["axis"]), largest=int(p["largest"]), sorted=int(p["sorted"]))
    elif kind == "Pad":
        attrs["mode"] = p["mode"]
        if ctx.opset < 18 and node.inputs[3:4] and node.inputs[3]:
            ctx.unsupported(node, "Pad's axes input needs opset 18")
    elif kind in ("CumSum", "CumProd"):
        if kind == "CumProd" and ctx.opset < 26:
            ctx.unsupported(node, f"CumProd needs opset 26 (exporting at {ctx.opset})")
        attrs["exclusive"] = 1 if p["exclusive"] else None
        attrs["reverse"] = 1 if p["reverse"] else None
    elif kind.startswith("Reduce"):
        since = 13 if kind == "ReduceSum" else 18
        if ctx.opset < since:
            ctx.unsupported(node, f"{kind} axes as an input need opset {since}")
        attrs["keepdims"] = int(bool(p["keepdims"]))
        attrs["noop_with_empty_axes"] = 1 if p["noop_with_empty_axes"] else None
    elif kind == "ConstantOfShape":
        from onemodel.formats.onnx_api import tensor_attribute

        dtype = p["dtype"] or DType.F32
        attrs["value"] = tensor_attribute(np.array([p["value"]], dtype=dtype.numpy))
    ctx.make_node(kind, ins, ctx.outputs(node), **attrs)


SPEC = OnnxSpec(export=_export, imports={kind: _import(kind) for kind in KINDS})
