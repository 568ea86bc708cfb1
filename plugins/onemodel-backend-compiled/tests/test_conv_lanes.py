"""The channels-in-lanes direct convolution (om_conv_lanes.h, conv2d_lanes), forced on every
kernel copy, against the float64 window formula and the numpy backend: rows split into tiles
of every width (1 to 14 positions), blocks of 32 and a last block of 16 channels, strides 1
and 2 along a row (and 3 down the columns), padding, dilation, a non-square kernel, input read
in place, the batch-norm prologue, each fused activation, the fused 2x2 max pool (odd maps
too), groups of rows over and under 128 positions, batch 1 to 5, and a split over two
threads. The copies with fused multiply-add give the same bits as each other and as the
direct kernel's unchunked sums."""
from __future__ import annotations

import attrs
import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel_backend_compiled import _native, heuristics

from conv_references import norm_relu_reference, pool_reference, windows_reference

RTOL, ATOL = 1e-4, 1e-4

ACTS = {None: (lambda y: y, lambda v: v),
        "relu": (om.ops.relu, lambda v: np.maximum(v, 0)),
        "tanh": (om.ops.tanh, np.tanh),
        "relu6": (lambda y: om.ops.clip(y, min=0.0, max=6.0), lambda v: np.clip(v, 0, 6)),
        "hardswish": (om.ops.hardswish, lambda v: v * np.clip(v + 3, 0, 6) / 6),
        "silu": (om.ops.silu, lambda v: v / (1 + np.exp(-v)))}

CASES = [  # cin, cout, (kh, kw), stride, pad, dil, act, prologue, pool, (h, w), batches
    (16, 32, (3, 3), 1, 1, 1, "relu", False, True, (14, 14), (1, 3)),     # the cnn's conv2
    (1, 16, (3, 3), 1, 1, 1, "relu", False, True, (28, 28), (1, 2)),      # its conv1: 16 out
    (16, 64, (3, 3), 1, 1, 1, "relu", False, False, (55, 55), (1,)),      # 4 tiles a row
    (48, 48, (3, 3), 1, 1, 1, None, False, False, (13, 13), (1, 2)),      # 32 + a block of 16
    (8, 32, (3, 3), 2, 1, 1, "relu6", False, False, (17, 16), (1, 2)),    # stride 2
    (5, 16, (3, 5), (3, 2), (1, 2), 1, "hardswish", False, False, (19, 23), (1, 3)),
    (7, 32, (3, 3), 1, 2, 2, "tanh", True, False, (9, 11), (1, 2)),       # dilation, prologue
    (9, 16, (3, 3), 1, 0, 1, None, False, False, (10, 12), (1, 5)),       # in place
    (6, 32, (1, 1), 1, 0, 1, "silu", True, False, (6, 7), (1, 2)),        # 1x1, prologue
    (4, 16, (3, 3), 1, 1, 1, "relu", True, True, (7, 9), (1, 2)),         # odd map, pooled
    (3, 48, (2, 2), 1, 0, 1, None, False, True, (30, 3), (1, 4)),         # rows of 2
    (2, 16, (3, 3), 1, 1, 1, None, False, False, (1, 200), (1,)),         # a row over 128
    (3, 32, (3, 3), 1, 1, 1, "relu", False, True, (4, 150), (1,)),        # pooled, over 128
]


def force_lanes(monkeypatch, on: bool = True):
    """The copy in use's heuristics with conv2d_lanes for every convolution it can take (or,
    ``on`` False, for none)."""
    src = heuristics.source(_native.isa())
    rec = heuristics.MEASURED[src]
    monkeypatch.setitem(heuristics.MEASURED, src, attrs.evolve(rec, conv=attrs.evolve(
        rec.conv, lanes_min_cout=1 if on else 0, lanes_min_k=0, lanes_only_pooled=False,
        gemm_max_positions=0,
        gemm_max_positions_strided=0, gemm_1x1_min_cin=10 ** 6, wx_1x1_min_cin=10 ** 6,
        wx_1x1_min_cin_prologue=10 ** 6, one_gemm_1x1_max_positions=0,
        cols_max_positions=0)))


