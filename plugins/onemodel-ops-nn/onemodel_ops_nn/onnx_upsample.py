"""ONNX's deprecated Upsample (opsets 7-10) imported as ``resize``: it is Resize-10, scales
only, with the asymmetric transform (and floor for nearest). Scales come from the attribute
(opsets 7-8) or the second input (9 and later; fed at run time, the output sizes are data
sizes). Claimed by the record of ``resize`` (plugin.py)."""
from __future__ import annotations

import numpy as np

from onemodel.formats.onnx_api import Const

from .onnx_resize import _dims, _nonempty, _params


def import_upsample(ctx, node):
    if ctx.opset < 7:
        ctx.unsupported(f"Upsample-{ctx.opset} (height_scale / width_scale; opsets 7 and "
                        f"later are imported)")
    mode = node.attr("mode", "nearest")
    if mode not in ("nearest", "linear"):
        ctx.unsupported(f"Upsample mode={mode!r} (nearest or linear)")
    x = node.inputs[0]
    shape = tuple(ctx.type(x).shape)
    if ctx.opset < 9:
        scales = [float(s) for s in node.attr("scales", [])]
        scales_in = Const(np.array(scales, np.float32))
    else:
        scales_in = node.input(1)
        if not scales_in:
            ctx.unsupported("Upsample without its scales input")
        scales = _nonempty(ctx, scales_in)
    if scales is not None and len(scales) != len(shape):
        ctx.unsupported(f"Upsample with {len(scales)} scales for a rank-{len(shape)} input")
    p = _params(ctx, node, len(shape))
    p.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    dims = _dims(ctx, shape, scales, [], (), "stretch")
    return [ctx.emit("resize", [x, None, scales_in, None], dims=(dims,), **p)]


IMPORTS = {"Upsample": import_upsample}
