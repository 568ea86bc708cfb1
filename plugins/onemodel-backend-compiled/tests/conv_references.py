"""The sliding-window formula of a convolution, in float64, shared by the plugin's tests of the
convolution paths (test_conv_gemm.py, test_conv_compact.py), and the heuristics those of the
channels-first paths run under."""
from __future__ import annotations

import numpy as np


def windows_reference(x, w, b, stride, pad, dil):
    """Every output's window as a strided view of the padded input, summed in float64."""
    (sh, sw), (ph, pw), (dh, dw) = stride, pad, dil
    kh, kw = w.shape[2:]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    win = np.lib.stride_tricks.sliding_window_view(
        xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
    y = np.einsum("nchwuv,ocuv->nohw", win, w.astype(np.float64))
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def norm_relu_reference(x, stats, eps=1e-5):
    """relu(batch_norm(x)) in float64: the convolutions' input prologue; ``stats`` are the
    mean, variance, weight and bias."""
    m, v, g, b = (np.asarray(s, np.float64).reshape(1, -1, 1, 1) for s in stats)
    return np.maximum((np.asarray(x, np.float64) - m) / np.sqrt(v + eps) * g + b, 0)


def pool_reference(y):
    """A 2x2 stride-2 max pool (an odd last row or column dropped)."""
    n, c, h, w = y.shape
    y = y[:, :, :h // 2 * 2, :w // 2 * 2]
    return y.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def keep_channels_first(monkeypatch):
    """The heuristics of the copy in use with avx2's convolution choices, which take the
    channels-first forms wherever these tests expect them (heuristics.py narrows them for
    avx512): the tests of those kernels run them on every copy."""
    import attrs
    from onemodel_backend_compiled import _native, heuristics

    src = heuristics.source(_native.isa())
    rec = heuristics.MEASURED[src]
    if rec.conv != heuristics.ConvHeuristics():
        monkeypatch.setitem(heuristics.MEASURED, src,
                            attrs.evolve(rec, conv=heuristics.ConvHeuristics()))


def keep_direct(monkeypatch):
    """Every copy's heuristics without the channels-in-lanes kernel (om_conv_lanes.h), so
    that the tests of the positions-in-lanes direct kernel run it wherever it applies
    (test_conv_lanes.py tests the other)."""
    import attrs
    from onemodel_backend_compiled import heuristics

    for name, rec in list(heuristics.MEASURED.items()):
        if rec.conv.lanes_min_cout:
            monkeypatch.setitem(heuristics.MEASURED, name, attrs.evolve(
                rec, conv=attrs.evolve(rec.conv, lanes_min_cout=0)))
