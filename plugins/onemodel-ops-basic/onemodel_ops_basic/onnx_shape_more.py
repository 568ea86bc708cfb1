"""ONNX mappings of shape_more.py, index_more.py, factory_more.py and linalg_more.py (merged
into ``ONNX`` by plugin.py).

Direct ONNX ops where they exist (Tile, Pad, Gather, OneHot, MatMul, Transpose); stack, unbind,
flip, roll, narrow, masked_fill and the factories are written with Unsqueeze/Concat, Split/
Squeeze, Slice, Where and Expand. Symbolic sizes are computed from the inputs (``ctx.dim``).
"""
from __future__ import annotations

import numpy as np

from onemodel.core import DType, Dim
from onemodel.formats.onnx_lowering import INT64_MAX, INT64_MIN, scalar_const
from onemodel.registry import OnnxSpec

from .onnx_mapping import _export_as_reshape, _export_fill, _export_split
from .shape_more import _movedim_perm, _tile_sizes, pad_widths


def _rank(ctx, node):
    return len(ctx.input_types(node)[0].shape)


# -- stack / unbind / chunk -------------------------------------------------------------------
def _export_stack(ctx, node):
    ins, types = ctx.inputs(node), ctx.input_types(node)
    out = ctx.output_types(node)[0]
    a = int(node.params["axis"]) % (len(types[0].shape) + 1)
    parts = [ctx.make_node("Unsqueeze", [ctx.cast(i, t.dtype, out.dtype),
                                         ctx.ints([a], hint="axes")])
             for i, t in zip(ins, types)]
    if len(parts) == 1:
        ctx.make_node("Identity", parts, ctx.outputs(node))
    else:
        ctx.make_node("Concat", parts, ctx.outputs(node), axis=a)


def _export_unbind(ctx, node):
    (x,) = ctx.inputs(node)
    a = int(node.params["axis"]) % _rank(ctx, node)
    outs = ctx.outputs(node)
    pieces = [x] if len(outs) == 1 else ctx.make_node(
        "Split", [x, ctx.ints([1] * len(outs), hint="split")], n_outputs=len(outs), axis=a)
    for piece, out in zip(pieces, outs):
        ctx.make_node("Squeeze", [piece, ctx.ints([a], hint="axes")], [out])


# -- flip / roll ------------------------------------------------------------------------------
def _export_flip(ctx, node):
    (x,) = ctx.inputs(node)
    rank = _rank(ctx, node)
    axes = node.params["axes"]
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    if rank == 0 or not axes:
        ctx.make_node("Identity", [x], ctx.outputs(node))
        return
    axes = sorted({int(a) % rank for a in axes})
    shape = ctx.input_types(node)[0].shape
    fixed = [a for a in axes if not isinstance(shape[a], Dim)]
    moving = [a for a in axes if isinstance(shape[a], Dim)]
    cur, outs = x, ctx.outputs(node)
    if fixed:
        k = len(fixed)
        cur = ctx.make_node("Slice", [x, ctx.ints([-1] * k, hint="starts"),
                                      ctx.ints([INT64_MIN] * k, hint="ends"),
                                      ctx.ints(fixed, hint="axes"),
                                      ctx.ints([-1] * k, hint="steps")],
                            None if moving else outs)
    for i, a in enumerate(moving):  # a symbolic axis: Gather of the positions n-1 .. 0
        n = ctx.scalar_dim(shape[a])  # (n - 1) - Range(0, n, 1): ONNX Runtime's optimizer
        one = ctx.const(np.array(1, np.int64))  # mis-sizes a Range with a negative step
        up = ctx.make_node("Range", [ctx.const(np.array(0, np.int64)), n, one], name="positions")
        rev = ctx.make_node("Sub", [ctx.make_node("Sub", [n, one], name="last"), up],
                            name="reversed")
        cur = ctx.make_node("Gather", [cur, rev], outs if i == len(moving) - 1 else None, axis=a)


def _roll_axis(ctx, x, n, shift, axis, outputs=None):
    """x rolled by ``shift`` along ``axis`` of size ``n``: Concat(x[n - s:], x[:n - s]) with
    s = shift mod n computed at run time for a symbolic n."""
    size = ctx.dim(n)
    if isinstance(n, Dim):
        s = ctx.make_node("Mod", [ctx.ints([shift], hint="shift"), size], name="shift", fmod=0)
        cut = ctx.make_node("Sub", [size, s], name="cut")
    else:
        cut = ctx.ints([(n - shift % n) % n if n else 0], hint="cut")
    ax = ctx.ints([axis], hint="axes")
    tail = ctx.make_node("Slice", [x, cut, ctx.ints([INT64_MAX], hint="ends"), ax])
    head = ctx.make_node("Slice", [x, ctx.ints([0], hint="starts"), cut, ax])
    return ctx.make_node("Concat", [tail, head], outputs, axis=axis)


