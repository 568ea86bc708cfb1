"""ONNX ``auto_pad=SAME_UPPER``/``SAME_LOWER`` with a stride on a symbolic size (what tf2onnx
writes for a stride-2 ``padding="same"`` convolution on a dynamic image). The pads depend on
the size modulo the stride, so no fixed pad gives them: the input is padded by the most any
size needs, then cut at run time to the window that size's own pads give."""
from __future__ import annotations

from onemodel.core import Dim


def same_pads(mode: str, size, stride: int, reach: int):
    """(begin, total) padding of ONNX's SAME rule, total = (ceil(size/stride) - 1) * stride +
    reach - size, for an int or a symbolic size; None where the total could fall below zero
    (reach < stride on a symbolic size: ONNX then clamps it to 0)."""
    if isinstance(size, Dim) and reach < stride:
        return None
    rest = (stride - size % stride) % stride  # ceil(size / stride) * stride - size
    total = rest + reach - stride
    if not isinstance(total, Dim):
        total = max(0, total)
    return (total // 2 if mode == "SAME_UPPER" else (total + 1) // 2), total


def most(mode: str, stride: int, reach: int) -> tuple[int, int]:
    """The largest begin and end pads over every residue of a size modulo the stride."""
    pads = [same_pads(mode, stride + r, stride, reach) for r in range(stride)]
    return max(lo for lo, _ in pads), max(t - lo for lo, t in pads)


def cut_to_same(ctx, x, axes: list[int], mode: str, strides, reaches, value: float = 0.0):
    """``x`` padded on each spatial axis in ``axes`` by the most its SAME pads can be, then
    sliced to ``begin + size + end`` from ``most - begin``: a conv or pool without padding on
    that axis then reads what ONNX's SAME padding gives (``value``: the fill, -inf before a
    max pool)."""
    xt = ctx.type(x)
    rank = len(xt.shape)
    pad = [0] * (2 * rank)  # torch's order: last axis first
    index = [("slice", None, None, None)] * rank
    for a in axes:
        size, stride, reach = xt.shape[2 + a], strides[a], reaches[a]
        lo, total = same_pads(mode, size, stride, reach)
        lo_max, hi_max = most(mode, stride, reach)
        k = rank - 1 - (2 + a)
        pad[2 * k], pad[2 * k + 1] = lo_max, hi_max
        start = lo_max - lo
        index[2 + a] = ("slice", start, start + size + total, 1)
    while len(pad) > 2 and pad[-2:] == [0, 0]:
        pad = pad[:-2]
    x = ctx.emit("pad", [x], pad=tuple(pad), value=value)
    return ctx.emit("index", [x], index=tuple(index))
