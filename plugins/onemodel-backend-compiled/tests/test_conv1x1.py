"""1x1 stride-1 convolutions as one GEMM (om_conv1x1.h). Channels first, out = W x (layout 1:
x packed into 16-column panels, the prologue's batch norm and ReLU applied as it is packed,
bias per row and ReLU in the registers, straight into the output when the map is a multiple of
16 positions, through the scratch when a panel holds the end of one image and the start of the
next); positions first (layout 0) on maps of a few positions. Against the float64 window
formula and the numpy backend on every kernel copy: channels not multiples of 6 or 16, maps
1x1 to 16x16, batch 1 to 5, every fused activation, NaN and inf, and a threaded split that
gives the same bits."""
from __future__ import annotations

import attrs
import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.core import adaptive
from onemodel.testing.numerics import assert_specials_then_close
from onemodel_backend_compiled import _native, heuristics

from conv_references import keep_channels_first, windows_reference

RTOL, ATOL = 1e-4, 1e-4

ACTS = {None: (lambda y: y, lambda v: v),
        "relu": (om.ops.relu, lambda v: np.maximum(v, 0)),
        "sigmoid": (om.ops.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
        "relu6": (lambda y: om.ops.clip(y, min=0.0, max=6.0), lambda v: np.clip(v, 0, 6)),
        "hardswish": (om.ops.hardswish, lambda v: v * np.clip(v + 3, 0, 6) / 6),
        "swish": (om.ops.silu, lambda v: v / (1 + np.exp(-v)))}


def _stats(rng, c):
    return [rng.standard_normal(c), rng.uniform(0.5, 2.0, c), rng.standard_normal(c),
            rng.standard_normal(c)]


def _model(cin, cout, act, bias, pro, seed):
    rng = np.random.default_rng(seed)
    W = (rng.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32)
    B = rng.standard_normal(cout).astype(np.float32) if bias else None
    stats = [a.astype(np.float32) for a in _stats(rng, cin)]
    fn_act = ACTS[act][0]

    def fn(x):
        if pro:
            x = om.ops.relu(om.ops.batch_norm(x, *(Tensor.from_numpy(s) for s in stats),
                                              eps=1e-3))
        return fn_act(om.ops.conv2d(x, Tensor.from_numpy(W),
                                    None if B is None else Tensor.from_numpy(B)))

    def formula(x):
        if pro:
            m, v, g, b = (s.astype(np.float64).reshape(1, cin, 1, 1) for s in stats)
            x = np.maximum((x - m) / np.sqrt(v + 1e-3) * g + b, 0)
        return ACTS[act][1](windows_reference(x, W, B, (1, 1), (0, 0), (1, 1)))

    return fn, formula


def _session(fn, cin, h, w):
    x = np.zeros((11, cin, h, w), np.float32)  # 11: differs from every fixed axis here
    traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
    return om.Session(traced, backend="compiled"), om.Session(traced, backend="numpy")


def _every_1x1_channels_first(monkeypatch):
    """The heuristics of the copy in use, with every 1x1 convolution on the W x path."""
    src = heuristics.source(_native.isa())
    always = attrs.evolve(heuristics.MEASURED[src], conv=heuristics.ConvHeuristics(
        wx_1x1_min_cin=0, wx_1x1_min_cin_prologue=0, wx_1x1_columns=1))
    monkeypatch.setitem(heuristics.MEASURED, src, always)


CASES = [  # cin, cout, (h, w), batches, act, bias, prologue, the heuristics' own path
    (128, 40, (4, 4), (1, 2, 3, 5), "relu", True, False, True),   # 16 positions: into out
    (130, 13, (8, 8), (1, 4), None, True, False, True),          # 13 outputs: a 1-row tile
    (64, 37, (4, 4), (1, 2, 5), "relu", True, True, True),       # DenseNet's prologue
    (200, 32, (2, 2), (4,), "relu", True, True, True),           # 2x2 b4: one shared panel
    (96, 20, (16, 16), (1, 2), "relu6", False, True, True),      # many panels, clip after
    (67, 22, (3, 3), (1, 2, 3, 4, 5), "hardswish", True, False, False),  # forced: panel tails
    (19, 9, (1, 1), (1, 3, 5), "sigmoid", True, True, False),    # 1x1 map, forced
    (33, 17, (5, 7), (1, 2), "swish", True, False, False),       # 35 positions, forced
    (150, 30, (9, 9), (1, 2, 3), "relu", False, True, False),    # 81: C through the scratch
    (300, 70, (4, 4), (3,), None, True, True, True),             # several blocks of panels
]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_conv1x1_channels_first_against_windows_and_numpy(case, isa, monkeypatch):
    cin, cout, (h, w), batches, act, bias, pro, natural = case
    if not natural:
        _every_1x1_channels_first(monkeypatch)
    else:
        keep_channels_first(monkeypatch)
    fn, formula = _model(cin, cout, act, bias, pro, cin + cout + h)
    session, numpy_session = _session(fn, cin, h, w)
    rng = np.random.default_rng(cout)
    for batch in batches:
        x = rng.standard_normal((batch, cin, h, w)).astype(np.float32)
        feeds = {"input": x}
        src = session.plan_source(feeds)
        assert "conv2d_1x1_gemm" in src and "pointwise" not in src, src
        got = session.run(feeds)["output"].numpy()
        np.testing.assert_allclose(got, formula(x.astype(np.float64)), rtol=RTOL, atol=ATOL,
                                   err_msg=f"b{batch}")
        np.testing.assert_allclose(got, numpy_session.run(feeds)["output"].numpy(),
                                   rtol=RTOL, atol=ATOL, err_msg=f"numpy b{batch}")


def test_conv1x1_channels_first_is_the_plan_for_densenet_shapes(monkeypatch):
    """Which path, where the copy's heuristics take the channels-first forms at all (avx2;
    test_heuristics.py has avx512's): W x where the columns fill panels and the input channels
    pay for packing; a 2x2 map at batch 1 (4 columns) keeps the implicit GEMM, few input
    channels on a large map the direct kernel."""
    keep_channels_first(monkeypatch)
    conv = heuristics.ConvHeuristics()
    assert conv.one_gemm_1x1_wins(1024, 16, 1, True, 128) and conv.one_gemm_1x1_wins(128, 256, 4, False, 32)
    assert conv.one_gemm_1x1_wins(768, 4, 4, True, 128) and not conv.one_gemm_1x1_wins(768, 4, 1, True, 128)
    assert not conv.one_gemm_1x1_wins(96, 256, 1, False, 32) and conv.one_gemm_1x1_wins(96, 64, 1, True, 32)
    assert not conv.one_gemm_1x1_wins(512, 9, 1, False, 128)  # 9 columns: a partial panel
    fn, _ = _model(1024, 128, "relu", True, True, 1)
    session, _ = _session(fn, 1024, 4, 4)
    x = np.ones((1, 1024, 4, 4), np.float32)
    assert "conv2d_1x1_gemm" in session.plan_source({"input": x})
    fn, _ = _model(512, 128, "relu", True, True, 2)
    session, _ = _session(fn, 512, 2, 2)
    assert "conv2d_gemm" in session.plan_source({"input": np.ones((1, 512, 2, 2), np.float32)})


@pytest.mark.parametrize("pro", [False, True])
def test_conv1x1_channels_first_nan_and_inf_as_numpy(pro, isa, monkeypatch):
    keep_channels_first(monkeypatch)
    fn, formula = _model(128, 24, "relu", True, pro, 5)
    session, numpy_session = _session(fn, 128, 4, 4)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 128, 4, 4)).astype(np.float32)
    x[0, 3, 1, 2], x[1, 100, 0, 0], x[1, 7, 3, 3] = np.nan, np.inf, -np.inf
    feeds = {"input": x}
    assert "conv2d_1x1_gemm" in session.plan_source(feeds)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = numpy_session.run(feeds)["output"].numpy()
    assert_specials_then_close(session.run(feeds)["output"].numpy(), ref, rtol=RTOL, atol=ATOL)


def test_conv1x1_channels_first_split_over_threads_is_exact(monkeypatch):
    """Images split over threads compute the same bits as one thread (each image's columns
    have their own place in the scratch, and a panel's sums do not depend on its neighbours),
    also where one panel holds two images' columns."""
    _every_1x1_channels_first(monkeypatch)
    monkeypatch.setattr(adaptive, "MARGIN", float("inf"))  # the pool whatever timings say
    before = _native.split_min_work()
    _native.split_min_work(0)  # every image its own part
    try:
        _split_runs()
    finally:
        _native.split_min_work(before)


def _split_runs():
    for h, w in ((4, 4), (3, 3)):
        fn, _ = _model(160, 48, "relu", True, True, h)
        traced = om.trace(fn, Tensor.from_numpy(np.zeros((11, 160, h, w), np.float32)),
                          "batch", None, None, None)
        x = np.random.default_rng(h).standard_normal((5, 160, h, w)).astype(np.float32)
        one = om.Session(traced, backend="compiled").run({"input": x})["output"].numpy()
        many = om.Session(traced, backend="compiled", threads=2)
        assert "conv2d_1x1_gemm" in many.plan_source({"input": x})
        np.testing.assert_array_equal(many.run({"input": x})["output"].numpy(), one)
