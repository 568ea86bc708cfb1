"""More shape ops, as PyTorch names them: stack, unbind, chunk, flip, roll, repeat, tile, pad,
movedim and unflatten.

Inference works on symbolic shapes (a stacked symbolic batch, a padded symbolic length is
length + 2); ops whose number of outputs would depend on a symbolic size refuse it by name.
"""
from __future__ import annotations

import math

import numpy as np

from onemodel.registry import OpDef, OpTraits, Param, Sample

from ._common import (Dim, OpError, TensorType, cast_to, dims, is_static, norm_axes, norm_axis,
                      promote_types, same_dim)
from .shape import _dt, _fmt, _split_sizes, pieces, pieces_infer


# -- stack / unbind / chunk -----------------------------------------------------------------------
def _stack_infer(*xs, axis=0):
    first = xs[0]
    for t in xs[1:]:
        if t.ndim != first.ndim or not all(same_dim(d, e) for d, e in zip(t.shape, first.shape)):
            raise OpError(f"ops.stack: every tensor must have one shape, got "
                          f"{', '.join(_fmt(x.shape) for x in xs)}")
    a = norm_axis(axis, first.ndim + 1, "stack")
    shape = list(first.shape)
    shape.insert(a, len(xs))
    return TensorType(promote_types(*(t.dtype for t in xs)), shape)


def _stack(*xs, axis=0):
    dt = promote_types(*(_dt(x) for x in xs)).numpy
    return np.stack([cast_to(x, dt) for x in xs], axis=norm_axis(axis, xs[0].ndim + 1, "stack"))


def _stack_vjp(ctx, g):
    a = norm_axis(ctx.params["axis"], ctx.inputs[0].ndim + 1, "stack")
    return tuple(np.take(g, i, axis=a) for i in range(len(ctx.inputs)))


def _stack_samples(rng):
    r = rng.standard_normal
    yield Sample(args=([r((2, 3)), r((2, 3)), r((2, 3))],), name="axis0")
    yield Sample(args=([r((2, 3)), r((2, 3))],), params={"axis": -1}, name="last")
    yield Sample(args=([np.array([1, 2], dtype=np.int32), r((2,))],), params={"axis": 1},
                 name="promote")


stack = OpDef(
    name="stack", inputs=("tensors*",), params={"axis": Param(kind="axis", default=0)},
    kernel=_stack, infer=_stack_infer, vjp=_stack_vjp, samples=_stack_samples,
    doc="Join tensors of one shape along a new axis (torch.stack); dtypes promote.",
)


def _static_size(op, x, a, why):
    n = x.shape[a]
    if isinstance(n, Dim):
        raise OpError(f"ops.{op}: axis {a} has symbolic size {n}, so the number of outputs "
                      f"would depend on it; {why}")
    return n


def _unbind_infer(x, axis=0):
    if x.ndim == 0:
        raise OpError("ops.unbind: a zero-dimensional tensor cannot be unbound")
    a = norm_axis(axis, x.ndim, "unbind")
    n = _static_size("unbind", x, a, "index the axis instead")
    shape = [d for i, d in enumerate(x.shape) if i != a]
    return tuple(TensorType(x.dtype, shape) for _ in range(n))


def _unbind(x, axis=0):
    a = norm_axis(axis, x.ndim, "unbind")
    return tuple(np.take(x, i, axis=a) for i in range(x.shape[a]))


unbind = OpDef(
    name="unbind", inputs=("x",), params={"axis": Param(kind="axis", default=0)},
    kernel=_unbind, infer=_unbind_infer,
    vjp=lambda ctx, *gs: (np.stack(gs, axis=norm_axis(ctx.params["axis"], ctx.inputs[0].ndim,
                                                      "unbind")),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((3, 2)),), name="rows"),
                         Sample(args=(rng.standard_normal((2, 3, 4)),), params={"axis": -1},
                                name="last")],
    methods=("unbind",),
    doc="The slices along axis as a tuple of tensors, that axis removed (torch.unbind). The "
        "axis must have a fixed size.",
)


