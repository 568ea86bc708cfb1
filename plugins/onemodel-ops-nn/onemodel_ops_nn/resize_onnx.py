"""``resize``: ONNX's Resize (opsets 11-19), every mode, coordinate transformation and nearest
rounding, with ``scales``, ``sizes`` and ``roi`` as tensors read when the node runs.

Why an op apart from ``interpolate``: interpolate keeps PyTorch's signature and rules (API.md);
ONNX's Resize has seven coordinate mappings, four nearest roundings, cubic and antialiased
filters, ``axes``, ``keep_aspect_ratio_policy`` and crop-and-resize extrapolation, which only
ONNX files use. Every mode is separable: along each resized axis an output position reads a few
input positions (clamped to the edge) with weights that depend on its source coordinate alone,
so the kernel resizes one axis at a time, in float64, and casts back (integers rounded half to
even and saturated, as ONNX's reference does). Output sizes are the ``dims`` param: the import
states those it can compute (constant scales, sizes from input axes) and a *data size*
elsewhere (see data_shaped.py in onemodel-ops-basic); the kernel checks its result against them.
"""
from __future__ import annotations

import math

import numpy as np

from onemodel.core import DType, TensorType
from onemodel.errors import OpError
from onemodel.registry import OpDef, Param, Sample

MODES = ("nearest", "linear", "cubic")
TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
              "asymmetric", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
POLICIES = ("stretch", "not_larger", "not_smaller")


def _fail(why: str):
    raise OpError(f"ops.resize: {why}")


def plan(shape, scales, sizes, axes, policy):
    """Per axis of ``shape``: (output size, scale). ``scales`` / ``sizes`` (one per entry of
    ``axes``, every axis when ``axes`` is empty) follow ONNX: output = floor(in * scale), or the
    given size with scale = out / in (one shared scale under a keep-aspect-ratio policy, the
    sizes then rounded half up)."""
    r = len(shape)
    axes = [a % r for a in axes] if axes else list(range(r))
    if len(set(axes)) != len(axes):
        _fail(f"axes {list(axes)} repeat an axis")
    have_scales = scales is not None and np.asarray(scales).size > 0
    have_sizes = sizes is not None and np.asarray(sizes).size > 0
    if have_scales == have_sizes:
        _fail("give exactly one of scales and sizes (a non-empty tensor)")
    out = [(int(d), 1.0) for d in shape]
    if have_scales:
        s = [float(v) for v in np.asarray(scales).reshape(-1)]
        if len(s) != len(axes):
            _fail(f"{len(s)} scales for {len(axes)} axes")
        for a, v in zip(axes, s):
            if not v > 0:
                _fail(f"scales must be > 0, got {s}")
            out[a] = (int(math.floor(shape[a] * v)), v)
        return out
    z = [int(v) for v in np.asarray(sizes).reshape(-1)]
    if len(z) != len(axes):
        _fail(f"{len(z)} sizes for {len(axes)} axes")
    if any(v < 0 for v in z):
        _fail(f"sizes must be >= 0, got {z}")
    ratios = [z[i] / shape[a] if shape[a] else 1.0 for i, a in enumerate(axes)]
    if policy == "stretch":
        for a, v, q in zip(axes, z, ratios):
            out[a] = (v, q)
        return out
    q = min(ratios) if policy == "not_larger" else max(ratios)
    for a in axes:
        out[a] = (int(shape[a] * q + 0.5), q)
    return out


