"""interpolate (nearest, linear, bilinear) and pixel_shuffle / pixel_unshuffle, PyTorch's.

interpolate is linear in its input and separable: along each spatial axis the output is the
input times an (in, out) matrix of PyTorch's source weights (`resize_matrix`), so the forward is
one matrix product per axis and the gradient the same products by the transposes. The matrices
are built at run time from the concrete input size, so an input axis may be symbolic (with
``size=``, or an integer ``scale_factor``).
"""
from __future__ import annotations

import math

import numpy as np

from onemodel.core import TensorType
from onemodel.core.symbolic import Dim
from onemodel.errors import OpError
from onemodel.registry import OpDef, OpTraits, Param, Sample

from ._common import as_dtype, check_dim, float_dtype, result_dtype

MODES = ("nearest", "linear", "bilinear")
_SPATIAL = {"linear": 1, "bilinear": 2}


def resize_matrix(n_in: int, n_out: int, mode: str, align_corners, scale) -> np.ndarray:
    """(n_in, n_out) weights: column j holds PyTorch's source weights of output j. ``scale`` is
    1 / scale_factor when one was given, else None (then in / out)."""
    j = np.arange(n_out, dtype=np.float64)
    m = np.zeros((n_in, n_out))
    if mode == "nearest":
        s = n_in / n_out if scale is None else scale
        src = np.minimum(np.floor(j * s).astype(np.int64), n_in - 1)
        m[src, np.arange(n_out)] = 1.0
        return m
    if align_corners:
        src = j * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        s = n_in / n_out if scale is None else scale
        src = np.maximum((j + 0.5) * s - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = src - lo
    np.add.at(m, (lo, np.arange(n_out)), 1.0 - frac)
    np.add.at(m, (hi, np.arange(n_out)), frac)
    return m


def _spatial_count(op, x, mode):
    n = x.ndim - 2
    if n < 1 or n > 2:
        raise OpError(f"ops.{op}: expects input (N, C, L) or (N, C, H, W), got {x}")
    if mode in _SPATIAL and _SPATIAL[mode] != n:
        raise OpError(f"ops.{op}: mode {mode!r} needs a {_SPATIAL[mode] + 2}-d input, got {x}")
    return n


def _per_axis(op, name, value, n):
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        if len(value) != n:
            raise OpError(f"ops.{op}: {name} must be one number or {n}, got {value!r}")
        return tuple(value)
    return (value,) * n


def _plan(op, shape, size, scale_factor, mode, align_corners):
    """Per spatial axis: (output size, scale for the source index or None)."""
    n = len(shape) - 2
    if (size is None) == (scale_factor is None):
        raise OpError(f"ops.{op}: give exactly one of size and scale_factor")
    if align_corners is not None and mode == "nearest":
        raise OpError(f"ops.{op}: align_corners only applies to the linear modes, not "
                      f"{mode!r}")
    sizes = _per_axis(op, "size", size, n)
    scales = _per_axis(op, "scale_factor", scale_factor, n)
    plan = []
    for a in range(n):
        length = shape[2 + a]
        if sizes is not None:
            out = sizes[a]
            if not isinstance(out, Dim) and int(out) < 1:
                raise OpError(f"ops.{op}: size must be >= 1, got {size!r}")
            plan.append((out, None))
            continue
        s = float(scales[a])
        if not s > 0:
            raise OpError(f"ops.{op}: scale_factor must be > 0, got {scale_factor!r}")
        if isinstance(length, Dim):
            if s != int(s):
                raise OpError(f"ops.{op}: a scale_factor of {s} on the symbolic axis {length} "
                              f"would make a size that is not a whole multiple; give an "
                              f"integer scale_factor or size=")
            out = length * int(s)
        else:
            out = int(math.floor(length * s))
            if out < 1:
                raise OpError(f"ops.{op}: scale_factor {s} makes an empty output from size "
                              f"{length}")
        plan.append((out, 1.0 / s))
    return plan


def _interp_infer(x, size, scale_factor, mode, align_corners):
    dtype = float_dtype("interpolate", x)
    _spatial_count("interpolate", x, mode)
    plan = _plan("interpolate", x.shape, size, scale_factor, mode, align_corners)
    return TensorType(dtype, tuple(x.shape[:2]) + tuple(o for o, _ in plan))


def _matrices(x, size, scale_factor, mode, align_corners, dt):
    plan = _plan("interpolate", x.shape, size, scale_factor, mode, align_corners)
    return [resize_matrix(x.shape[2 + a], int(o), mode, bool(align_corners), s).astype(dt)
            for a, (o, s) in enumerate(plan)]


def _interp_kernel(x, size, scale_factor, mode, align_corners):
    dt = result_dtype(x)
    y = as_dtype(x, dt)
    for a, m in enumerate(_matrices(x, size, scale_factor, mode, align_corners, dt)):
        axis = 2 + a
        y = np.moveaxis(np.moveaxis(y, axis, -1) @ m, -1, axis)
    return np.ascontiguousarray(y)


def _interp_vjp(ctx, g):
    (x,) = ctx.inputs
    p = ctx.params
    dt = result_dtype(x)
    gx = as_dtype(np.asarray(g), dt)
    for a, m in enumerate(_matrices(x, p["size"], p["scale_factor"], p["mode"],
                                    p["align_corners"], dt)):
        axis = 2 + a
        gx = np.moveaxis(np.moveaxis(gx, axis, -1) @ m.T, -1, axis)
    return (np.ascontiguousarray(gx),)


def _interp_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 3, 4, 5)),), params={"scale_factor": 2.0}, name="nearest_x2")
    yield Sample(args=(r((1, 2, 5, 4)),), params={"size": (7, 3)}, name="nearest_size")
    yield Sample(args=(r((1, 2, 5)),), params={"scale_factor": 1.5}, name="nearest_1d_frac")
    yield Sample(args=(r((2, 2, 4, 5)),), params={"scale_factor": 2.0, "mode": "bilinear"},
                 name="bilinear_x2")
    yield Sample(args=(r((1, 2, 4, 5)),), params={"size": (3, 8), "mode": "bilinear",
                                                  "align_corners": True},
                 name="bilinear_align_corners")
    yield Sample(args=(r((1, 2, 6)),), params={"size": 4, "mode": "linear"},
                 name="linear_down")
    yield Sample(args=(r((1, 2, 5)),), params={"scale_factor": 3.0, "mode": "linear",
                                               "align_corners": True}, name="linear_align_x3")