def chunk_sizes(size, chunks):
    """torch.chunk's pieces: ceil(size / chunks) each, the last smaller, maybe fewer pieces. A
    symbolic size works when it is a multiple of chunks (then exactly chunks pieces)."""
    if isinstance(chunks, Dim) or isinstance(chunks, bool) or chunks <= 0:
        raise OpError(f"ops.chunk: parameter 'chunks' must be a positive int, got {chunks}")
    if isinstance(size, Dim):
        piece = size // chunks
        if same_dim(piece * chunks, size):
            return (piece,) * chunks
        raise OpError(f"ops.chunk: an axis of symbolic size {size} split into {chunks} chunks "
                      f"gives a number of pieces that depends on the size; use ops.split with "
                      f"a list of sizes")
    return _split_sizes(size, max(-(-size // chunks), 1), op="chunk")


def _chunk_infer(x, chunks, axis=0):
    return pieces_infer(x, axis, lambda n: chunk_sizes(n, chunks), "chunk", "chunked")


def _chunk(x, chunks, axis=0):
    return pieces(x, axis, lambda n: chunk_sizes(n, chunks), "chunk")


chunk = OpDef(
    name="chunk", inputs=("x",),
    params={"chunks": Param(kind="int", doc="how many pieces at most"),
            "axis": Param(kind="axis", default=0)},
    kernel=_chunk, infer=_chunk_infer,
    vjp=lambda ctx, *gs: (np.concatenate(gs, axis=ctx.params["axis"]),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((6, 2)),), params={"chunks": 3},
                                name="even"),
                         Sample(args=(rng.standard_normal((2, 5)),),
                                params={"chunks": 2, "axis": -1}, name="uneven"),
                         Sample(args=(rng.standard_normal((4, 3)),), params={"chunks": 3},
                                name="fewer")],
    methods=("chunk",),
    doc="Split into at most chunks pieces of ceil(size / chunks) along axis, the last smaller "
        "(torch.chunk). A symbolic axis must be a multiple of chunks.",
)


# -- flip / roll ----------------------------------------------------------------------------------
def _flip_axes(x, axes):
    if x.ndim == 0:
        return ()
    return norm_axes(axes, x.ndim, "flip") if axes != () else ()


flip = OpDef(
    name="flip", inputs=("x",), params={"axes": Param(kind="axes", doc="the axes to reverse")},
    kernel=lambda x, axes: np.flip(x, _flip_axes(x, axes)).copy() if x.ndim else x.copy(),
    infer=lambda x, axes: (_flip_axes(x, axes), TensorType(x.dtype, x.shape))[1],
    vjp=lambda ctx, g: (np.flip(g, _flip_axes(g, ctx.params["axes"])),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((3, 4)),), params={"axes": (0,)}),
                         Sample(args=(rng.standard_normal((2, 3, 4)),), params={"axes": (-1, 0)},
                                name="two"),
                         Sample(args=(np.array([[1, 2, 3]], dtype=np.int64),), params={"axes": 1},
                                name="int")],
    methods=("flip",),
    doc="Reverse the order of elements along the given axes (torch.flip).",
)


def _roll_args(x, shifts, axes):
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if axes is None:
        if len(shifts) != 1:
            raise OpError(f"ops.roll: without axes, parameter 'shifts' must be one int, got "
                          f"{shifts}")
        return shifts, None
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    if len(shifts) != len(axes):
        raise OpError(f"ops.roll: parameters 'shifts' {shifts} and 'axes' {axes} must have one "
                      f"length")
    return shifts, tuple(norm_axis(a, max(x.ndim, 1), "roll") for a in axes)


def _roll(x, shifts, axes=None):
    s, a = _roll_args(x, shifts, axes)
    return np.roll(x, s[0] if a is None else s, axis=a)


def _roll_vjp(ctx, g):
    s, a = _roll_args(g, ctx.params["shifts"], ctx.params["axes"])
    return (np.roll(g, -s[0] if a is None else tuple(-v for v in s), axis=a),)


