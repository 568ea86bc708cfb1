"""Shape ops: axes moved, merged, split or broadcast, and dtype casts.

Inference works on symbolic shapes (entries may be `Dim`s, as may `shape`/`sizes` params while
tracing). Kernels return numpy views where numpy does (reshape, transpose, expand...), as
PyTorch returns views.
"""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, OpTraits, Param, Sample

from ._common import (Dim, DType, OpError, TensorType, cast_to, dim, dims, is_static, norm_axes,
                      norm_axis, promote_types, same_dim)
from onemodel.core.symbolic import format_shape
from onemodel.core.types import numel


def _fmt(shape) -> str:
    return format_shape(shape)


def _is_minus_one(d) -> bool:
    return not isinstance(d, Dim) and d == -1


# -- transpose / permute -------------------------------------------------------------------------
def _transpose_infer(x, axis0, axis1):
    a0, a1 = norm_axis(axis0, x.ndim, "transpose"), norm_axis(axis1, x.ndim, "transpose")
    shape = list(x.shape)
    if x.ndim:
        shape[a0], shape[a1] = shape[a1], shape[a0]
    return TensorType(x.dtype, shape)


def _transpose(x, axis0, axis1):
    return np.swapaxes(x, axis0, axis1) if x.ndim else x


transpose = OpDef(
    name="transpose", inputs=("x",),
    params={"axis0": Param(kind="axis"), "axis1": Param(kind="axis")},
    kernel=_transpose, infer=_transpose_infer,
    vjp=lambda ctx, g: (_transpose(g, ctx.params["axis0"], ctx.params["axis1"]),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3, 4)),),
                                params={"axis0": 0, "axis1": -1}),
                         Sample(args=(rng.standard_normal((3, 4)),),
                                params={"axis0": 1, "axis1": 0}, name="2d")],
    methods=("transpose",), doc="Swap two axes (a view, as torch.transpose).",
    traits=OpTraits(view="permute", permutation=lambda p, rank: _swap(p, rank)),
)


def _swap(params, rank):
    perm = list(range(rank))
    a, b = int(params["axis0"]) % rank, int(params["axis1"]) % rank
    perm[a], perm[b] = perm[b], perm[a]
    return tuple(perm)


def _perm(axes, ndim):
    perm = tuple(norm_axis(a, ndim, "permute") for a in axes) if ndim else ()
    if len(axes) != ndim or sorted(perm) != list(range(ndim)):
        raise OpError(f"ops.permute: axes {tuple(axes)} are not a permutation of the {ndim} axes")
    return perm


def _permute_infer(x, axes):
    perm = _perm(axes, x.ndim)
    return TensorType(x.dtype, [x.shape[p] for p in perm])


def _permute(x, axes):
    return np.transpose(x, _perm(axes, x.ndim))


permute = OpDef(
    name="permute", inputs=("x",), params={"axes": Param(kind="axes")},
    kernel=_permute, infer=_permute_infer,
    vjp=lambda ctx, g: (np.transpose(g, np.argsort(_perm(ctx.params["axes"], g.ndim))),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3, 4)),), params={"axes": (2, 0, 1)}),
                         Sample(args=(rng.standard_normal((2, 3, 4)),), params={"axes": (-1, 1, 0)},
                                name="negative")],
    methods=("permute",), doc="Reorder the axes: output axis i is input axis axes[i].",
    traits=OpTraits(view="permute",
                    permutation=lambda p, rank: tuple(int(a) % rank for a in p["axes"])),
)


