"""ONNX mappings of shape_more.py, index_more.py, factory_more.py and linalg_more.py (merged
into ``ONNX`` by plugin.py).

Direct ONNX ops where they exist (Tile, Pad, Gather, OneHot, MatMul, Transpose); stack, unbind,
flip, roll, narrow, masked_fill and the factories are written with Unsqueeze/Concat, Split/
Squeeze, Slice, Where and Expand. Symbolic sizes are computed from the inputs (``ctx.dim``).
"""
from __future__ import annotations

import numpy as np

from onemodel.core import DType, Dim
from onemodel.core.types import same_dim
from onemodel.formats.onnx_lowering import INT64_MAX, INT64_MIN, scalar_const
from onemodel.registry import OnnxSpec

from .onnx_mapping import _export_as_reshape, _export_split
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


_ONNX_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
              "circular": "wrap"}
WRAP_OPSET = 19  # Pad's mode "wrap" exists from opset 19


def _export_circular(ctx, x, widths, out):
    """Circular padding below opset 19: per padded axis, Concat(x[-before:], x, x[:after])."""
    padded = [(a, w) for a, w in enumerate(widths) if w != (0, 0)]
    for k, (a, (before, after)) in enumerate(padded):
        parts = [ctx.make_node("Slice", [x, ctx.ints([-before]), ctx.ints([2 ** 62]),
                                         ctx.ints([a])])] if before else []
        parts.append(x)
        if after:
            parts.append(ctx.make_node("Slice", [x, ctx.ints([0]), ctx.ints([after]),
                                                 ctx.ints([a])]))
        x = ctx.make_node("Concat", parts, out if k == len(padded) - 1 else None, axis=a)
    if not padded:
        ctx.make_node("Identity", [x], out)