roll = OpDef(
    name="roll", inputs=("x",),
    params={"shifts": Param(kind="ints", doc="an int or one int per axis"),
            "axes": Param(kind="axes", default=None, optional=True,
                          doc="None: roll the flattened tensor")},
    kernel=_roll, infer=lambda x, shifts, axes=None: (_roll_args(x, shifts, axes),
                                                      TensorType(x.dtype, x.shape))[1],
    vjp=_roll_vjp,
    samples=lambda rng: [Sample(args=(rng.standard_normal((3, 4)),),
                                params={"shifts": 1, "axes": 1}),
                         Sample(args=(rng.standard_normal((3, 4)),),
                                params={"shifts": (-1, 5), "axes": (0, -1)}, name="two"),
                         Sample(args=(rng.standard_normal((2, 3)),), params={"shifts": 2},
                                name="flat")],
    methods=("roll",),
    doc="Shift elements along axes, wrapping around (torch.roll); axes=None rolls the "
        "flattened tensor and restores its shape.",
)


# -- repeat / tile --------------------------------------------------------------------------------
def _repeat_shape(op, shape, sizes):
    sizes = dims(sizes)
    if len(sizes) < len(shape):
        raise OpError(f"ops.{op}: parameter 'sizes' {tuple(map(str, sizes))} has fewer entries "
                      f"than the input has axes ({len(shape)})")
    for s in sizes:
        if not isinstance(s, Dim) and s < 0:
            raise OpError(f"ops.{op}: parameter 'sizes' must be non-negative, got "
                          f"{tuple(map(str, sizes))}")
    padded = (1,) * (len(sizes) - len(shape)) + tuple(shape)
    return padded, tuple(d * s for d, s in zip(padded, sizes))


def _tile_sizes(shape, sizes):
    sizes = dims(sizes)
    return (1,) * (len(shape) - len(sizes)) + tuple(sizes)


def _repeat(x, sizes):
    padded, _out = _repeat_shape("repeat", x.shape, sizes)
    return np.tile(x.reshape(padded), sizes)


def _repeat_grad(g, x_shape, sizes):
    padded = (1,) * (len(sizes) - len(x_shape)) + tuple(x_shape)
    split = [v for pair in zip(sizes, padded) for v in pair]
    return g.reshape(split).sum(axis=tuple(range(0, 2 * len(sizes), 2))).reshape(x_shape)


repeat = OpDef(
    name="repeat", inputs=("x",), params={"sizes": Param(kind="shape",
                                                         doc="times to repeat each axis")},
    kernel=_repeat,
    infer=lambda x, sizes: TensorType(x.dtype, _repeat_shape("repeat", x.shape, sizes)[1]),
    vjp=lambda ctx, g: (_repeat_grad(g, ctx.inputs[0].shape, tuple(ctx.params["sizes"])),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),), params={"sizes": (2, 1)}),
                         Sample(args=(rng.standard_normal((2,)),), params={"sizes": (3, 2)},
                                name="new_axis"),
                         Sample(args=(np.array([True, False]),), params={"sizes": (2,)},
                                name="bool")],
    methods=("repeat",),
    doc="Repeat the whole tensor along each axis (Tensor.repeat, numpy's tile); more sizes "
        "than axes add leading axes.",
)

tile = OpDef(
    name="tile", inputs=("x",), params={"dims": Param(kind="shape",
                                                      doc="times to repeat each axis (torch's "
                                                          "name)")},
    kernel=lambda x, dims: _repeat(x, _tile_sizes(x.shape, dims)),
    infer=lambda x, dims: TensorType(x.dtype, _repeat_shape(
        "tile", x.shape, _tile_sizes(x.shape, dims))[1]),
    vjp=lambda ctx, g: (_repeat_grad(g, ctx.inputs[0].shape,
                                     _tile_sizes(ctx.inputs[0].shape, ctx.params["dims"])),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),), params={"dims": (2,)},
                                name="fewer_sizes"),
                         Sample(args=(rng.standard_normal((2, 3)),), params={"dims": (1, 2, 2)},
                                name="more_sizes")],
    methods=("tile",),
    doc="torch.tile: as repeat, but fewer sizes than axes are padded with 1s in front.",
)