def _model(case, rng):
    cin, cout, (kh, kw), stride, pad, dil, act, pro, pool, (h, w), batches = case
    W = (rng.standard_normal((cout, cin, kh, kw)) / np.sqrt(cin * kh * kw)).astype(np.float32)
    B = rng.standard_normal(cout).astype(np.float32)
    stats = [rng.standard_normal(cin), rng.uniform(0.5, 2.0, cin), rng.standard_normal(cin),
             rng.standard_normal(cin)]
    stats = [s.astype(np.float32) for s in stats]
    fn_act = ACTS[act][0]

    def fn(x):
        if pro:
            x = om.ops.relu(om.ops.batch_norm(x, *(Tensor.from_numpy(s) for s in stats)))
        y = fn_act(om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B),
                                 stride=stride, padding=pad, dilation=dil))
        return om.ops.max_pool2d(y, 2) if pool else y

    x0 = rng.standard_normal((37, cin, h, w)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x0), "batch", None, None, None)
    return traced, W, B, stats


def _pair(v):
    return v if isinstance(v, tuple) else (v, v)


@pytest.mark.parametrize("case", CASES, ids=[str(c[:6]) for c in CASES])
def test_conv_lanes_against_windows_and_numpy(case, isa, monkeypatch):
    cin, cout, (kh, kw), stride, pad, dil, act, pro, pool, (h, w), batches = case
    force_lanes(monkeypatch)
    rng = np.random.default_rng(cin * 7 + cout + h)
    traced, W, B, stats = _model(case, rng)
    session = om.Session(traced, backend="compiled")
    numpy_session = om.Session(traced, backend="numpy")
    for batch in batches:
        x = rng.standard_normal((batch, cin, h, w)).astype(np.float32)
        feeds = {"input": x}
        src = session.plan_source(feeds)
        body = src.split("native segment:")[1]
        assert "conv2d_lanes" in body and "pointwise" not in body and "max_pool2d" not in body, \
            src
        xf = norm_relu_reference(x, stats) if pro else x.astype(np.float64)
        want = ACTS[act][1](windows_reference(xf, W, B, _pair(stride), _pair(pad),
                                              _pair(dil)))
        if pool:
            want = pool_reference(want)
        got = session.run(feeds)["output"].numpy()
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"b{batch}")
        np.testing.assert_allclose(got, numpy_session.run(feeds)["output"].numpy(),
                                   rtol=RTOL, atol=ATOL, err_msg=f"numpy b{batch}")


FMA_COPIES = [c for c in ("avx2", "avx2-w16", "avx512") if c in dict(_native.copies())]


@pytest.mark.parametrize("case", [CASES[0], CASES[4], CASES[6], CASES[9]],
                         ids=lambda c: str(c[:6]))
def test_conv_lanes_bits_match_the_direct_kernel_on_every_fma_copy(case, monkeypatch):
    """Each output is the sum over k in order, then the bias, the activation and the pool:
    the direct kernel's unchunked order, so with fused multiply-add every copy and both
    kernels give the same bits (an R or a split that changed the order would show here)."""
    if not FMA_COPIES:
        pytest.skip("no copy with fused multiply-add runs on this CPU")
    rng = np.random.default_rng(5)
    traced, *_ = _model(case, rng)
    cin, h, w = case[0], *case[9]
    x = rng.standard_normal((3, cin, h, w)).astype(np.float32)
    before = _native.isa()
    results = {}
    try:
        for copy in FMA_COPIES:
            _native.use(copy)
            for on in (True, False):
                with monkeypatch.context() as m:
                    force_lanes(m, on)
                    session = om.Session(traced, backend="compiled")
                    src = session.plan_source({"input": x})
                    assert ("conv2d_lanes" in src) == on, src
                    results[copy, on] = session.run({"input": x})["output"].numpy()
    finally:
        _native.use(before)
    first = next(iter(results.values()))
    for key, got in results.items():
        np.testing.assert_array_equal(got, first, err_msg=str(key))