def _coeffs(mode, ratio, scale, antialias, a, nearest_mode):
    """Weights of the neighbours of one output position (ONNX's filters; ratio in (0, 1])."""
    if mode == "nearest":
        if float(ratio).is_integer():
            return np.array([0.0, 1.0])
        pick = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
                "floor": False, "ceil": True}[nearest_mode]
        return np.array([0.0, 1.0]) if pick else np.array([1.0, 0.0])
    if mode == "linear":
        if not antialias:
            return np.array([1.0 - ratio, ratio])
        s = min(scale, 1.0)
        start = int(np.floor(-1 / s) + 1)
        args = (np.arange(start, 2 - start) - ratio) * s
        c = np.clip(1 - np.abs(args), 0, 1)
        return c / c.sum()
    if not antialias:
        r, q = ratio, 1 - ratio
        return np.array([((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                         ((a + 2) * r - (a + 3)) * r * r + 1,
                         ((a + 2) * q - (a + 3)) * q * q + 1,
                         ((a * (q + 1) - 5 * a) * (q + 1) + 8 * a) * (q + 1) - 4 * a])
    s = min(scale, 1.0)
    start = int(np.floor(-2 / s) + 1)
    x = np.abs(s * (np.arange(start, 2 - start) - ratio))
    c = np.where(x <= 1, (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1,
                 np.where(x < 2, a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a, 0.0))
    return c / c.sum()


def _source(transform, n_in, n_out, scale, roi):
    """The source coordinate of each output position, and (crop-and-resize) which lie
    outside the input."""
    y = np.arange(n_out, dtype=np.float64)
    width = scale * n_in
    outside = None
    if transform == "align_corners":
        x = np.zeros(n_out) if width == 1 else y * (n_in - 1) / (width - 1)
    elif transform == "asymmetric":
        x = y / scale
    elif transform == "tf_crop_and_resize":
        lo, hi = roi
        x = (np.full(n_out, (hi - lo) * (n_in - 1) / 2) if width == 1
             else y * (hi - lo) * (n_in - 1) / (width - 1))
        x = x + lo * (n_in - 1)
        outside = (x < 0) | (x > n_in - 1)
    elif transform == "pytorch_half_pixel":
        x = np.full(n_out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    elif transform == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric
        offset = n_in / 2 * (1 - n_out / width)
        x = offset + (y + 0.5) / scale - 0.5
    return x, outside


def axis_weights(n_in, n_out, scale, *, mode, transform, nearest_mode, cubic_coeff_a,
                 exclude_outside, antialias, roi=(0.0, 1.0)):
    """(n_out, k) weights and (n_out, k) input indices (clamped to the edge) of one axis,
    and the crop-and-resize mask of outputs outside the input (or None)."""
    x, outside = _source(transform, n_in, n_out, scale, roi)
    floor = np.floor(x)
    ratio = np.where(x == floor, 1.0, x - floor)  # prefer the left pixel: ratio in (0, 1]
    rows = [_coeffs(mode, float(r), scale, antialias, cubic_coeff_a, nearest_mode)
            for r in ratio]
    k = len(rows[0]) if rows else 2
    w = np.array(rows, dtype=np.float64).reshape(n_out, k)
    pad = int(math.ceil(k / 2))
    xp = x + pad
    p = np.floor(xp).astype(np.int64)
    frac = xp - p
    if k % 2 == 0:
        start = p + np.where(frac == 0, -(k // 2), -(k // 2) + 1)
    else:
        base = -((k - 1) // 2)
        start = p + np.where(frac <= 0.5, base, base + 1)
    idx = start[:, None] + np.arange(k)[None, :] - pad
    if exclude_outside:
        w = np.where((idx < 0) | (idx >= n_in), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    return w, np.clip(idx, 0, max(n_in - 1, 0)), outside


def _roi_pairs(roi, r, axes):
    """(start, end) per axis from ONNX's roi ([starts..., ends...] over ``axes``)."""
    pairs = [(0.0, 1.0)] * r
    if roi is None or np.asarray(roi).size == 0:
        return pairs
    vals = [float(v) for v in np.asarray(roi).reshape(-1)]
    axes = [a % r for a in axes] if axes else list(range(r))
    if len(vals) != 2 * len(axes):
        _fail(f"roi holds {len(vals)} values; {2 * len(axes)} expected (start and end per axis)")
    for i, a in enumerate(axes):
        pairs[a] = (vals[i], vals[len(axes) + i])
    return pairs


def _cast_back(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.round(y), info.min, info.max).astype(dtype)
    return y.astype(dtype)


def _kernel(x, roi=None, scales=None, sizes=None, *, mode, coordinate_transformation_mode,
            nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value, antialias, axes,
            keep_aspect_ratio_policy, dims):
    r = x.ndim
    sizes_plan = plan(x.shape, scales, sizes, axes, keep_aspect_ratio_policy)
    rois = _roi_pairs(roi, r, axes)
    crop = coordinate_transformation_mode == "tf_crop_and_resize"
    nearest = mode == "nearest"  # a pick, not a weighted sum: exact for every dtype, inf, nan
    y = x if nearest else x.astype(np.float64)
    mask = None
    for a, (n_out, scale) in enumerate(sizes_plan):
        if n_out == x.shape[a] and math.isclose(scale, 1.0) and (
                not crop or np.allclose(rois[a], (0.0, 1.0))):
            continue
        if n_out == 0 or x.shape[a] == 0:
            shape = list(y.shape)
            shape[a] = n_out
            y = np.zeros(shape, y.dtype)
            continue
        w, idx, outside = axis_weights(
            x.shape[a], n_out, scale, mode=mode, transform=coordinate_transformation_mode,
            nearest_mode=nearest_mode, cubic_coeff_a=cubic_coeff_a,
            exclude_outside=exclude_outside, antialias=antialias, roi=rois[a])
        moved = np.moveaxis(y, a, -1)
        if nearest:
            picked = idx[np.arange(n_out), np.argmax(w, axis=1)]
            y = np.moveaxis(moved[..., picked], -1, a)
        else:
            y = np.moveaxis((moved[..., idx] * w).sum(axis=-1), -1, a)
        if outside is not None and outside.any():
            shape = [1] * r
            shape[a] = n_out
            m = outside.reshape(shape)
            mask = m if mask is None else (mask | m)
    if mask is not None:
        y = np.where(mask, np.asarray(extrapolation_value).astype(y.dtype), y)
    out = np.ascontiguousarray(y if y.dtype == x.dtype else _cast_back(y, x.dtype))
    (want,) = dims
    if len(want) != out.ndim or any(isinstance(d, int) and int(d) != n
                                    for d, n in zip(want, out.shape)):
        _fail(f"the result has shape {list(out.shape)}, but dims declares "
              f"{[str(d) for d in want]}")
    return out


def _infer(x, roi=None, scales=None, sizes=None, *, mode, coordinate_transformation_mode,
           nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value, antialias, axes,
           keep_aspect_ratio_policy, dims):
    if x.dtype == DType.BOOL:
        _fail(f"expects a numeric tensor, got {x}")
    for what, t, ok in (("roi", roi, "f"), ("scales", scales, "f"), ("sizes", sizes, "i")):
        if t is not None and (ok == "f") != t.dtype.is_float:
            _fail(f"{what} must be a {'float' if ok == 'f' else 'int64'} tensor, got {t}")
    if antialias and mode == "nearest":
        _fail("antialias applies to the linear and cubic modes, not nearest")
    if (not isinstance(dims, tuple) or len(dims) != 1 or not isinstance(dims[0], tuple)
            or len(dims[0]) != len(x.shape)):
        _fail(f"dims must hold one shape of rank {len(x.shape)}, got {dims!r}")
    return TensorType(x.dtype, dims[0])


def _defaults(**kw):
    p = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
         "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75, "exclude_outside": False,
         "extrapolation_value": 0.0, "antialias": False, "axes": (),
         "keep_aspect_ratio_policy": "stretch"}
    p.update(kw)
    return p


def _samples(rng):
    r = rng.standard_normal
    f32 = np.float32
    x = r((1, 2, 4, 5)).astype(f32)
    yield Sample(args=(x, None, np.array([1, 1, 2, 1.5], f32)),
                 params=_defaults(dims=((1, 2, 8, 7),)), grad=False, name="nearest")
    yield Sample(args=(x, None, np.array([1, 1, 0.6, 0.8], f32)),
                 params=_defaults(mode="linear", antialias=True, dims=((1, 2, 2, 4),)),
                 grad=False, name="linear_antialias")
    yield Sample(args=(x, None, None, np.array([3, 9], np.int64)),
                 params=_defaults(mode="cubic", axes=(2, 3), exclude_outside=True,
                                  coordinate_transformation_mode="align_corners",
                                  dims=((1, 2, 3, 9),)), grad=False, name="cubic_sizes_axes")
    yield Sample(args=(x, np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.2], f32), None,
                       np.array([1, 2, 3, 4], np.int64)),
                 params=_defaults(mode="linear", coordinate_transformation_mode=
                                  "tf_crop_and_resize", extrapolation_value=5.0,
                                  dims=((1, 2, 3, 4),)), grad=False, name="crop_and_resize")
    yield Sample(args=(rng.integers(0, 255, (1, 1, 3, 3)).astype(np.uint8), None, None,
                       np.array([5, 4], np.int64)),
                 params=_defaults(axes=(2, 3), keep_aspect_ratio_policy="not_smaller",
                                  dims=((1, 1, 5, 5),)), grad=False,
                 name="uint8_not_smaller")  # nearest: ONNX Runtime's uint8 linear rounds apart


resize = OpDef(
    name="resize", inputs=("x", "roi?", "scales?", "sizes?"),
    params={"mode": Param(kind="str", default="nearest", choices=MODES),
            "coordinate_transformation_mode": Param(kind="str", default="half_pixel",
                                                    choices=TRANSFORMS),
            "nearest_mode": Param(kind="str", default="round_prefer_floor",
                                  choices=NEAREST_MODES),
            "cubic_coeff_a": Param(kind="float", default=-0.75),
            "exclude_outside": Param(kind="bool", default=False),
            "extrapolation_value": Param(kind="float", default=0.0),
            "antialias": Param(kind="bool", default=False),
            "axes": Param(kind="ints", default=(), doc="the axes scales/sizes/roi name (all "
                                                         "when empty)"),
            "keep_aspect_ratio_policy": Param(kind="str", default="stretch", choices=POLICIES),
            "dims": Param(kind="any", doc="the output shape (one tuple in a tuple): sizes "
                                          "known at import, data sizes elsewhere")},
    kernel=_kernel, infer=_infer,
    vjp=None,  # only ONNX import makes it; interpolate is the differentiable resize
    samples=_samples,
    doc="ONNX's Resize: nearest, linear or cubic over any axes, with scales, sizes and roi as "
        "tensors (read at run time) and every coordinate transformation mode; dims declares "
        "the output shape.",
)

OPS = (resize,)
