"""ONNX's spectral ops. DFT is imported as one ``einsum`` with a constant transform tensor, so
every backend runs it. The input's last axis holds the real part (size 1) or the real and
imaginary parts (size 2); ``W[n, k, c, j]`` maps input sample ``n`` part ``c`` to output bin
``k`` part ``j``, with the transform length (``dft_length``, else the axis size) fixed at import.
``onesided`` keeps the first ``L // 2 + 1`` bins; ``inverse`` with ``onesided`` is the inverse
real transform (a real output of length ``L``, ``2 * (n - 1)`` by default). An axis fed at run
time (opset 20) picks, with ``where``, among the transforms over every axis when they give one
output shape (an axis out of range gives NaN); otherwise (one-sided, a ``dft_length``) it is the
``DFT`` kind of ``sized_from_data``, whose output sizes are read at run time. STFT and
MelWeightMatrix, whose sizes the node tests feed at run time, are kinds of ``sized_from_data``
too. plugin.py attaches the rules to the records of ``einsum`` and ``sized_from_data``."""
from __future__ import annotations

import numpy as np

from onemodel.formats.onnx_api import ONNX_TO_DTYPE

from .onnx_data_sized import _known

_LETTERS = "abcdefghijklmnopqrstuvw"


def _transform(n_used: int, length: int, channels: int, inverse: bool, onesided: bool,
               dtype) -> np.ndarray:
    """``W[n, k, c, j]`` of one DFT (see the module docstring), computed in float64."""
    if inverse and onesided:
        k = np.arange(length)
        n = np.arange(n_used)[:, None]
        theta = 2 * np.pi * ((n * k) % length) / length
        weight = np.where((n == 0) | ((length % 2 == 0) & (n == length // 2)), 1.0, 2.0)
        w = np.zeros((n_used, length, channels, 1))
        w[:, :, 0, 0] = weight * np.cos(theta) / length
        if channels == 2:
            w[:, :, 1, 0] = -weight * np.sin(theta) / length
        return w.astype(dtype)
    bins = length // 2 + 1 if onesided and not inverse else length
    n = np.arange(n_used)[:, None]
    k = np.arange(bins)
    theta = 2 * np.pi * ((n * k) % length) / length
    cos, sin = np.cos(theta), np.sin(theta)
    sign, scale = (1.0, 1.0 / length) if inverse else (-1.0, 1.0)
    w = np.zeros((n_used, bins, channels, 2))
    w[:, :, 0, 0], w[:, :, 0, 1] = cos * scale, sign * sin * scale
    if channels == 2:
        w[:, :, 1, 0], w[:, :, 1, 1] = -sign * sin * scale, cos * scale
    return w.astype(dtype)


def _dft_over(ctx, x, shape, axis: int, length, inverse: bool, onesided: bool):
    """The DFT of ``x`` (shape ``shape``) over ``axis``: (output value, output shape)."""
    size = shape[axis]
    if not isinstance(size, int):
        ctx.unsupported(f"DFT over the symbolic axis {axis} (size {size}); the transform "
                        f"length must be fixed at import")
    if length is None:
        length = 2 * (size - 1) if inverse and onesided else size
    if length < 1:
        ctx.unsupported(f"DFT dft_length {length} (must be >= 1)")
    keep = min(size, length // 2 + 1) if inverse and onesided else min(size, length)
    if keep < size:
        x = ctx.emit("narrow", [x], axis=axis, start=0, length=keep)
    w = _transform(keep, length, shape[-1], inverse, onesided, ctx.type(x).dtype.numpy)
    rank = len(shape)
    letters = list(_LETTERS[:rank - 1])
    src = letters.copy()
    src[axis] = "z"
    dst = letters.copy()
    dst[axis] = "y"
    eq = f"{''.join(src)}x,zyxj->{''.join(dst)}j"
    out = ctx.emit("einsum", [x, w], equation=eq)
    out_shape = list(shape)
    out_shape[axis], out_shape[-1] = w.shape[1], w.shape[3]
    return out, tuple(out_shape)


def _scalar_input(ctx, name: str, what: str):
    """The value of a scalar (or one-element) integer input known at import, None when absent,
    the string "data" when it is fed at run time."""
    if not name:
        return None
    t = ctx.type(name)
    if not t.dtype.is_int:
        ctx.unsupported(f"DFT {what} of dtype {t.dtype.name.lower()} (an integer)")
    arr = ctx.const(name)
    if arr is None:
        return "data"
    arr = np.asarray(arr).reshape(-1)
    if arr.size != 1:
        ctx.unsupported(f"DFT {what} must hold one value, got {arr.size}")
    return int(arr[0])


def import_dft(ctx, node):
    x = node.inputs[0]
    t = ctx.type(x)
    shape = tuple(t.shape)
    rank = len(shape)
    if not t.dtype.is_float:
        ctx.unsupported(f"DFT of dtype {t.dtype.name.lower()} (a float input)")
    if rank < 2 or shape[-1] not in (1, 2):
        ctx.unsupported(f"DFT input of shape {[str(d) for d in shape]}: the last axis must be "
                        f"1 (real) or 2 (real, imaginary)")
    inverse, onesided = bool(node.attr("inverse", 0)), bool(node.attr("onesided", 0))
    length = _scalar_input(ctx, node.input(1), "dft_length")
    if length == "data":
        ctx.unsupported("DFT dft_length fed at run time; the transform length must be fixed "
                        "at import")
    if ctx.opset >= 20:
        axis = _scalar_input(ctx, node.input(2), "axis")
        axis = -2 if axis is None else axis
    else:
        axis = int(node.attr("axis", 1))
    if axis != "data":
        if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
            ctx.unsupported(f"DFT axis {axis} for a rank-{rank} input (in [-{rank}, -2] or "
                            f"[0, {rank - 2}])")
        return [_dft_over(ctx, x, shape, axis % rank, length, inverse, onesided)[0]]
    if not all(isinstance(d, int) for d in shape):
        ctx.unsupported(f"DFT axis fed at run time on the input {[str(d) for d in shape]} with "
                        f"symbolic sizes; the transform length must be fixed at import")
    # an axis too short for the default inverse one-sided length (2 * (n - 1)) cannot be it
    axes = [a for a in range(rank - 1)
            if length is not None or shape[a] > (1 if inverse and onesided else 0)]
    results = [(a, *_dft_over(ctx, x, shape, a, length, inverse, onesided)) for a in axes]
    shapes = {s for _, _, s in results}
    if len(shapes) != 1:  # the output shape depends on the axis value: sizes read at run time
        dims = tuple(d if all(s[k] == d for s in shapes) else ctx.data_dim()
                     for k, d in enumerate(shapes.pop()))
        return [ctx.emit("sized_from_data", [x, node.input(2), node.input(1) or None],
                         kind="DFT", dims=(dims,), axes=(int(inverse), int(onesided)))]
    a_in = node.input(2)
    i64 = ONNX_TO_DTYPE[7]  # INT64
    a64 = a_in if ctx.type(a_in).dtype == i64 else ctx.cast(a_in, i64)
    a64 = ctx.emit("reshape", [a64], shape=())
    zero = np.array(0, np.int64)
    a64 = ctx.emit("where", [ctx.emit("less", [a64, zero]),
                             ctx.emit("add", [a64, np.array(rank, np.int64)]), a64])
    out = np.full(shapes.pop(), np.nan, t.dtype.numpy)
    for a, value, _ in reversed(results):
        out = ctx.emit("where", [ctx.emit("equal", [a64, np.array(a, np.int64)]), value, out])
    return [out]


def _known_int(ctx, name: str):
    """A scalar integer input's value when the import knows it, else a new data size."""
    known = _known(ctx, name)
    return known[0] if known is not None and len(known) == 1 else ctx.data_dim()


def import_stft(ctx, node):
    """STFT with its frame step (and length) fed at run time: ``sized_from_data``."""
    signal = node.inputs[0]
    step, window, length = node.input(1), node.input(2), node.input(3)
    t = ctx.type(signal)
    if len(t.shape) != 3 or t.shape[-1] not in (1, 2) or not t.dtype.is_float:
        ctx.unsupported(f"STFT of a signal {[str(d) for d in t.shape]} "
                        f"({t.dtype.name.lower()}; a float [batch, samples, 1 or 2])")
    for name, what in ((step, "frame_step"), (length, "frame_length")):
        if name and not ctx.type(name).dtype.is_int:
            ctx.unsupported(f"STFT {what} of dtype {ctx.type(name).dtype.name.lower()}")
    onesided = bool(node.attr("onesided", 1))
    if length:
        n = _known_int(ctx, length)
    elif window:
        n = ctx.type(window).shape[0]
    else:
        n = t.shape[1]
    bins = (n // 2 + 1 if onesided else n) if isinstance(n, int) else ctx.data_dim()
    dims = (t.shape[0], ctx.data_dim(), bins, 2)
    return [ctx.emit("sized_from_data", [signal, step, window or None, length or None],
                     kind="STFT", dims=(dims,), periodic=onesided)]


def import_mel_weight_matrix(ctx, node):
    """MelWeightMatrix, every input fed at run time: ``sized_from_data``."""
    ins = list(node.inputs[:5])
    if len(ins) != 5 or not all(ins):
        ctx.unsupported("MelWeightMatrix needs its five inputs")
    for name, what in zip(ins[:3], ("num_mel_bins", "dft_length", "sample_rate")):
        if not ctx.type(name).dtype.is_int:
            ctx.unsupported(f"MelWeightMatrix {what} of dtype "
                            f"{ctx.type(name).dtype.name.lower()}")
    dtype = ctx.dtype(int(node.attr("output_datatype", 1)), "MelWeightMatrix output_datatype")
    if not dtype.is_float:
        ctx.unsupported(f"MelWeightMatrix output_datatype {dtype.name.lower()} (a float)")
    mels, length = _known_int(ctx, ins[0]), _known_int(ctx, ins[1])
    bins = length // 2 + 1 if isinstance(length, int) else ctx.data_dim()
    return [ctx.emit("sized_from_data", ins, kind="MelWeightMatrix", dims=((bins, mels),),
                     dtype=dtype)]


#: op name -> the ONNX op types its record also claims
RIDERS = {
    "einsum": {"DFT": import_dft},
    "sized_from_data": {"STFT": import_stft, "MelWeightMatrix": import_mel_weight_matrix},
}