# -- reshape / flatten / squeeze / unsqueeze -------------------------------------------------------
def _reshape_shape(in_shape, shape) -> tuple:
    """The target shape with -1 resolved (symbolic sizes allowed on both sides)."""
    shape = dims(shape)
    holes = [i for i, d in enumerate(shape) if _is_minus_one(d)]
    if len(holes) > 1:
        raise OpError(f"ops.reshape: only one size may be -1, got {_fmt(shape)}")
    for d in shape:
        if not isinstance(d, Dim) and d < -1:
            raise OpError(f"ops.reshape: invalid size {d} in {_fmt(shape)}")
    total = numel(in_shape)
    if holes:
        known = numel([d for i, d in enumerate(shape) if i != holes[0]])
        if is_static(total, known):
            if known == 0 or total % known:
                raise OpError(f"ops.reshape: cannot reshape {_fmt(in_shape)} ({total} elements) "
                              f"into {_fmt(shape)}")
            fill = total // known
        else:
            fill = total // known
        shape = shape[:holes[0]] + (fill,) + shape[holes[0] + 1:]
    elif is_static(total, numel(shape)) and total != numel(shape):
        raise OpError(f"ops.reshape: cannot reshape {_fmt(in_shape)} ({total} elements) into "
                      f"{_fmt(shape)} ({numel(shape)} elements)")
    elif not is_static(total, numel(shape)) and _never_equal(total, numel(shape)):
        raise OpError(f"ops.reshape: cannot reshape {_fmt(in_shape)} into {_fmt(shape)}: "
                      f"the element counts {total} and {numel(shape)} differ")
    return shape


def _never_equal(a, b) -> bool:
    """Whether two sizes (one at least symbolic) differ at every sampled binding of their
    symbols. Different expressions may still agree at run time (``(s//2)*2`` and ``s`` at even
    sizes), so only a difference everywhere is an error; the trace check catches the rest."""
    if same_dim(a, b):
        return False
    from onemodel.core.symbolic import SymbolicError, evaluate, symbols

    names = sorted(symbols(a) | symbols(b))
    for n in range(2, 10):
        env = {name: n + 3 * i for i, name in enumerate(names)}
        try:
            if evaluate(a, env) == evaluate(b, env):
                return False
        except SymbolicError:
            return False
    return True


def _reshape_infer(x, shape):
    return TensorType(x.dtype, _reshape_shape(x.shape, shape))


def _reshape(x, shape):
    return np.reshape(x, shape)


reshape = OpDef(
    name="reshape", inputs=("x",), params={"shape": Param(kind="shape")},
    kernel=_reshape, infer=_reshape_infer,
    vjp=lambda ctx, g: (np.reshape(g, ctx.inputs[0].shape),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3, 4)),), params={"shape": (4, -1)}),
                         Sample(args=(rng.standard_normal((6,)),), params={"shape": (3, 1, 2)},
                                name="grow"),
                         Sample(args=(np.array([3.5]),), params={"shape": ()}, name="scalar")],
    methods=("reshape",), traits=OpTraits(view="reshape"),
    doc="The same elements in a new shape; one size may be -1 (inferred). A view when possible.",
)


def _flatten_axes(ndim, start_axis, end_axis):
    s = norm_axis(start_axis, ndim, "flatten")
    e = norm_axis(end_axis, ndim, "flatten")
    if s > e:
        raise OpError(f"ops.flatten: start_axis {start_axis} comes after end_axis {end_axis}")
    return s, e


def _flatten_shape(shape, start_axis, end_axis):
    shape = tuple(shape)
    s, e = _flatten_axes(len(shape), start_axis, end_axis)
    return shape[:s] + (numel(shape[s:e + 1]),) + shape[e + 1:]


def _flatten(x, start_axis=0, end_axis=-1):
    return np.reshape(x, _flatten_shape(x.shape, start_axis, end_axis))


flatten = OpDef(
    name="flatten", inputs=("x",),
    params={"start_axis": Param(kind="axis", default=0), "end_axis": Param(kind="axis", default=-1)},
    kernel=_flatten,
    infer=lambda x, start_axis=0, end_axis=-1: TensorType(
        x.dtype, _flatten_shape(x.shape, start_axis, end_axis)),
    vjp=lambda ctx, g: (np.reshape(g, ctx.inputs[0].shape),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3, 4)),)),
                         Sample(args=(rng.standard_normal((2, 3, 4, 2)),),
                                params={"start_axis": 1, "end_axis": -2}, name="middle"),
                         Sample(args=(np.array(2.5),), name="scalar")],
    methods=("flatten",), traits=OpTraits(view="reshape"),
    doc="Merge axes start_axis..end_axis into one (a 0-d tensor becomes shape [1], as PyTorch).",
)