def _export_roll(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    shifts, axes = node.params["shifts"], node.params.get("axes")
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    outs = ctx.outputs(node)
    if axes is None:
        from onemodel.core.types import numel

        flat = ctx.make_node("Reshape", [x, ctx.ints([-1], hint="shape")], name="flat")
        rolled = _roll_axis(ctx, flat, numel(t.shape), shifts[0], 0)
        ctx.make_node("Reshape", [rolled, ctx.shape(t.shape)], outs)
        return
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    cur = x
    for k, (s, a) in enumerate(zip(shifts, axes)):
        a = int(a) % len(t.shape)
        cur = _roll_axis(ctx, cur, t.shape[a], int(s), a, outs if k == len(axes) - 1 else None)


# -- repeat / tile / pad ----------------------------------------------------------------------
def _export_repeat(sizes_of):
    def export(ctx, node):
        (x,) = ctx.inputs(node)
        t = ctx.input_types(node)[0]
        sizes = list(sizes_of(node, t))
        if len(sizes) > len(t.shape):
            padded = [1] * (len(sizes) - len(t.shape)) + list(t.shape)
            x = ctx.make_node("Reshape", [x, ctx.shape(padded)], name="lead")
        ctx.make_node("Tile", [x, ctx.shape(sizes)], ctx.outputs(node))
    return export


def _import_tile(ctx, node):
    reps = ctx.shape_param(node.inputs[1], "the Tile repeats")
    return [ctx.emit("tile", [node.inputs[0]], dims=tuple(reps))]


_ONNX_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def _export_pad(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    mode = node.params.get("mode", "constant")
    widths = pad_widths("pad", t.shape, node.params["pad"], mode)
    pads = [b for b, _ in widths] + [a for _, a in widths]
    ins = [x, ctx.ints(pads, hint="pads")]
    if mode == "constant":
        ins.append(scalar_const(ctx, node.params.get("value", 0.0), t.dtype))
    ctx.make_node("Pad", ins, ctx.outputs(node), mode=_ONNX_MODE[mode])


def _import_pad(ctx, node):
    x = node.inputs[0]
    rank = ctx.rank(x)
    mode = node.attr("mode", "constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    back = {v: k for k, v in _ONNX_MODE.items()}
    if mode not in back:
        ctx.unsupported(f"Pad mode {mode!r}")
    pads = ctx.ints(node, 1, "pads") if ctx.opset >= 11 else node.attr("pads")
    axes = ctx.ints(node, 3, "axes") if ctx.opset >= 18 and node.input(3) else None
    axes = [a % rank for a in axes] if axes is not None else list(range(rank))
    k = len(axes)
    widths = {a: (pads[i], pads[i + k]) for i, a in enumerate(axes)}
    value = 0.0
    if node.input(2):
        c = ctx.const(node.input(2))
        if c is None:
            ctx.unsupported("Pad's constant_value must be a constant")
        value = np.asarray(c).reshape(-1)[0].item() if np.asarray(c).size else 0.0
    torch_pad = []
    for a in range(rank - 1, -1, -1):
        torch_pad += list(widths.get(a, (0, 0)))
    while len(torch_pad) > 2 and torch_pad[-2:] == [0, 0]:
        torch_pad = torch_pad[:-2]
    return [ctx.emit("pad", [x], pad=tuple(torch_pad), mode=back[mode], value=value)]


# -- movedim / narrow / index_select / masked_fill / one_hot ----------------------------------
def _export_movedim(ctx, node):
    (x,) = ctx.inputs(node)
    perm = _movedim_perm(_rank(ctx, node), node.params["source"], node.params["destination"])
    ctx.make_node("Transpose", [x], ctx.outputs(node), perm=list(perm))


def _export_narrow(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    from .index_more import _narrow_bounds

    a, start, length = _narrow_bounds(t.shape, node.params["axis"], node.params["start"],
                                      node.params["length"])
    ctx.make_node("Slice", [x, ctx.shape([start]), ctx.shape([start + length]),
                            ctx.ints([a], hint="axes")], ctx.outputs(node))


def _export_index_select(ctx, node):
    x, idx = ctx.inputs(node)
    t, ti = ctx.input_types(node)
    if not t.shape:
        ctx.make_node("Identity", [x], ctx.outputs(node))
        return
    if not ti.shape:
        idx = ctx.make_node("Reshape", [idx, ctx.ints([1], hint="shape")])
    ctx.make_node("Gather", [x, idx], ctx.outputs(node),
                  axis=int(node.params["axis"]) % len(t.shape))


def _export_masked_fill(ctx, node):
    x, mask = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    ctx.make_node("Where", [mask, scalar_const(ctx, node.params["value"], t.dtype), x],
                  ctx.outputs(node))


def _export_one_hot(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    n = node.params["num_classes"]
    ctx.make_node("OneHot", [ctx.cast(x, t.dtype, DType.I64), ctx.dim(n),
                             ctx.const(np.array([0, 1], np.int64), hint="values")],
                  ctx.outputs(node), axis=-1)


def _import_one_hot(ctx, node):
    x = node.inputs[0]
    depth = ctx.shape_param(node.inputs[1], "the OneHot depth")
    values = ctx.const(node.inputs[2])
    axis = node.attr("axis", -1)
    if axis not in (-1, ctx.rank(x)):
        ctx.unsupported(f"OneHot along axis {axis} (only the last axis)")
    if values is None or np.asarray(values).reshape(-1).tolist() != [0, 1]:
        ctx.unsupported("OneHot values other than [0, 1]")
    if not ctx.type(x).dtype.is_int:
        x = ctx.emit("cast", [x], dtype=DType.I64)
    out = ctx.emit("one_hot", [x], num_classes=depth[0])
    want = DType.from_numpy(np.asarray(values).dtype)
    if want != DType.I64:
        out = ctx.emit("cast", [out], dtype=want)
    return [out]


# -- factories and products -------------------------------------------------------------------
def _export_like(value_of):
    def export(ctx, node):
        x = ctx.inputs(node)[0]
        out = ctx.output_types(node)[0]
        shape = ctx.make_node("Shape", [x], name="shape")
        ctx.make_node("Expand", [scalar_const(ctx, value_of(node), out.dtype), shape],
                      ctx.outputs(node))
    return export


def _export_linspace(ctx, node):
    from .factory_more import _linspace

    p = node.params
    arr = _linspace(p["start"], p["end"], p["steps"], p.get("dtype"))
    ctx.make_node("Identity", [ctx.const(arr, hint="linspace")], ctx.outputs(node))


def _export_product(ctx, node):
    a, b = ctx.inputs(node)
    ta, tb = ctx.input_types(node)
    out = ctx.output_types(node)[0]
    a, b = ctx.cast(a, ta.dtype, out.dtype), ctx.cast(b, tb.dtype, out.dtype)
    if node.op == "outer":
        a = ctx.make_node("Unsqueeze", [a, ctx.ints([1], hint="axes")])
        b = ctx.make_node("Unsqueeze", [b, ctx.ints([0], hint="axes")])
        ctx.make_node("Mul", [a, b], ctx.outputs(node))
    else:
        ctx.make_node("MatMul", [a, b], ctx.outputs(node))


SPEC = {
    "stack": OnnxSpec(export=_export_stack),
    "unbind": OnnxSpec(export=_export_unbind),
    "chunk": OnnxSpec(export=_export_split),
    "flip": OnnxSpec(export=_export_flip),
    "roll": OnnxSpec(export=_export_roll),
    "repeat": OnnxSpec(export=_export_repeat(lambda node, t: node.params["sizes"])),
    "tile": OnnxSpec(export=_export_repeat(lambda node, t: _tile_sizes(t.shape,
                                                                       node.params["dims"])),
                     imports={"Tile": _import_tile}),
    "pad": OnnxSpec(export=_export_pad, imports={"Pad": _import_pad}),
    "movedim": OnnxSpec(export=_export_movedim),
    "unflatten": OnnxSpec(export=_export_as_reshape),
    "masked_fill": OnnxSpec(export=_export_masked_fill),
    "index_select": OnnxSpec(export=_export_index_select),
    "narrow": OnnxSpec(export=_export_narrow),
    "one_hot": OnnxSpec(export=_export_one_hot, imports={"OneHot": _import_one_hot}),
    "ones_like": OnnxSpec(export=_export_like(lambda node: 1)),
    "full_like": OnnxSpec(export=_export_like(lambda node: node.params["value"])),
    "linspace": OnnxSpec(export=_export_linspace),
    "bmm": OnnxSpec(export=_export_product),
    "outer": OnnxSpec(export=_export_product),
}