# -- pad --------------------------------------------------------------------------------------------
PAD_MODES = ("constant", "reflect", "replicate", "circular")
_NUMPY_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad_widths(op, shape, pad, mode):
    """torch's pad tuple (last axis first: left, right, then the axis before...) as
    ``[(before, after)]`` per axis, checked against the shape."""
    pad = tuple(pad)
    if len(pad) % 2 or len(pad) > 2 * len(shape):
        raise OpError(f"ops.{op}: parameter 'pad' {pad} must hold pairs, at most two per axis "
                      f"of the input ({len(shape)})")
    widths = [(0, 0)] * len(shape)
    for k in range(len(pad) // 2):
        a = len(shape) - 1 - k
        before, after = int(pad[2 * k]), int(pad[2 * k + 1])
        n = shape[a]
        if mode != "constant":
            if before < 0 or after < 0:
                raise OpError(f"ops.{op}: parameter 'pad' {pad} is negative; only mode "
                              f"'constant' crops")
            if mode == "reflect" and not isinstance(n, Dim) and (before >= n or after >= n):
                raise OpError(f"ops.{op}: parameter 'pad' {pad}: reflect padding must be smaller "
                              f"than axis {a} (size {n})")
            if mode == "circular" and not isinstance(n, Dim) and (before > n or after > n):
                raise OpError(f"ops.{op}: parameter 'pad' {pad}: circular padding must not be "
                              f"larger than axis {a} (size {n}): it would wrap more than once")
            if mode == "replicate" and not isinstance(n, Dim) and n == 0:
                raise OpError(f"ops.{op}: cannot replicate-pad axis {a} of size 0")
        elif not isinstance(n, Dim) and n + before + after < 0:
            raise OpError(f"ops.{op}: parameter 'pad' {pad} crops more than axis {a} holds")
        widths[a] = (before, after)
    return widths


def _pad_mode(mode):
    if mode not in PAD_MODES:
        raise OpError(f"ops.pad: parameter 'mode' must be one of {', '.join(map(repr, PAD_MODES))}, "
                      f"got {mode!r}")
    return mode


def _pad_infer(x, pad, mode="constant", value=0.0):
    widths = pad_widths("pad", x.shape, pad, _pad_mode(mode))
    return TensorType(x.dtype, [d + b + a for d, (b, a) in zip(x.shape, widths)])


def _pad(x, pad, mode="constant", value=0.0):
    widths = pad_widths("pad", x.shape, pad, _pad_mode(mode))
    crop = tuple(slice(max(-b, 0), n - max(-a, 0)) for n, (b, a) in zip(x.shape, widths))
    grow = [(max(b, 0), max(a, 0)) for b, a in widths]
    x = x[crop]
    if mode == "constant":
        return np.pad(x, grow, mode="constant", constant_values=np.array(value).astype(x.dtype))
    return np.pad(x, grow, mode=_NUMPY_MODE[mode])


def _source(n, before, after, mode):
    """For each output position along one axis, the input position it copies (-1: the fill)."""
    if mode == "constant":
        inner = np.arange(n)[max(-before, 0):n - max(-after, 0)]
        return np.concatenate([np.full(max(before, 0), -1), inner, np.full(max(after, 0), -1)])
    return np.pad(np.arange(n), (before, after), mode=_NUMPY_MODE[mode])


def _pad_vjp(ctx, g):
    x = ctx.inputs[0]
    mode = ctx.params["mode"]
    widths = pad_widths("pad", x.shape, ctx.params["pad"], mode)
    for a, (n, (b, e)) in enumerate(zip(x.shape, widths)):
        if (b, e) == (0, 0):
            continue
        src = _source(n, b, e, mode)
        moved = np.moveaxis(g, a, 0)
        acc = np.zeros((n,) + moved.shape[1:], g.dtype)
        keep = src >= 0
        np.add.at(acc, src[keep], moved[keep])
        g = np.moveaxis(acc, 0, a)
    return (g,)


def _pad_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 3)),), params={"pad": (1, 2)}, name="last")
    yield Sample(args=(r((2, 3, 4)),), params={"pad": (1, 0, 0, 2), "value": 1.5},
                 name="two_axes_value")
    yield Sample(args=(r((3, 4)),), params={"pad": (2, 1, 1, 1), "mode": "reflect"},
                 name="reflect")
    yield Sample(args=(r((3, 4)),), params={"pad": (2, 3), "mode": "replicate"}, name="replicate")
    yield Sample(args=(r((2, 3, 4)),), params={"pad": (4, 1, 2, 3), "mode": "circular"},
                 name="circular")
    yield Sample(args=(r((3, 5)),), params={"pad": (-1, 2)}, name="crop")
    yield Sample(args=(np.array([[1, 2]], dtype=np.int32),), params={"pad": (1, 1), "value": 7},
                 name="int")