def _squeeze_axes(shape, axis) -> tuple:
    """Axes that are removed: the given ones of size 1 (others are left, as PyTorch)."""
    ndim = len(shape)
    if axis is None:
        cand = range(ndim)
    else:
        cand = norm_axes(axis, ndim, "squeeze") if ndim else ()
    return tuple(a for a in cand if not isinstance(shape[a], Dim) and shape[a] == 1)


def _squeeze_infer(x, axis=None):
    drop = _squeeze_axes(x.shape, axis)
    return TensorType(x.dtype, [d for i, d in enumerate(x.shape) if i not in drop])


def _squeeze(x, axis=None):
    return np.squeeze(x, axis=_squeeze_axes(x.shape, axis))


squeeze = OpDef(
    name="squeeze", inputs=("x",),
    params={"axis": Param(kind="axes", default=None, optional=True)},
    kernel=_squeeze, infer=_squeeze_infer,
    vjp=lambda ctx, g: (np.reshape(g, ctx.inputs[0].shape),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 1, 3, 1)),), name="all"),
                         Sample(args=(rng.standard_normal((2, 1, 3, 1)),), params={"axis": -1},
                                name="negative"),
                         Sample(args=(rng.standard_normal((2, 1, 3)),), params={"axis": (0, 1)},
                                name="non_unit_kept")],
    methods=("squeeze",), traits=OpTraits(view="reshape"),
    doc="Remove axes of size 1: all of them (axis=None), or the given int/tuple of axes; a "
        "given axis whose size is not 1 is left alone (PyTorch). A symbolic size is never 1.",
)


def _unsqueeze_infer(x, axis):
    a = norm_axis(axis, x.ndim + 1, "unsqueeze")
    shape = list(x.shape)
    shape.insert(a, 1)
    return TensorType(x.dtype, shape)


unsqueeze = OpDef(
    name="unsqueeze", inputs=("x",), params={"axis": Param(kind="axis")},
    kernel=lambda x, axis: np.expand_dims(x, norm_axis(axis, x.ndim + 1, "unsqueeze")),
    infer=_unsqueeze_infer,
    vjp=lambda ctx, g: (np.reshape(g, ctx.inputs[0].shape),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),), params={"axis": 1}),
                         Sample(args=(rng.standard_normal((2, 3)),), params={"axis": -1},
                                name="negative"),
                         Sample(args=(np.array(1.5),), params={"axis": 0}, name="scalar")],
    methods=("unsqueeze",), traits=OpTraits(view="reshape"),
    doc="Insert an axis of size 1 at position axis (-ndim-1 <= axis <= ndim).",
)


# -- concat / split -------------------------------------------------------------------------------
def _concat_infer(*xs, axis=0):
    first = xs[0]
    if first.ndim == 0:
        raise OpError("ops.concat: zero-dimensional tensors cannot be concatenated")
    a = norm_axis(axis, first.ndim, "concat")
    total = 0
    for t in xs:
        if t.ndim != first.ndim or any(not same_dim(d, e) for i, (d, e) in
                                       enumerate(zip(t.shape, first.shape)) if i != a):
            raise OpError(f"ops.concat: shapes {', '.join(_fmt(x.shape) for x in xs)} differ "
                          f"outside axis {axis}")
        total = total + t.shape[a]
    shape = list(first.shape)
    shape[a] = total
    return TensorType(promote_types(*(t.dtype for t in xs)), shape)


def _concat(*xs, axis=0):
    dt = promote_types(*(_dt(x) for x in xs)).numpy
    return np.concatenate([cast_to(x, dt) for x in xs], axis=axis)


def _dt(x):
    return DType.from_numpy(x.dtype)


def _concat_vjp(ctx, g):
    axis = ctx.params["axis"]
    cuts = np.cumsum([x.shape[axis] for x in ctx.inputs])[:-1]
    return tuple(np.split(g, cuts, axis=axis))