def test_conv_lanes_split_over_two_threads_gives_the_same_bits(isa, monkeypatch):
    """Images x channel blocks split over the pool: each part copies its images' padded
    input into its own scratch; the bits are those of one thread."""
    force_lanes(monkeypatch)
    case = (6, 80, (3, 3), 1, 1, 1, "relu", True, False, (12, 13), (3,))
    rng = np.random.default_rng(11)
    traced, *_ = _model(case, rng)
    x = rng.standard_normal((3, 6, 12, 13)).astype(np.float32)
    one = om.Session(traced, backend="compiled").run({"input": x})["output"].numpy()
    two = om.Session(traced, backend="compiled", threads=2).run({"input": x})["output"].numpy()
    np.testing.assert_array_equal(two, one)


def test_conv_lanes_is_chosen_only_where_it_applies():
    conv = attrs.evolve(heuristics.ConvHeuristics(), lanes_min_cout=32)
    assert conv.lanes_win(1, 16, 32, 3, 3, (1, 1), False)
    assert conv.lanes_win(1, 16, 48, 3, 3, (2, 2), False)       # a last block of 16
    assert conv.lanes_win(1, 1, 32, 3, 3, (1, 1), True)         # few taps, but pooled
    assert not conv.lanes_win(1, 8, 32, 3, 3, (1, 1), False)    # few taps
    assert not conv.lanes_win(1, 16, 16, 3, 3, (1, 1), False)   # under the copy's least
    assert not conv.lanes_win(2, 16, 64, 3, 3, (1, 1), False)   # grouped
    assert not conv.lanes_win(1, 16, 40, 3, 3, (1, 1), False)   # not a multiple of 16
    assert not conv.lanes_win(1, 16, 64, 3, 3, (1, 3), False)   # column stride 3
    assert not heuristics.ConvHeuristics().lanes_win(1, 16, 64, 3, 3, (1, 1), True)  # off
    assert conv.lanes_before_gemm(1, 32, 128, 3, 3, (1, 1), 7)      # before the GEMM on 7x7
    assert not conv.lanes_before_gemm(1, 64, 256, 3, 3, (1, 1), 3)  # not on 3x3
    assert not conv.lanes_before_gemm(1, 256, 128, 1, 1, (1, 1), 7)  # 1x1: its own paths
    pooled = attrs.evolve(conv, lanes_only_pooled=True)  # the avx2 record's rule
    assert pooled.lanes_win(1, 16, 32, 3, 3, (1, 1), True)          # the cnn's conv2
    assert not pooled.lanes_win(1, 1, 32, 3, 3, (1, 1), True)       # pooled, few taps
    assert not pooled.lanes_win(1, 64, 64, 3, 3, (1, 1), False)     # taps, no pool
    assert not pooled.lanes_before_gemm(1, 32, 128, 3, 3, (1, 1), 7)
    avx2 = heuristics.for_isa("avx2").conv
    assert avx2.lanes_only_pooled and avx2.lanes_win(1, 16, 32, 3, 3, (1, 1), True)


def test_avx512_takes_lanes_before_the_implicit_gemm_on_7x7(monkeypatch):
    """The avx512 record's choice on ResNet's and SqueezeNet's 7x7 layers, on any machine
    (the plan is lowered for that copy's heuristics; it runs on the copy in use)."""
    monkeypatch.setattr(heuristics, "current", lambda: heuristics.for_isa("avx512"))
    rng = np.random.default_rng(3)
    W = (rng.standard_normal((128, 32, 3, 3)) / 17).astype(np.float32)

    def fn(x):
        return om.ops.relu(om.ops.conv2d(x, Tensor.from_numpy(W), None, padding=1))

    x = rng.standard_normal((2, 32, 7, 7)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x[:1].repeat(5, 0)), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    assert "conv2d_lanes" in session.plan_source({"input": x})
    want = np.maximum(windows_reference(x, W, None, (1, 1), (1, 1), (1, 1)), 0)
    np.testing.assert_allclose(session.run({"input": x})["output"].numpy(), want,
                               rtol=RTOL, atol=ATOL)
