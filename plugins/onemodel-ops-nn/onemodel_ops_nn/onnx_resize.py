"""ONNX mapping of ``resize`` (resize_onnx.py) and the one import rule for ``Resize``.

The rule tries ``interpolate`` first (PyTorch's modes on 1 or 2 spatial axes with constant
scales or sizes from input axes: a static, differentiable op the backends specialise), and
takes every other Resize of opsets 11-19 as ``resize``. Output sizes the import can compute
are stated (an integer scale of a symbolic axis, sizes from ``Shape`` arithmetic); the others
are data sizes (``ctx.data_dim()``), read from the result when the node runs.
"""
from __future__ import annotations

import math

import numpy as np

from onemodel.core.symbolic import Dim
from onemodel.registry import OnnxSpec

from .onnx_mapping_more import _import_resize as _import_interpolate
from .resize_onnx import MODES, NEAREST_MODES, POLICIES, TRANSFORMS, plan

_ATTRS = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
          "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75, "exclude_outside": 0,
          "extrapolation_value": 0.0, "antialias": 0, "axes": None,
          "keep_aspect_ratio_policy": "stretch"}
_CHOICES = {"mode": MODES, "coordinate_transformation_mode": TRANSFORMS,
            "nearest_mode": NEAREST_MODES, "keep_aspect_ratio_policy": POLICIES}


def _params(ctx, node, rank):
    p = {}
    for name, default in _ATTRS.items():
        v = node.attr(name, default)
        if name in _CHOICES and v not in _CHOICES[name]:
            ctx.unsupported(f"Resize {name}={v!r} (one of {', '.join(_CHOICES[name])})")
        p[name] = v
    axes = p["axes"] or []
    if any(not -rank <= a < rank for a in axes):
        ctx.unsupported(f"Resize axes {axes} out of range for rank {rank}")
    p["axes"] = tuple(a % rank for a in axes)
    for flag in ("exclude_outside", "antialias"):
        p[flag] = bool(p[flag])
    if p["antialias"] and p["mode"] == "nearest":
        ctx.unsupported("Resize with antialias in mode nearest (linear and cubic only)")
    p["cubic_coeff_a"] = float(p["cubic_coeff_a"])
    p["extrapolation_value"] = float(p["extrapolation_value"])
    return p


def _nonempty(ctx, name):
    """A constant input's array, [] for a constant empty one, None when fed at run time."""
    if not name:
        return []
    arr = ctx.const(name)
    if arr is not None:
        return list(np.asarray(arr).reshape(-1))
    sym = ctx.symbolic(name)
    if sym is not None:
        return list(sym.reshape(-1))
    return None


def _dims(ctx, shape, scales, sizes, axes, policy):
    """The output shape the import can state, a data size wherever it cannot."""
    r = len(shape)
    listed = list(axes) or list(range(r))
    if scales is None or sizes is None:  # fed at run time: which one is empty is data too
        return tuple(ctx.data_dim() if a in listed else d for a, d in enumerate(shape))
    if scales and sizes:
        ctx.unsupported("Resize with both scales and sizes")
    if not scales and not sizes:
        ctx.unsupported("Resize with neither scales nor sizes")
    if scales:
        if len(scales) != len(listed):
            ctx.unsupported(f"Resize with {len(scales)} scales for {len(listed)} axes")
        out = list(shape)
        for a, s in zip(listed, scales):
            s = float(s)
            if not s > 0:
                ctx.unsupported(f"Resize scale {s} (scales must be > 0)")
            d = shape[a]
            if not isinstance(d, Dim):
                out[a] = int(math.floor(d * s))
            elif s.is_integer():
                out[a] = d * int(s)
            else:
                out[a] = ctx.data_dim()
        return tuple(out)
    if len(sizes) != len(listed):
        ctx.unsupported(f"Resize with {len(sizes)} sizes for {len(listed)} axes")
    if policy == "stretch":
        out = list(shape)
        for a, v in zip(listed, sizes):
            out[a] = v if isinstance(v, Dim) else int(v)
        return tuple(out)
    if any(isinstance(v, Dim) for v in list(sizes) + [shape[a] for a in listed]):
        return tuple(ctx.data_dim() if a in listed else d for a, d in enumerate(shape))
    static = [1 if isinstance(d, Dim) else int(d) for d in shape]
    planned = plan(static, None, [int(v) for v in sizes], listed, policy)
    return tuple(planned[a][0] if a in listed else d for a, d in enumerate(shape))


def _import_resize(ctx, node):
    if ctx.opset < 11:
        ctx.unsupported(f"Resize-10 (opset {ctx.opset}; opsets 11 and later are imported)")
    try:
        return _import_interpolate(ctx, node)
    except Exception as exc:  # noqa: BLE001 - any refusal: the general op below takes it
        from onemodel.formats.onnx_api import OnnxUnsupportedError

        if not isinstance(exc, OnnxUnsupportedError):
            raise
    x = node.inputs[0]
    shape = tuple(ctx.type(x).shape)
    p = _params(ctx, node, len(shape))
    roi, scales_in, sizes_in = node.input(1), node.input(2), node.input(3)
    scales, sizes = _nonempty(ctx, scales_in), _nonempty(ctx, sizes_in)
    if p["coordinate_transformation_mode"] != "tf_crop_and_resize":
        roi = ""  # read only by crop-and-resize
    dims = _dims(ctx, shape, scales, sizes, p["axes"], p["keep_aspect_ratio_policy"])
    ins = [x, roi or None, None if scales == [] else scales_in,
           None if sizes == [] else sizes_in]
    return [ctx.emit("resize", ins, dims=(dims,), **p)]


def _export_resize(ctx, node):
    p = node.params
    ins = [ctx.name_of(i) for i in node.inputs]
    ins += [""] * (4 - len(ins))
    while ins and not ins[-1]:
        ins.pop()
    attrs = {k: p[k] for k in ("mode", "coordinate_transformation_mode", "nearest_mode",
                               "cubic_coeff_a", "extrapolation_value")}
    attrs["exclude_outside"] = int(p["exclude_outside"])
    if ctx.opset >= 18:
        attrs["antialias"] = int(p["antialias"])
        attrs["keep_aspect_ratio_policy"] = p["keep_aspect_ratio_policy"]
        if p["axes"]:
            attrs["axes"] = list(p["axes"])
    elif p["antialias"] or p["axes"] or p["keep_aspect_ratio_policy"] != "stretch":
        ctx.unsupported(node, f"Resize with antialias, axes or keep_aspect_ratio_policy needs "
                              f"opset 18 (exporting at {ctx.opset})")
    if ctx.opset < 19 and p["coordinate_transformation_mode"] == "half_pixel_symmetric":
        ctx.unsupported(node, "Resize's half_pixel_symmetric needs opset 19")
    ctx.make_node("Resize", ins, ctx.outputs(node), **attrs)


ONNX = {"resize": OnnxSpec(export=_export_resize, imports={"Resize": _import_resize},
                           doc="Resize (every mode; PyTorch's modes import as interpolate); "
                               "imports Upsample too")}
