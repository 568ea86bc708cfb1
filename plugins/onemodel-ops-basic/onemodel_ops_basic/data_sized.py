"""``sized_from_data``: ONNX ops whose output sizes are the *values* of an input read at run time
and that ``shape_from_data``'s kinds do not cover: Tile (repeats), OneHot (depth), CenterCropPad
(the target shape) and the Hann / Hamming / Blackman windows (the window size).

Why an op apart from the ops with static params (``tile``, ``one_hot``): those keep PyTorch's
signatures and params that passes specialise on; these forms follow ONNX's rules for the data
(OneHot counts negative indices from the end, CenterCropPad centres with the smaller half first).
As in ``shape_from_data``, ``dims`` declares the output shape: sizes known at import are kept,
every other is a data size bound when the node runs, and the kernel checks its result against it.
"""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import Dim, DType, OpError, TensorType

KINDS = ("Tile", "OneHot", "CenterCropPad", "HannWindow", "HammingWindow", "BlackmanWindow")
WINDOWS = ("HannWindow", "HammingWindow", "BlackmanWindow")


def _ints(a, what: str) -> list[int]:
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise OpError(f"ops.sized_from_data: {what} must be an integer tensor, got {a.dtype}")
    return [int(v) for v in a.reshape(-1)]


def _tile(x, repeats):
    reps = _ints(repeats, "Tile repeats")
    if len(reps) != x.ndim or any(r < 0 for r in reps):
        raise OpError(f"ops.sized_from_data: Tile repeats {reps} must be {x.ndim} sizes >= 0")
    return np.tile(x, reps)


def _one_hot(indices, depth, values, axis):
    """ONNX OneHot: ``values[1]`` where the (float indices truncated) index, negative ones
    counted from the end, equals the position along the new axis, ``values[0]`` elsewhere."""
    depth = np.asarray(depth).reshape(-1)
    if depth.size != 1:
        raise OpError(f"ops.sized_from_data: OneHot depth must hold one value, got {depth.size}")
    n = int(depth[0])
    if n < 1:
        raise OpError(f"ops.sized_from_data: OneHot depth must be >= 1, got {depth[0]}")
    values = np.asarray(values).reshape(-1)
    if values.size != 2:
        raise OpError(f"ops.sized_from_data: OneHot values must hold [off, on], got "
                      f"{values.size} values")
    idx = np.asarray(indices)
    idx = np.trunc(idx).astype(np.int64) if idx.dtype.kind == "f" else idx.astype(np.int64)
    idx = np.where(idx < 0, idx + n, idx)
    a = axis % (idx.ndim + 1)
    hit = np.expand_dims(idx, a) == np.arange(n).reshape((n,) + (1,) * (idx.ndim - a))
    return np.where(hit, values[1], values[0]).astype(values.dtype)