interpolate = OpDef(
    name="interpolate", inputs=("input",),
    params={"size": Param(kind="ints", default=None, optional=True,
                          doc="the output's spatial size: an int or one per axis"),
            "scale_factor": Param(kind="any", default=None, optional=True,
                                  doc="a number or one per axis: output = floor(input * s)"),
            "mode": Param(kind="str", default="nearest", choices=MODES),
            "align_corners": Param(kind="bool", default=None, optional=True,
                                   doc="linear modes: corner pixels' centres align (PyTorch)")},
    kernel=_interp_kernel, infer=_interp_infer, vjp=_interp_vjp, samples=_interp_samples,
    traits=OpTraits(batch="rows"),
    doc="Resize (N, C, L) or (N, C, H, W) input to size= or by scale_factor= with mode "
        "'nearest', 'linear' or 'bilinear' (torch.nn.functional.interpolate, align_corners as "
        "PyTorch; no antialias).",
)


# -- pixel_shuffle / pixel_unshuffle ------------------------------------------------------------
def _ps_infer(op, up):
    def infer(x, factor):
        dtype = x.dtype
        pname = "upscale_factor" if up else "downscale_factor"
        if factor < 1:
            raise OpError(f"ops.{op}: {pname} must be >= 1, got {factor}")
        if x.ndim < 3:
            raise OpError(f"ops.{op}: expects input (*, C, H, W), got {x}")
        *lead, c, h, w = x.shape
        r2 = factor * factor
        if up:
            if not isinstance(c, Dim) and c % r2:
                raise OpError(f"ops.{op}: the {c} channels of input {x} are not divisible by "
                              f"{pname}^2 = {r2}")
            return TensorType(dtype, (*lead, c // r2, h * factor, w * factor))
        for what, d in (("height", h), ("width", w)):
            if not isinstance(d, Dim) and d % factor:
                raise OpError(f"ops.{op}: the {what} {d} of input {x} is not divisible by "
                              f"{pname} {factor}")
            if isinstance(d, Dim):
                check_dim(op, f"the {what} of input {x} (a multiple of {factor})",
                          (d // factor) * factor, d)
        return TensorType(dtype, (*lead, c * r2, h // factor, w // factor))

    return infer


def shuffle(x, r):
    *lead, c, h, w = x.shape
    k = len(lead)
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    axes = list(range(k)) + [k, k + 3, k + 1, k + 4, k + 2]
    return np.ascontiguousarray(y.transpose(axes)).reshape(*lead, c // (r * r), h * r, w * r)


def unshuffle(x, r):
    *lead, c, h, w = x.shape
    k = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    axes = list(range(k)) + [k, k + 2, k + 4, k + 1, k + 3]
    return np.ascontiguousarray(y.transpose(axes)).reshape(*lead, c * r * r, h // r, w // r)


def _shuffle_decomposition(up):
    def decomposition(ops, x, factor):
        r = factor
        *lead, c, h, w = x.shape
        k = len(lead)
        lead = tuple(lead)
        if up:
            y = ops.reshape(x, lead + (c // (r * r), r, r, h, w))
            y = ops.permute(y, tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
            return ops.reshape(y, lead + (c // (r * r), h * r, w * r))
        y = ops.reshape(x, lead + (c, h // r, r, w // r, r))
        y = ops.permute(y, tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
        return ops.reshape(y, lead + (c * r * r, h // r, w // r))

    return decomposition


def _ps_samples(up):
    def samples(rng):
        r = rng.standard_normal
        if up:
            yield Sample(args=(r((2, 8, 3, 4)),), params={"upscale_factor": 2}, name="x2")
            yield Sample(args=(r((9, 2, 3)),), params={"upscale_factor": 3}, name="unbatched")
            yield Sample(args=(r((2, 1, 4, 2, 2)),), params={"upscale_factor": 2}, name="5d")
        else:
            yield Sample(args=(r((2, 2, 4, 6)),), params={"downscale_factor": 2}, name="x2")
            yield Sample(args=(r((1, 6, 9)),), params={"downscale_factor": 3}, name="unbatched")
    return samples


pixel_shuffle = OpDef(
    name="pixel_shuffle", inputs=("input",), params={"upscale_factor": Param(kind="int")},
    kernel=lambda x, upscale_factor: shuffle(x, upscale_factor),
    infer=lambda x, upscale_factor: _ps_infer("pixel_shuffle", True)(x, upscale_factor),
    vjp=lambda ctx, g: (unshuffle(np.asarray(g), ctx.params["upscale_factor"]),),
    samples=_ps_samples(True), decomposition=lambda ops, x, upscale_factor:
        _shuffle_decomposition(True)(ops, x, upscale_factor),
    doc="(*, C r^2, H, W) -> (*, C, H r, W r): channel c r^2 + i r + j moves to offset (i, j) "
        "of each r x r block (torch.nn.functional.pixel_shuffle).",
)

pixel_unshuffle = OpDef(
    name="pixel_unshuffle", inputs=("input",), params={"downscale_factor": Param(kind="int")},
    kernel=lambda x, downscale_factor: unshuffle(x, downscale_factor),
    infer=lambda x, downscale_factor: _ps_infer("pixel_unshuffle", False)(x, downscale_factor),
    vjp=lambda ctx, g: (shuffle(np.asarray(g), ctx.params["downscale_factor"]),),
    samples=_ps_samples(False), decomposition=lambda ops, x, downscale_factor:
        _shuffle_decomposition(False)(ops, x, downscale_factor),
    doc="The inverse of pixel_shuffle: (*, C, H r, W r) -> (*, C r^2, H, W) "
        "(torch.nn.functional.pixel_unshuffle).",
)

OPS = (interpolate, pixel_shuffle, pixel_unshuffle)
