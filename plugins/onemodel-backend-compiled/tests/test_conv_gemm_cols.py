"""The channels-first implicit GEMM (om_conv_gemm.h's conv_gemm_cols, CONV_GEMM layout 1):
out = W B with B's columns the output positions, packed a 16-column panel at a time by runs of
one output row. Against the float64 window formula and the numpy backend on every kernel
copy: the heuristics' own choice (DenseNet's 3x3 layers on 4x4, whole panels straight into
the output) and, forced, every tail: maps whose panels span rows and images (C through the
scratch), a last partial panel, output channels not multiples of 6, padding, dilation, a
non-square kernel, strides, the input prologue, each fused activation, batch 1 to 5."""
from __future__ import annotations

import attrs
import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel_backend_compiled import _native, heuristics

from conv_references import keep_channels_first, norm_relu_reference, windows_reference

RTOL, ATOL = 1e-4, 1e-4

ACTS = {None: (lambda y: y, lambda v: v),
        "relu": (om.ops.relu, lambda v: np.maximum(v, 0)),
        "tanh": (om.ops.tanh, np.tanh),
        "relu6": (lambda y: om.ops.clip(y, min=0.0, max=6.0), lambda v: np.clip(v, 0, 6)),
        "hardswish": (om.ops.hardswish, lambda v: v * np.clip(v + 3, 0, 6) / 6)}

CASES = [  # cin, cout, (kh, kw), stride, pad, dil, act, prologue, (h, w), batches, natural
    (128, 32, (3, 3), 1, 1, 1, "relu", False, (4, 4), (1, 2, 4), True),   # DenseNet's
    (64, 37, (3, 3), 1, 1, 1, None, True, (4, 8), (1, 3), True),          # prologue, 37 out
    (20, 13, (3, 3), 1, 1, 1, "tanh", False, (5, 5), (1, 2, 3, 5), False),  # runs span rows
    (7, 9, (3, 3), 1, 2, 2, "relu6", False, (6, 6), (1, 2), False),       # dilation 2
    (8, 17, (3, 1), 1, (1, 0), 1, "hardswish", True, (4, 6), (1, 4), False),  # 3x1
    (9, 33, (3, 3), 1, 0, 1, None, False, (6, 6), (1, 5), False),         # no padding
    (6, 16, (3, 3), 2, 1, 1, "relu", False, (15, 15), (1, 2), False),     # stride 2
    (10, 8, (5, 5), 3, 1, 1, None, True, (10, 9), (1, 3), False),         # 5x5 stride 3
    (16, 20, (3, 3), 1, 1, 1, "relu", False, (1, 1), (1, 5), False),      # 1x1 map
    (40, 24, (3, 3), 1, 1, 1, "relu", False, (9, 9), (1, 2), False),      # 81: 6 panels a b
]


def _always_channels_first(monkeypatch):
    src = heuristics.source(_native.isa())
    always = attrs.evolve(heuristics.MEASURED[src], conv=heuristics.ConvHeuristics(
        wx_1x1_columns=1, cols_width_multiple=1, cols_max_positions=10 ** 6, cols_min_k=0,
        cols_strided=True))
    monkeypatch.setitem(heuristics.MEASURED, src, always)


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_conv_gemm_channels_first_against_windows_and_numpy(case, isa, monkeypatch):
    cin, cout, (kh, kw), stride, pad, dil, act, pro, (h, w), batches, natural = case
    if not natural:
        _always_channels_first(monkeypatch)
    else:
        keep_channels_first(monkeypatch)
    pad2 = pad if isinstance(pad, tuple) else (pad, pad)
    rng = np.random.default_rng(cin * 7 + cout + h)
    W = (rng.standard_normal((cout, cin, kh, kw)) / np.sqrt(cin * kh * kw)).astype(np.float32)
    B = rng.standard_normal(cout).astype(np.float32)
    stats = [rng.standard_normal(cin), rng.uniform(0.5, 2.0, cin), rng.standard_normal(cin),
             rng.standard_normal(cin)]
    stats = [s.astype(np.float32) for s in stats]
    fn_act, formula = ACTS[act]

    def fn(x):
        if pro:
            x = om.ops.relu(om.ops.batch_norm(x, *(Tensor.from_numpy(s) for s in stats)))
        return fn_act(om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B),
                                    stride=stride, padding=pad, dilation=dil))

    x0 = rng.standard_normal((11, cin, h, w)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x0), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    numpy_session = om.Session(traced, backend="numpy")
    for batch in batches:
        x = rng.standard_normal((batch, cin, h, w)).astype(np.float32)
        feeds = {"input": x}
        src = session.plan_source(feeds)
        assert "conv2d_gemm" in src and "pointwise" not in src, src
        ins = [i for i in session._compiled.plan(session._check_feeds(feeds)[1]).segments[0]
               .instructions if i[0] == 20]
        assert len(ins) == 1 and ins[0][2 + 26] == 1, "not the channels-first layout"
        xf = norm_relu_reference(x, stats) if pro else x.astype(np.float64)
        want = formula(windows_reference(xf, W, B, (stride, stride), pad2, (dil, dil)))
        got = session.run(feeds)["output"].numpy()
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"b{batch}")
        np.testing.assert_allclose(got, numpy_session.run(feeds)["output"].numpy(),
                                   rtol=RTOL, atol=ATOL, err_msg=f"numpy b{batch}")


def test_channels_first_is_the_choice_on_whole_panels_only():
    conv = heuristics.ConvHeuristics()
    assert conv.gemm_columns_win(128, 3, 3, (1, 1), 1, 4, 4)
    assert conv.gemm_columns_win(128, 3, 3, (1, 1), 4, 4, 4)
    assert not conv.gemm_columns_win(128, 3, 3, (1, 1), 4, 2, 2)   # runs of 2
    assert not conv.gemm_columns_win(64, 3, 3, (1, 1), 16, 7, 7)   # runs of 7
    assert not conv.gemm_columns_win(128, 3, 3, (1, 1), 1, 8, 8)   # 8x8: the direct kernel
    assert not conv.gemm_columns_win(128, 3, 3, (2, 2), 1, 4, 4)
    assert not conv.gemm_columns_win(128, 1, 1, (1, 1), 1, 4, 4)   # 1x1: conv1x1_gemm's