pad = OpDef(
    name="pad", inputs=("x",),
    params={"pad": Param(kind="ints", doc="(left, right) of the last axis, then of the one "
                                          "before... (torch's order)"),
            "mode": Param(kind="str", default="constant", choices=PAD_MODES),
            "value": Param(kind="scalar", default=0.0, doc="the fill of mode 'constant'")},
    kernel=_pad, infer=_pad_infer, vjp=_pad_vjp, samples=_pad_samples,
    doc="Pad (or crop, with negative widths in mode 'constant') as torch.nn.functional.pad: "
        "pad pairs count from the last axis; modes constant, reflect, replicate and circular "
        "(wrapping around at most once, as torch).",
)


# -- movedim / unflatten ----------------------------------------------------------------------------
def _movedim_perm(ndim, source, destination):
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise OpError(f"ops.movedim: parameters 'source' {src} and 'destination' {dst} must "
                      f"have one length")
    src = [norm_axis(a, ndim, "movedim") for a in src]
    dst = [norm_axis(a, ndim, "movedim") for a in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise OpError("ops.movedim: parameters 'source' and 'destination' repeat an axis")
    rest = iter(a for a in range(ndim) if a not in src)
    placed = dict(zip(dst, src))
    return tuple(placed[i] if i in placed else next(rest) for i in range(ndim))


movedim = OpDef(
    name="movedim", inputs=("x",),
    params={"source": Param(kind="ints", doc="an axis or a tuple of axes"),
            "destination": Param(kind="ints", doc="where they go, as many")},
    kernel=lambda x, source, destination: np.transpose(
        x, _movedim_perm(x.ndim, source, destination)),
    infer=lambda x, source, destination: TensorType(
        x.dtype, [x.shape[p] for p in _movedim_perm(x.ndim, source, destination)]),
    vjp=lambda ctx, g: (np.transpose(g, np.argsort(_movedim_perm(
        g.ndim, ctx.params["source"], ctx.params["destination"]))),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3, 4)),),
                                params={"source": 0, "destination": -1}),
                         Sample(args=(rng.standard_normal((2, 3, 4)),),
                                params={"source": (0, 1), "destination": (2, 0)}, name="two")],
    methods=("movedim",),
    traits=OpTraits(view="permute", permutation=lambda p, rank: _movedim_perm(
        rank, p["source"], p["destination"])),
    doc="Move axes to new positions, the others keeping their order (torch.movedim).",
)