def _export_pad(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    mode = node.params.get("mode", "constant")
    widths = pad_widths("pad", t.shape, node.params["pad"], mode)
    if mode == "circular" and ctx.opset < WRAP_OPSET:
        return _export_circular(ctx, x, widths, ctx.outputs(node))
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


# -- scatter / scatter_add / diag / einsum / repeat_interleave --------------------------------
def _export_scatter(reduction):
    def export(ctx, node):
        x, idx, src = ctx.inputs(node)
        tx, ti, ts = ctx.input_types(node)
        src = ctx.cast(src, ts.dtype, tx.dtype)
        if not all(same_dim(a, b) for a, b in zip(ti.shape, ts.shape)):  # src's leading part
            src = ctx.make_node("Slice", [src, ctx.ints([0] * len(ti.shape), hint="starts"),
                                          ctx.shape(ti.shape),
                                          ctx.ints(range(len(ti.shape)), hint="axes")])
        ctx.make_node("ScatterElements", [x, ctx.cast(idx, ti.dtype, DType.I64), src],
                      ctx.outputs(node), axis=int(node.params["axis"]) % len(tx.shape),
                      reduction=reduction)
    return export


def _import_scatter_elements(ctx, node):
    reduction = node.attr("reduction", "none")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    op = {"none": "scatter", "add": "scatter_add"}.get(reduction)
    if op is None:
        ctx.unsupported(f"ScatterElements with reduction {reduction!r}")
    x, idx, upd = node.inputs[0], node.inputs[1], node.inputs[2]
    axis = node.attr("axis", 0) % ctx.rank(x)
    n = ctx.type(x).shape[axis]
    known = ctx.const(idx)
    if known is not None:  # ONNX counts negative positions from the end; torch's scatter does not
        known = np.asarray(known)
        if isinstance(n, Dim) and (known < 0).any():
            ctx.unsupported("ScatterElements with negative indices on a symbolic axis")
        idx = np.where(known < 0, known + (0 if isinstance(n, Dim) else n), known)
    elif isinstance(n, Dim):
        ctx.unsupported("ScatterElements with run-time indices on a symbolic axis (they may be "
                        "negative)")
    else:
        dt = ctx.type(idx).dtype
        neg = ctx.emit("less", [idx, np.array(0, dt.numpy)])
        idx = ctx.emit("where", [neg, ctx.emit("add", [idx, np.array(n, dt.numpy)]), idx])
    return [ctx.emit(op, [x, idx, upd], axis=axis)]


def _eye(ctx, rows, cols, k):
    """A bool [rows, cols] mask of diagonal k: Range(rows)[:, None] + k == Range(cols)[None]
    (Range and Equal import back; EyeLike has no import rule)."""
    zero, one = (ctx.const(np.array(v, np.int64)) for v in (0, 1))
    r = ctx.make_node("Range", [zero, ctx.scalar_dim(rows), one], name="rows")
    c = ctx.make_node("Range", [zero, ctx.scalar_dim(cols), one], name="cols")
    if k:
        r = ctx.make_node("Add", [r, ctx.const(np.array(k, np.int64))])
    r = ctx.make_node("Unsqueeze", [r, ctx.ints([1], hint="axes")])
    c = ctx.make_node("Unsqueeze", [c, ctx.ints([0], hint="axes")])
    return ctx.make_node("Equal", [r, c], name="diagonal")


def _export_diag(ctx, node):
    from .linalg_more import diag_length

    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    k = int(node.params.get("diagonal", 0))
    zero = scalar_const(ctx, 0, t.dtype)
    outs = ctx.outputs(node)
    if len(t.shape) == 1:  # x padded by |k| at the end, spread along rows (k >= 0) or columns
        n = t.shape[0] + abs(k)
        xp = ctx.make_node("Pad", [x, ctx.ints([0, abs(k)], hint="pads")]) if k else x
        line = ctx.make_node("Unsqueeze", [xp, ctx.ints([1 if k >= 0 else 0], hint="axes")])
        ctx.make_node("Where", [_eye(ctx, n, n, k), line, zero], outs)
        return
    rows, cols = t.shape  # keep diagonal k, sum each row (k >= 0) or column, cut to its length
    flag = t.dtype == DType.BOOL  # ReduceSum takes no bools: through i32
    xi = ctx.cast(x, t.dtype, DType.I32) if flag else x
    picked = ctx.make_node("Where", [_eye(ctx, rows, cols, k), xi,
                                     scalar_const(ctx, 0, DType.I32 if flag else t.dtype)])
    total = ctx.make_node("ReduceSum", [picked, ctx.ints([1 if k >= 0 else 0], hint="axes")],
                          keepdims=0)
    length = diag_length(rows, cols, k)
    sliced = ctx.make_node("Slice", [total, ctx.ints([0], hint="starts"), ctx.shape([length]),
                                     ctx.ints([0], hint="axes")], None if flag else outs)
    if flag:
        ctx.make_node("Cast", [sliced], outs, to=ctx.onnx_dtype(DType.BOOL))


def _export_einsum(ctx, node):
    from .einsum import letter_sizes, normalize

    types = ctx.input_types(node)
    out = ctx.output_types(node)[0]
    eq = normalize(node.params["equation"], [len(t.shape) for t in types])
    sizes = letter_sizes(eq, [t.shape for t in types])
    ins = []
    for name, t, term in zip(ctx.inputs(node), types, eq.terms):
        name = ctx.cast(name, t.dtype, out.dtype)
        want = [sizes[c] for c in term]
        if not all(same_dim(a, b) for a, b in zip(t.shape, want)):  # a size-1 letter broadcasts
            name = ctx.make_node("Expand", [name, ctx.shape(want)])
        ins.append(name)
    ctx.make_node("Einsum", ins, ctx.outputs(node), equation=eq.text)


def _import_einsum(ctx, node):
    eq = node.attr("equation")
    eq = eq.decode() if isinstance(eq, bytes) else eq
    return [ctx.emit("einsum", [i for i in node.inputs if i], equation=eq)]


def _export_repeat_interleave(ctx, node):
    (x,) = ctx.inputs(node)
    t = ctx.input_types(node)[0]
    out = ctx.output_types(node)[0]
    r, axis = node.params["repeats"], node.params.get("axis")
    shape = list(t.shape)
    if axis is None or not shape:
        x = ctx.make_node("Reshape", [x, ctx.ints([-1], hint="shape")], name="flat")
        from onemodel.core.types import numel

        shape, a = [numel(t.shape)], 0
    else:
        a = int(axis) % len(shape)
    up = ctx.make_node("Unsqueeze", [x, ctx.ints([a + 1], hint="axes")])
    reps = [1] * (len(shape) + 1)
    reps[a + 1] = r
    tiled = ctx.make_node("Tile", [up, ctx.shape(reps)])
    ctx.make_node("Reshape", [tiled, ctx.shape(out.shape)], ctx.outputs(node))


SPEC = {
    "scatter": OnnxSpec(export=_export_scatter("none"),
                        imports={"ScatterElements": _import_scatter_elements}),
    "scatter_add": OnnxSpec(export=_export_scatter("add")),
    "diag": OnnxSpec(export=_export_diag),
    "einsum": OnnxSpec(export=_export_einsum, imports={"Einsum": _import_einsum}),
    "repeat_interleave": OnnxSpec(export=_export_repeat_interleave),
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
