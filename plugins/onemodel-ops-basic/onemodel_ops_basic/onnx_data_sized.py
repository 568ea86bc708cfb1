"""ONNX mapping of ``sized_from_data`` (data_sized.py): Tile with repeats, OneHot with a depth
(any axis, any on / off values), CenterCropPad with a target shape, the Hann / Hamming /
Blackman windows with a size, NonMaxSuppression, AffineGrid and Col2Im. Each output size the
import can compute (a constant or a size of an input axis) is kept; every other is a data size
(``ctx.data_dim()``) bound when the node runs. A Tile whose repeats are known is left to
``tile`` (`ctx.decline`), the fast path."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.registry import OnnxSpec

from .data_sized import WINDOWS


def _known(ctx, name: str):
    """The values of a 1-D or scalar size-like input when the import knows them (constants or
    sizes of input axes), else None."""
    s = ctx.symbolic(name)
    if s is None:
        return None
    return [v if not isinstance(v, (int, np.integer)) else int(v)
            for v in np.asarray(s, dtype=object).reshape(-1)]


def _length(ctx, name: str, what: str) -> int:
    shape = ctx.type(name).shape
    if len(shape) > 1 or (shape and not isinstance(shape[0], int)):
        ctx.unsupported(f"{what} must be a scalar or a 1-D tensor of fixed length, got shape "
                        f"{[str(d) for d in shape]}")
    return shape[0] if shape else 1


def _import_tile(ctx, node):
    x, reps = node.inputs[0], node.inputs[1]
    if ctx.symbolic(reps) is not None:
        ctx.decline("Tile's repeats are static or sizes of input axes")
    shape = ctx.type(x).shape
    if _length(ctx, reps, "the Tile repeats") != len(shape):
        ctx.unsupported(f"Tile repeats of length {_length(ctx, reps, 'the Tile repeats')} for a "
                        f"rank-{len(shape)} input")
    dims = tuple(ctx.data_dim() for _ in shape)
    return [ctx.emit("sized_from_data", [x, reps], kind="Tile", dims=(dims,))]


def _import_one_hot(ctx, node):
    x, depth, values = node.inputs[0], node.inputs[1], node.inputs[2]
    rank = ctx.rank(x)
    axis = int(node.attr("axis", -1))
    if not -rank - 1 <= axis <= rank:
        ctx.unsupported(f"OneHot axis {axis} for a rank-{rank} input")
    axis %= rank + 1
    if not (ctx.type(depth).dtype.is_int or ctx.type(depth).dtype.is_float):
        ctx.unsupported(f"OneHot depth of dtype {ctx.type(depth).dtype.name.lower()}")
    known = _known(ctx, depth) if ctx.type(depth).dtype.is_int else None
    n = known[0] if known and len(known) == 1 else ctx.data_dim()
    dims = list(ctx.type(x).shape)
    dims.insert(axis, n)
    return [ctx.emit("sized_from_data", [x, depth, values], kind="OneHot", dims=(tuple(dims),),
                     axis=axis)]


def _import_center_crop_pad(ctx, node):
    x, target = node.inputs[0], node.inputs[1]
    shape = list(ctx.type(x).shape)
    n = len(shape)
    axes = node.attr("axes")
    axes = list(range(n)) if axes is None else [int(a) for a in axes]
    if any(not -n <= a < n for a in axes) or len({a % n for a in axes}) != len(axes):
        ctx.unsupported(f"CenterCropPad axes {axes} for a rank-{n} input")
    axes = [a % n for a in axes]
    if _length(ctx, target, "the CenterCropPad shape") != len(axes):
        ctx.unsupported(f"CenterCropPad shape of length {_length(ctx, target, '')} for "
                        f"{len(axes)} axes")
    known = _known(ctx, target)
    for k, a in enumerate(axes):
        shape[a] = known[k] if known is not None else ctx.data_dim()
    return [ctx.emit("sized_from_data", [x, target], kind="CenterCropPad",
                     dims=(tuple(shape),), axes=tuple(axes))]


def _import_window(kind: str):
    def rule(ctx, node):
        from onemodel.formats.onnx_api import ONNX_TO_DTYPE

        size = node.inputs[0]
        if not ctx.type(size).dtype.is_int:
            ctx.unsupported(f"{kind} size of dtype {ctx.type(size).dtype.name.lower()}")
        code = int(node.attr("output_datatype", 1))
        dtype = ONNX_TO_DTYPE.get(code)
        if dtype is None or not dtype.is_float:
            ctx.unsupported(f"{kind} output_datatype {code} (a float dtype OneModel has)")
        known = _known(ctx, size)
        n = known[0] if known is not None and len(known) == 1 else ctx.data_dim()
        return [ctx.emit("sized_from_data", [size], kind=kind, dims=((n,),),
                         periodic=bool(node.attr("periodic", 1)), dtype=dtype)]
    return rule


def _import_nms(ctx, node):
    """NonMaxSuppression: [B, N, 4] boxes, [B, C, N] scores and the optional limit and
    thresholds, as many (batch, class, box) triples as survive: a data size."""
    ins = list(node.inputs[:5]) + [""] * (5 - len(node.inputs[:5]))
    boxes, scores = ctx.type(ins[0]), ctx.type(ins[1])
    if len(boxes.shape) != 3 or len(scores.shape) != 3:
        ctx.unsupported(f"NonMaxSuppression of boxes {[str(d) for d in boxes.shape]} and scores "
                        f"{[str(d) for d in scores.shape]} ([B, N, 4] and [B, C, N])")
    if not (boxes.dtype.is_float and scores.dtype.is_float):
        ctx.unsupported("NonMaxSuppression of non-float boxes or scores")
    center = int(node.attr("center_point_box", 0))
    if center not in (0, 1):
        ctx.unsupported(f"NonMaxSuppression center_point_box {center} (0 or 1)")
    return [ctx.emit("sized_from_data", [i or None for i in ins], kind="NonMaxSuppression",
                     dims=((ctx.data_dim(), 3),), axis=center)]


def _import_affine_grid(ctx, node):
    theta, size = node.inputs[0], node.inputs[1]
    t = ctx.type(theta)
    if len(t.shape) != 3 or t.shape[1:] not in ((2, 3), (3, 4)) or not t.dtype.is_float:
        ctx.unsupported(f"AffineGrid of theta {[str(d) for d in t.shape]} ({t.dtype.name.lower()}"
                        f"; a float [N, 2, 3] or [N, 3, 4])")
    k = t.shape[1]
    if _length(ctx, size, "the AffineGrid size") != k + 2:
        ctx.unsupported(f"AffineGrid size of length {_length(ctx, size, '')} for theta "
                        f"{[str(d) for d in t.shape]}")
    known = _known(ctx, size)
    spatial = tuple(known[2:]) if known is not None else tuple(ctx.data_dim() for _ in range(k))
    return [ctx.emit("sized_from_data", [theta, size], kind="AffineGrid",
                     dims=((t.shape[0], *spatial, k),),
                     periodic=bool(node.attr("align_corners", 0)))]


def _import_col2im(ctx, node):
    x, image, block = node.inputs[0], node.inputs[1], node.inputs[2]
    shape = ctx.type(x).shape
    k = _length(ctx, image, "the Col2Im image_shape")
    if len(shape) != 3 or _length(ctx, block, "the Col2Im block_shape") != k:
        ctx.unsupported(f"Col2Im of an input {[str(d) for d in shape]} ([N, C * prod(block), L]) "
                        f"with image_shape and block_shape of one length")
    window = tuple(None if node.attr(a) is None else tuple(int(v) for v in node.attr(a))
                   for a in ("dilations", "pads", "strides"))
    known, blocks = _known(ctx, image), _known(ctx, block)
    spatial = tuple(known) if known is not None else tuple(ctx.data_dim() for _ in range(k))
    c = ctx.data_dim()
    if blocks is not None and all(isinstance(v, int) for v in blocks) and \
            isinstance(shape[1], int):
        c = shape[1] // int(np.prod(blocks))
    return [ctx.emit("sized_from_data", [x, image, block], kind="Col2Im",
                     dims=((shape[0], c, *spatial),), axes=window)]


#: the opset each export kind needs, and what the refusal below it calls the kind
_MIN_OPSET = {"AffineGrid": (20, "AffineGrid"), "Col2Im": (18, "Col2Im"),
              "CenterCropPad": (18, "CenterCropPad"), "DFT": (20, "DFT with its axis as an input"),
              "STFT": (17, "STFT"), "MelWeightMatrix": (17, "MelWeightMatrix"),
              **{w: (17, w) for w in WINDOWS}}


def _export(ctx, node):
    p = node.params
    kind = p["kind"]
    if kind in _MIN_OPSET and ctx.opset < _MIN_OPSET[kind][0]:
        opset, what = _MIN_OPSET[kind]
        ctx.unsupported(node, f"{what} needs opset {opset} (exporting at {ctx.opset})")
    ins = [ctx.name_of(i) if i is not None else "" for i in node.inputs]
    attrs = {}
    while ins and not ins[-1]:
        ins.pop()
    if kind == "OneHot":
        attrs["axis"] = int(p["axis"])
    elif kind == "NonMaxSuppression":
        attrs["center_point_box"] = int(p["axis"] == 1)
    elif kind == "AffineGrid":
        attrs["align_corners"] = int(bool(p["periodic"]))
    elif kind == "Col2Im":
        for name, v in zip(("dilations", "pads", "strides"), p["axes"] or (None,) * 3):
            if v is not None:
                attrs[name] = [int(e) for e in v]
    elif kind == "CenterCropPad":
        attrs["axes"] = [int(a) for a in p["axes"]] if p["axes"] is not None else None
    elif kind == "DFT":
        attrs["inverse"], attrs["onesided"] = (int(bool(f)) for f in p["axes"])
        if attrs["onesided"] and not attrs["inverse"] and \
                ctx.input_types(node)[0].shape[-1] != 1:
            ctx.unsupported(node, "a one-sided forward DFT of a complex input has no ONNX form "
                                  "(ONNX's DFT takes a real input there)")
        ins = [ins[0], ins[2] if len(ins) > 2 else "", ins[1]]
    elif kind == "STFT":
        attrs["onesided"] = int(bool(p["periodic"]))
    elif kind == "MelWeightMatrix":
        attrs["output_datatype"] = ctx.onnx_dtype(p["dtype"] or DType.F32)
    elif kind in WINDOWS:
        attrs["periodic"] = int(bool(p["periodic"]))
        attrs["output_datatype"] = ctx.onnx_dtype(p["dtype"] or DType.F32)
    ctx.make_node(kind, ins, ctx.outputs(node), **attrs)


SPEC = OnnxSpec(export=_export, imports={
    "Tile": _import_tile, "OneHot": _import_one_hot, "CenterCropPad": _import_center_crop_pad,
    "NonMaxSuppression": _import_nms, "AffineGrid": _import_affine_grid,
    "Col2Im": _import_col2im,
    **{kind: _import_window(kind) for kind in WINDOWS}})