def _unflatten_shape(shape, axis, sizes):
    a = norm_axis(axis, len(shape), "unflatten")
    sizes = dims(sizes)
    holes = [i for i, s in enumerate(sizes) if not isinstance(s, Dim) and s == -1]
    if len(holes) > 1 or not sizes:
        raise OpError(f"ops.unflatten: parameter 'sizes' {tuple(map(str, sizes))} must be "
                      f"non-empty with at most one -1")
    n = shape[a]
    known = math.prod(s for i, s in enumerate(sizes) if i not in holes) if not any(
        isinstance(s, Dim) for s in sizes) else None
    if holes:
        rest = 1
        for i, s in enumerate(sizes):
            if i != holes[0]:
                rest = rest * s
        if is_static(n, rest) and (rest == 0 or n % rest):
            raise OpError(f"ops.unflatten: axis {axis} of size {n} cannot be split into "
                          f"{tuple(map(str, sizes))}")
        sizes = sizes[:holes[0]] + (n // rest,) + sizes[holes[0] + 1:]
    elif known is not None and not isinstance(n, Dim) and known != n:
        raise OpError(f"ops.unflatten: parameter 'sizes' {sizes} multiply to {known}, axis "
                      f"{axis} has size {n}")
    return tuple(shape[:a]) + tuple(sizes) + tuple(shape[a + 1:])


unflatten = OpDef(
    name="unflatten", inputs=("x",),
    params={"axis": Param(kind="axis"), "sizes": Param(kind="shape", doc="one may be -1")},
    kernel=lambda x, axis, sizes: np.reshape(x, _unflatten_shape(x.shape, axis, sizes)),
    infer=lambda x, axis, sizes: TensorType(x.dtype, _unflatten_shape(x.shape, axis, sizes)),
    vjp=lambda ctx, g: (np.reshape(g, ctx.inputs[0].shape),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 12)),),
                                params={"axis": 1, "sizes": (3, 4)}),
                         Sample(args=(rng.standard_normal((6, 2)),),
                                params={"axis": 0, "sizes": (-1, 3)}, name="infer")],
    methods=("unflatten",), traits=OpTraits(view="reshape"),
    doc="Split one axis into several (torch.unflatten); one size may be -1.",
)

# -- repeat_interleave ------------------------------------------------------------------------------
def _interleave_infer(x, repeats, axis=None):
    r = dims((repeats,))[0]
    if not isinstance(r, Dim) and r < 0:
        raise OpError(f"ops.repeat_interleave: parameter 'repeats' must be non-negative, got {r}")
    if axis is None:
        n = 1
        for d in x.shape:
            n = n * d
        return TensorType(x.dtype, (n * r,))
    a = norm_axis(axis, max(x.ndim, 1), "repeat_interleave")
    shape = list(x.shape) or [1]
    shape[a] = shape[a] * r
    return TensorType(x.dtype, shape)


def _interleave(x, repeats, axis=None):
    if axis is None or x.ndim == 0:
        return np.repeat(x.reshape(-1), repeats)
    return np.repeat(x, repeats, axis=norm_axis(axis, x.ndim, "repeat_interleave"))


def _interleave_vjp(ctx, g):
    x = ctx.inputs[0]
    r, axis = ctx.params["repeats"], ctx.params["axis"]
    if axis is None or x.ndim == 0:
        return (g.reshape(-1, r).sum(axis=1).reshape(x.shape),)
    a = norm_axis(axis, x.ndim, "repeat_interleave")
    split = x.shape[:a] + (x.shape[a], r) + x.shape[a + 1:]
    return (g.reshape(split).sum(axis=a + 1),)


repeat_interleave = OpDef(
    name="repeat_interleave", inputs=("x",),
    params={"repeats": Param(kind="size", doc="times each element repeats (an int)"),
            "axis": Param(kind="axis", default=None, optional=True,
                          doc="None: of the flattened tensor")},
    kernel=_interleave, infer=_interleave_infer, vjp=_interleave_vjp,
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),),
                                params={"repeats": 2, "axis": 0}),
                         Sample(args=(rng.standard_normal((2, 3)),),
                                params={"repeats": 3, "axis": -1}, name="last"),
                         Sample(args=(rng.standard_normal((2, 2)),), params={"repeats": 2},
                                name="flat")],
    methods=("repeat_interleave",),
    doc="Repeat each element repeats times along axis, next to itself (torch.repeat_interleave "
        "with an int; numpy's repeat); axis=None flattens first.",
)

OPS = (stack, unbind, chunk, flip, roll, repeat, tile, pad, movedim, unflatten, repeat_interleave)
