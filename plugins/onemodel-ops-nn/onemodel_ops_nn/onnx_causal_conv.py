"""ONNX's CausalConvWithState (opset 27) imported as ``concat`` + a depthwise ``conv1d``: the
input is prefixed with ``past_state`` (zeros when absent), convolved without padding (one group
per channel), optionally passed through SiLU (in float32, as onnx's reference computes it), and
``present_state`` is the last ``k - 1`` positions of the prefixed input. Claimed by conv1d's
record (plugin.py)."""
from __future__ import annotations

from onemodel.core import DType
from onemodel.core.symbolic import Dim


def import_causal_conv_with_state(ctx, node):
    x, w = node.inputs[:2]
    bias, past = node.input(2) or None, node.input(3) or None
    activation = node.attr("activation", "none")
    if activation not in ("none", "silu", "swish"):
        ctx.unsupported(f"activation {activation!r} (supported: 'none', 'silu', 'swish')")
    xt, wt = ctx.type(x), ctx.type(w)
    if not xt.dtype.is_float:
        ctx.unsupported(f"CausalConvWithState of {xt.dtype} input (float inputs are supported)")
    if len(xt.shape) != 3 or len(wt.shape) != 3:
        ctx.unsupported(f"input must be (batch, channels, length) and weight (channels, 1, k), "
                        f"got {xt} and {wt}")
    b, c, length = xt.shape
    if isinstance(c, Dim) or isinstance(wt.shape[2], Dim):
        ctx.unsupported(f"the channels ({c}) and kernel size ({wt.shape[2]}) must be fixed")
    c, k = int(c), int(wt.shape[2])
    if int(wt.shape[0]) != c or int(wt.shape[1]) != 1:
        ctx.unsupported(f"weight {wt} must be (channels={c}, 1, k) for a depthwise convolution")
    if past is None:
        past = ctx.emit("full", [], shape=(b, c, k - 1), value=0.0, dtype=xt.dtype)
    padded = ctx.emit("concat", [past, x], axis=2)
    y = ctx.emit("conv1d", [padded, w, bias], stride=1, padding=0, dilation=1, groups=c)
    if activation != "none":
        wide = ctx.emit("cast", [y], dtype=DType.F32) if xt.dtype != DType.F32 else y
        act = ctx.emit("mul", [wide, ctx.emit("sigmoid", [wide])])
        y = act if xt.dtype == DType.F32 else ctx.emit("cast", [act], dtype=xt.dtype)
    state = ctx.emit("narrow", [padded], axis=2, start=length, length=k - 1)
    return [y, state]


IMPORTS = {"CausalConvWithState": import_causal_conv_with_state}