def _center_crop_pad(x, shape, axes):
    target = _ints(shape, "CenterCropPad shape")
    axes = list(range(x.ndim)) if axes is None else [a % x.ndim for a in axes]
    if len(target) != len(axes):
        raise OpError(f"ops.sized_from_data: CenterCropPad shape {target} has "
                      f"{len(target)} sizes for {len(axes)} axes")
    out_shape, src, dst = list(x.shape), [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for a, t in zip(axes, target):
        if t < 0:
            raise OpError(f"ops.sized_from_data: CenterCropPad size {t} is negative")
        n = x.shape[a]
        out_shape[a] = t
        if t < n:  # crop: the smaller half of the excess is cut at the start
            src[a] = slice((n - t) // 2, (n - t) // 2 + t)
        elif t > n:  # pad with zeros: the smaller half of the room goes first
            dst[a] = slice((t - n) // 2, (t - n) // 2 + n)
    out = np.zeros(out_shape, x.dtype)
    out[tuple(dst)] = x[tuple(src)]
    return out


def _window(kind, size, periodic, dtype):
    (n,) = _ints(size, f"{kind} size") or [None]
    if n is None or n < 0:
        raise OpError(f"ops.sized_from_data: {kind} size must be one integer >= 0")
    denom = n if periodic else n - 1
    k = np.arange(n, dtype=np.float64)
    phase = 2.0 * np.pi * k / denom if denom > 0 else np.zeros(n)
    if kind == "HannWindow":
        w = 0.5 - 0.5 * np.cos(phase)
    elif kind == "HammingWindow":
        w = 25.0 / 46.0 - (21.0 / 46.0) * np.cos(phase)
    else:
        w = 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2.0 * phase)
    return w.astype((dtype or DType.F32).numpy)


def _compute(kind, x, a, b, axis, axes, periodic, dtype):
    if kind == "Tile":
        return _tile(x, a)
    if kind == "OneHot":
        return _one_hot(x, a, b, axis)
    if kind == "CenterCropPad":
        return _center_crop_pad(x, a, axes)
    return _window(kind, x, periodic, dtype)


def _kernel(x=None, a=None, b=None, *, kind, dims, axis=-1, axes=None, periodic=True,
            dtype=None):
    out = np.ascontiguousarray(_compute(kind, x, a, b, axis, axes, periodic, dtype))
    (want,) = dims
    fixed = [w is not None and not isinstance(w, Dim) for w in want]
    if len(out.shape) != len(want) or any(f and int(w) != n
                                          for f, w, n in zip(fixed, want, out.shape)):
        raise OpError(f"ops.sized_from_data: {kind} gives shape {list(out.shape)}, but dims "
                      f"declares {[str(w) for w in want]}")
    return out


def _infer(x=None, a=None, b=None, *, kind, dims, axis=-1, axes=None, periodic=True,
           dtype=None):
    if not (isinstance(dims, tuple) and len(dims) == 1 and isinstance(dims[0], tuple)):
        raise OpError("ops.sized_from_data: dims must hold one shape")
    for v in dims[0]:
        if not isinstance(v, (int, Dim)) or isinstance(v, bool):
            raise OpError(f"ops.sized_from_data: dims holds {v!r}, not a size")
    if x is None:
        raise OpError(f"ops.sized_from_data: {kind} needs its first input")
    sized_by = x if kind in WINDOWS else a
    if kind != "OneHot" and (sized_by is None or not sized_by.dtype.is_int):
        raise OpError(f"ops.sized_from_data: {kind}'s size input must be an integer tensor")
    if kind in WINDOWS:
        out = dtype or DType.F32
    elif kind == "OneHot":
        if a is None or b is None:
            raise OpError("ops.sized_from_data: OneHot needs indices, depth and values")
        out = b.dtype
    else:
        out = x.dtype
    return TensorType(out, dims[0])


def _samples(rng):
    r = rng.standard_normal
    i64 = np.int64
    yield Sample(args=(r((2, 3)), np.array([2, 1], i64)),
                 params={"kind": "Tile", "dims": ((4, 3),)}, grad=False, name="tile")
    yield Sample(args=(np.array([[1, -1], [3, -4]], i64), np.array(4, i64),
                       np.array([-2.0, 5.0], np.float32)),
                 params={"kind": "OneHot", "dims": ((2, 4, 2),), "axis": 1}, grad=False,
                 name="one_hot_axis1")
    yield Sample(args=(np.array([1.0, 2.0, -1.0], np.float32), np.array(3.0, np.float32),
                       np.array([0.0, 9.0], np.float32)),
                 params={"kind": "OneHot", "dims": ((3, 3),)}, grad=False,
                 name="one_hot_float_indices")
    yield Sample(args=(r((5, 2, 3)), np.array([2, 5], i64)),
                 params={"kind": "CenterCropPad", "dims": ((2, 5, 3),), "axes": (0, -2)},
                 grad=False, name="center_crop_pad")
    for kind in WINDOWS:
        for periodic in (True, False):
            yield Sample(args=(np.array(7, i64),),
                         params={"kind": kind, "dims": ((7,),), "periodic": periodic,
                                 "dtype": DType.F64}, grad=False,
                         name=f"{kind.lower()}_{'periodic' if periodic else 'symmetric'}")


sized_from_data = OpDef(
    name="sized_from_data", inputs=("x", "a?", "b?"),
    params={"kind": Param(kind="str", choices=KINDS, doc="the ONNX op type it computes"),
            "dims": Param(kind="any", doc="the output shape: sizes known at import, data sizes "
                                          "(symbols bound at run time) elsewhere"),
            "axis": Param(kind="int", default=-1, doc="OneHot's axis"),
            "axes": Param(kind="any", default=None, optional=True,
                          doc="CenterCropPad's axes (None: every axis)"),
            "periodic": Param(kind="bool", default=True, doc="a window's periodic"),
            "dtype": Param(kind="dtype", default=None, optional=True,
                           doc="a window's output dtype")},
    kernel=_kernel, infer=_infer,
    vjp=None,  # only ONNX import makes it; sizes read from data are not differentiable
    samples=_samples,
    doc="An ONNX op (kind: Tile, OneHot, CenterCropPad, a window) whose output sizes are values "
        "of an input read at run time; dims declares the output shape.",
)

OPS = (sized_from_data,)