def _concat_samples(rng):
    r = rng.standard_normal
    yield Sample(args=([r((2, 3)), r((1, 3)), r((3, 3))],), params={"axis": 0}, name="axis0")
    yield Sample(args=([r((2, 3, 1)), r((2, 3, 2))],), params={"axis": -1}, name="negative")
    yield Sample(args=([np.array([1, 2], dtype=np.int32), r((3,))],), params={"axis": 0},
                 name="promote")


concat = OpDef(
    name="concat", inputs=("tensors*",), params={"axis": Param(kind="axis", default=0)},
    kernel=_concat, infer=_concat_infer, vjp=_concat_vjp, samples=_concat_samples,
    doc="Join tensors along an existing axis (torch.cat); dtypes promote.",
)


def _split_sizes(size, sizes, op="split") -> tuple:
    """Sizes of the pieces: a list as given (must add up to the axis size) or an int chunk size
    (the last piece may be smaller, as torch.split)."""
    if isinstance(sizes, (tuple, list)):
        sizes = dims(sizes)
        for s in sizes:
            if not isinstance(s, Dim) and s < 0:
                raise OpError(f"ops.{op}: sizes must be non-negative, got {sizes}")
        total = 0
        for s in sizes:
            total = total + s
        if not same_dim(total, size):
            if is_static(total, size) or not (isinstance(total, Dim) and isinstance(size, Dim)):
                raise OpError(f"ops.{op}: sizes {tuple(map(str, sizes))} add up to {total}, "
                              f"the axis has size {size}")
        return tuple(sizes)
    chunk = dim(sizes)
    if isinstance(chunk, Dim) or isinstance(size, Dim):
        # the number of pieces must be known: only an exact multiple works symbolically
        if isinstance(chunk, Dim) and same_dim(size, chunk):
            return (chunk,)
        n = size // chunk
        if not isinstance(n, Dim) and same_dim(n * chunk, size):
            return (chunk,) * n
        raise OpError(f"ops.{op}: splitting an axis of symbolic size {size} into chunks of "
                      f"{chunk} gives a number of outputs that depends on the size; pass a list "
                      f"of sizes")
    if chunk <= 0:
        raise OpError(f"ops.{op}: the chunk size must be positive, got {chunk}")
    if size == 0:
        return (0,)
    n_full, rest = divmod(size, chunk)
    return (chunk,) * n_full + ((rest,) if rest else ())


def pieces_infer(x, axis, sizes_of, op: str, verb: str) -> tuple:
    """The types of ``x`` cut along ``axis`` into ``sizes_of(size)``: split's and chunk's."""
    if x.ndim == 0:
        raise OpError(f"ops.{op}: a zero-dimensional tensor cannot be {verb}")
    a = norm_axis(axis, x.ndim, op)
    out = []
    for s in sizes_of(x.shape[a]):
        shape = list(x.shape)
        shape[a] = s
        out.append(TensorType(x.dtype, shape))
    return tuple(out)


def pieces(x, axis, sizes_of, op: str) -> tuple:
    """``x`` cut along ``axis`` into ``sizes_of(size)`` (views)."""
    a = norm_axis(axis, x.ndim, op)
    cuts = np.cumsum(sizes_of(x.shape[a]))[:-1]
    return tuple(np.split(x, cuts, axis=a))


def _split_infer(x, sizes, axis=0):
    return pieces_infer(x, axis, lambda n: _split_sizes(n, sizes), "split", "split")


def _split(x, sizes, axis=0):
    return pieces(x, axis, lambda n: _split_sizes(n, sizes), "split")


def _split_vjp(ctx, *grads):
    return (np.concatenate(grads, axis=ctx.params["axis"]),)


def _split_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((5, 3)),), params={"sizes": 2, "axis": 0}, name="chunks")
    yield Sample(args=(r((2, 6)),), params={"sizes": [1, 3, 2], "axis": -1}, name="list")
    yield Sample(args=(r((4, 2)),), params={"sizes": 4}, name="one_piece")


