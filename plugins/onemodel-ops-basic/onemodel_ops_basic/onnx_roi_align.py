"""ONNX RoiAlign imported as standard ops, so every backend runs it: the sample points of each
region (``sampling_ratio`` per bin and axis, fixed at import) are computed from the rois, then
the four neighbours of each point are gathered from the region's image and weighted as ONNX's
bilinear rule says (a point more than one pixel outside the image counts 0, one nearer is
clamped to the edge); ``avg`` averages a bin's samples, ``max`` takes the largest weighted
neighbour. plugin.py attaches the rule to the record of ``gather``."""
from __future__ import annotations

import numpy as np

from onemodel.formats.onnx_api import ONNX_TO_DTYPE

_I64 = ONNX_TO_DTYPE[7]  # INT64


def _axis_samples(ctx, start, size, bins: int, ratio: int, extent: int, dtype):
    """Per region, along one axis: (valid, low index, high index, low weight, high weight) of
    each of the ``bins * ratio`` sample points, every one [R, bins * ratio]."""
    grid = (np.arange(bins)[:, None] + (np.arange(ratio) + 0.5) / ratio).reshape(-1)
    pos = ctx.emit("add", [start, ctx.emit("mul", [ctx.emit("div", [size, np.array(bins, dtype)]),
                                                   grid.astype(dtype)])])
    valid = ctx.emit("logical_and", [ctx.emit("greater_equal", [pos, np.array(-1, dtype)]),
                                     ctx.emit("less_equal", [pos, np.array(extent, dtype)])])
    pos = ctx.emit("maximum", [pos, np.array(0, dtype)])
    low = ctx.emit("floor", [pos])
    edge = ctx.emit("greater_equal", [low, np.array(extent - 1, dtype)])
    last = np.array(extent - 1, dtype)
    low = ctx.emit("where", [edge, last, low])
    high = ctx.emit("where", [edge, last, ctx.emit("add", [low, np.array(1, dtype)])])
    pos = ctx.emit("where", [edge, low, pos])
    w_high = ctx.emit("sub", [pos, low])
    w_low = ctx.emit("sub", [np.array(1, dtype), w_high])
    return valid, low, high, w_low, w_high


def import_roi_align(ctx, node):
    x, rois, batch = node.inputs[0], node.inputs[1], node.inputs[2]
    t, tr = ctx.type(x), ctx.type(rois)
    if len(t.shape) != 4 or not all(isinstance(d, int) for d in t.shape[1:]):
        ctx.unsupported(f"RoiAlign of an input {[str(d) for d in t.shape]} ([N, C, H, W] with "
                        f"fixed C, H, W)")
    if not (t.dtype.is_float and tr.dtype == t.dtype) or len(tr.shape) != 2 or tr.shape[1] != 4:
        ctx.unsupported(f"RoiAlign rois {[str(d) for d in tr.shape]} of "
                        f"{tr.dtype.name.lower()} (float [R, 4] of the input's dtype)")
    mode = node.attr("mode", "avg")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    ctm = node.attr("coordinate_transformation_mode", "half_pixel")
    ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
    if mode not in ("avg", "max"):
        ctx.unsupported(f"RoiAlign mode {mode!r}")
    if ctm not in ("half_pixel", "output_half_pixel"):
        ctx.unsupported(f"RoiAlign coordinate_transformation_mode {ctm!r}")
    ratio = int(node.attr("sampling_ratio", 0))
    if ratio <= 0:
        ctx.unsupported(f"RoiAlign sampling_ratio {ratio}: an adaptive grid (0) depends on each "
                        f"roi's size; OneModel needs a fixed sampling_ratio > 0")
    oh, ow = int(node.attr("output_height", 1)), int(node.attr("output_width", 1))
    if oh < 1 or ow < 1:
        ctx.unsupported(f"RoiAlign output size {oh}x{ow}")
    scale = float(node.attr("spatial_scale", 1.0))
    dt = t.dtype.numpy
    _, c, hgt, wid = t.shape
    r = ctx.emit("sub", [ctx.emit("mul", [rois, np.array(scale, dt)]),
                         np.array(0.5 if ctm == "half_pixel" else 0.0, dt)])
    x1, y1, x2, y2 = (ctx.emit("narrow", [r], axis=1, start=k, length=1) for k in range(4))
    rw, rh = ctx.emit("sub", [x2, x1]), ctx.emit("sub", [y2, y1])
    if ctm == "output_half_pixel":  # malformed regions are forced to 1x1
        rw, rh = (ctx.emit("maximum", [v, np.array(1, dt)]) for v in (rw, rh))
    vy, ylo, yhi, wylo, wyhi = _axis_samples(ctx, y1, rh, oh, ratio, hgt, dt)
    vx, xlo, xhi, wxlo, wxhi = _axis_samples(ctx, x1, rw, ow, ratio, wid, dt)
    n_y, n_x, n_r = oh * ratio, ow * ratio, tr.shape[0]
    col = (lambda v: ctx.emit("unsqueeze", [v], axis=2))  # noqa: E731 - [R, n_y, 1]
    row = (lambda v: ctx.emit("unsqueeze", [v], axis=1))  # noqa: E731 - [R, 1, n_x]
    valid = ctx.emit("logical_and", [col(vy), row(vx)])
    if not ctx.type(batch).dtype.is_int:
        ctx.unsupported(f"RoiAlign batch_indices of {ctx.type(batch).dtype.name.lower()}")
    b64 = batch if ctx.type(batch).dtype == _I64 else ctx.emit("cast", [batch], dtype=_I64)
    img = ctx.emit("index_select", [x, b64], axis=0)
    img = ctx.emit("reshape", [img], shape=(n_r, c, hgt * wid))
    zero = np.array(0, dt)
    terms = []
    for ys, wy in ((ylo, wylo), (yhi, wyhi)):
        for xs, wx in ((xlo, wxlo), (xhi, wxhi)):
            w = ctx.emit("where", [valid, ctx.emit("mul", [col(wy), row(wx)]), zero])
            pos = ctx.emit("add", [ctx.emit("mul", [col(ys), np.array(wid, dt)]), row(xs)])
            pos = ctx.emit("cast", [ctx.emit("reshape", [pos], shape=(n_r, 1, n_y * n_x))],
                           dtype=_I64)
            pos = ctx.emit("expand", [pos], shape=(n_r, c, n_y * n_x))
            v = ctx.emit("gather", [img, pos], axis=2)
            terms.append(ctx.emit("mul", [v, ctx.emit("reshape", [w], shape=(n_r, 1, n_y * n_x))]))
    if mode == "avg":
        out = ctx.emit("add", [ctx.emit("add", [terms[0], terms[1]]),
                               ctx.emit("add", [terms[2], terms[3]])])
    else:
        out = ctx.emit("maximum", [ctx.emit("maximum", [terms[0], terms[1]]),
                                   ctx.emit("maximum", [terms[2], terms[3]])])
    out = ctx.emit("reshape", [out], shape=(n_r, c, oh, ratio, ow, ratio))
    if mode == "avg":
        return [ctx.emit("mean", [out], axis=(3, 5))]
    return [ctx.emit("amax", [out], axis=(3, 5))]


#: op name -> the ONNX op types its record also claims
RIDERS = {"gather": {"RoiAlign": import_roi_align}}