split = OpDef(
    name="split", inputs=("x",),
    params={"sizes": Param(kind="ints", doc="a list of piece sizes, or an int chunk size"),
            "axis": Param(kind="axis", default=0)},
    kernel=_split, infer=_split_infer, vjp=_split_vjp, samples=_split_samples,
    methods=("split",), traits=OpTraits(view="slice"),
    doc="Split along axis into pieces (a tuple of tensors) as torch.split: sizes is a list of "
        "piece sizes adding up to the axis size, or an int chunk size (the last piece may be "
        "smaller).",
)


# -- expand / cast ---------------------------------------------------------------------------------
def _expand_shape(in_shape, shape):
    shape = dims(shape)
    in_shape = tuple(in_shape)
    lead = len(shape) - len(in_shape)
    if lead < 0:
        raise OpError(f"ops.expand: the target {_fmt(shape)} has fewer axes than the input "
                      f"{_fmt(in_shape)}")
    out = []
    for i, d in enumerate(shape):
        if i < lead:
            if _is_minus_one(d) or (not isinstance(d, Dim) and d < 0):
                raise OpError(f"ops.expand: size {d} is not allowed for a new leading axis "
                              f"(target {_fmt(shape)})")
            out.append(d)
            continue
        src = in_shape[i - lead]
        if _is_minus_one(d) or same_dim(d, src):
            out.append(src)
        elif not isinstance(src, Dim) and src == 1:
            if not isinstance(d, Dim) and d < 0:
                raise OpError(f"ops.expand: invalid size {d} in {_fmt(shape)}")
            out.append(d)
        else:
            raise OpError(f"ops.expand: cannot expand {_fmt(in_shape)} to {_fmt(shape)}: axis "
                          f"{i} has size {src}, which is neither 1 nor {d}")
    return tuple(out)


def _expand(x, shape):
    return np.broadcast_to(x, _expand_shape(x.shape, shape))


expand = OpDef(
    name="expand", inputs=("x",), params={"shape": Param(kind="shape")},
    kernel=_expand,
    infer=lambda x, shape: TensorType(x.dtype, _expand_shape(x.shape, shape)),
    vjp=lambda ctx, g: (g,),  # the core sums the gradient back over the broadcast axes
    samples=lambda rng: [Sample(args=(rng.standard_normal((3, 1)),), params={"shape": (2, 3, 4)}),
                         Sample(args=(rng.standard_normal((1, 4)),), params={"shape": (3, -1)},
                                name="keep"),
                         Sample(args=(np.array(1.5),), params={"shape": (2, 2)}, name="scalar")],
    methods=("expand",), traits=OpTraits(view="expand"),
    doc="Broadcast to a larger shape without copying (torch.expand): -1 keeps an axis, new "
        "axes go in front. The result is a read-only view.",
)


def _cast(x, dtype):
    return cast_to(x, dtype.numpy)


def _cast_samples(rng):
    yield Sample(args=(rng.standard_normal((3, 4)).astype(np.float32),), params={"dtype": "f64"},
                 name="f32_to_f64")
    yield Sample(args=(np.array([-1.7, -0.2, 0.0, 0.6, 2.5]),), params={"dtype": "i64"},
                 name="to_int")
    yield Sample(args=(np.array([[True, False]]),), params={"dtype": "f32"}, name="from_bool")


cast = OpDef(
    name="cast", inputs=("x",), params={"dtype": Param(kind="dtype")},
    kernel=_cast, infer=lambda x, dtype: TensorType(dtype, x.shape),
    vjp=lambda ctx, g: (g,),  # the core casts the gradient back to the input's dtype
    samples=_cast_samples, methods=("cast", "__cast__"), traits=OpTraits(noop_when_same_type=True),
    doc="Convert to dtype (floats to ints truncate toward zero, as numpy and PyTorch). "
        "Differentiable between float types only: an int or bool result carries no gradient "
        "(the core records gradients for float outputs only).",
)

OPS = (transpose, permute, reshape, flatten, squeeze, unsqueeze, concat, split, expand, cast)
