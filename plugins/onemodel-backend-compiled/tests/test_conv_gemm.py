"""The convolution paths chosen by shape. The implicit GEMM (conv_gemm, om_conv_gemm.h:
patches packed as GEMM rows, the weights as 16-column panels) against a sliding-window formula
written here in numpy and against the numpy backend, on both kernel copies: at and past the
rule's limits on both sides (which path runs is asserted), padding or none, strides, dilation,
a non-square kernel, output channels not a multiple of 16, several blocks of rows, batch sizes
whose rows do not fill the 6-row tiles, fused activations and NaN/inf. And 1x1 convolutions
that the direct kernel computes in place (from x into the output, no padded copy or
compaction) or not."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.testing.numerics import assert_specials_then_close

from conv_references import windows_reference

RTOL, ATOL = 1e-4, 1e-4


ACTS = {None: (lambda y: y, lambda v: v),
        "relu": (om.ops.relu, lambda v: np.maximum(v, 0)),
        "sigmoid": (om.ops.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
        "tanh": (om.ops.tanh, np.tanh),
        "relu6": (lambda y: om.ops.clip(y, min=0.0, max=6.0), lambda v: np.clip(v, 0, 6)),
        "hardswish": (om.ops.hardswish, lambda v: v * np.clip(v + 3, 0, 6) / 6)}

GEMM_CASES = [
    # cin, cout, (kh, kw), stride, pad, dil, act, bias, (h, w), runs as GEMM
    (20, 37, (3, 3), 1, 1, 1, "relu", True, (2, 2), True),     # 2x2 map, odd channels
    (5, 18, (3, 3), 1, 1, 1, "sigmoid", True, (7, 7), True),   # 49 outputs: the limit
    (5, 18, (3, 3), 1, 1, 1, "sigmoid", True, (7, 8), False),  # 56: the direct kernel
    (6, 16, (3, 3), 2, 1, 1, None, False, (15, 15), True),     # stride 2, 64 outputs: limit
    (6, 16, (3, 3), 2, 1, 1, None, False, (17, 17), False),    # 81: the direct kernel
    (12, 40, (1, 1), 2, 0, 1, "relu", True, (8, 8), True),     # 1x1 stride 2, no padding
    (256, 24, (1, 1), 1, 0, 1, "tanh", True, (7, 9), True),    # 1x1: 256 inputs, 63 outputs
    (255, 24, (1, 1), 1, 0, 1, "tanh", True, (7, 9), False),   # 255 inputs: direct
    (256, 24, (1, 1), 1, 0, 1, "relu", True, (9, 8), False),   # 72 outputs: direct
    (7, 9, (3, 3), 1, 2, 2, "relu6", True, (5, 5), True),      # dilation 2
    (8, 17, (3, 1), 1, (1, 0), 1, "hardswish", True, (4, 6), True),  # 3x1, rows padded only
    (9, 33, (3, 3), 1, 0, 1, None, True, (4, 4), True),        # no padding: x gathered as is
    (4, 10, (5, 5), 3, 1, 1, "relu", True, (10, 9), True),     # 5x5 stride 3
    (512, 24, (3, 3), 1, 1, 1, "relu", True, (4, 4), True),    # 18 rows a block: 3 blocks at b3
]


@pytest.mark.parametrize("case", GEMM_CASES, ids=[str(c) for c in GEMM_CASES])
def test_conv_gemm_against_windows_and_numpy(case, isa):
    cin, cout, (kh, kw), stride, pad, dil, act, bias, (h, w), gemm = case
    pad2 = pad if isinstance(pad, tuple) else (pad, pad)
    rng = np.random.default_rng(cin * 31 + cout)
    W = (rng.standard_normal((cout, cin, kh, kw)) / np.sqrt(cin * kh * kw)).astype(np.float32)
    B = rng.standard_normal(cout).astype(np.float32) if bias else None
    fn_act, formula = ACTS[act]

    def fn(x):
        return fn_act(om.ops.conv2d(x, Tensor.from_numpy(W),
                                    Tensor.from_numpy(B) if bias else None, stride=stride,
                                    padding=pad, dilation=dil))

    x0 = rng.standard_normal((13, cin, h, w)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x0), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    numpy_session = om.Session(traced, backend="numpy")
    src = session.plan_source({"input": x0})
    assert ("conv2d_gemm" in src) == gemm, src
    assert "pointwise" not in src and "numpy:" not in src, src  # the activation fused
    for batch in (1, 3):
        x = rng.standard_normal((batch, cin, h, w)).astype(np.float32)
        want = formula(windows_reference(x, W, B, (stride, stride), pad2, (dil, dil)))
        got = session.run({"input": x})["output"].numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"b{batch}")
        ref = numpy_session.run({"input": x})["output"].numpy()
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=f"numpy b{batch}")


@pytest.mark.parametrize("act", ["relu", "relu6", None])
def test_conv_gemm_nan_and_inf_as_numpy(act, isa):
    """NaN and inf through the packed patches, the register epilogue and the transpose back land
    where the numpy backend puts them; padding contributes exact zeros (no NaN from 0 * inf
    outside the map)."""
    rng = np.random.default_rng(17)
    W = rng.standard_normal((21, 6, 3, 3)).astype(np.float32)
    B = rng.standard_normal(21).astype(np.float32)
    fn_act = ACTS[act][0]

    def fn(x):
        return fn_act(om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B), padding=1)), \
            om.ops.conv2d(x, Tensor.from_numpy(W), stride=2, padding=1)

    x = rng.standard_normal((3, 6, 4, 4)).astype(np.float32)
    x[0, 0, 1, 1], x[1, 5, 3, 0], x[2, 2, 0, 3] = np.nan, np.inf, -np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
        ref = om.Session(traced, backend="numpy").run({"input": x})
    session = om.Session(traced, backend="compiled")
    assert session.plan_source({"input": x}).count("conv2d_gemm") == 2
    got = session.run({"input": x})
    for key in ref:
        fin = assert_specials_then_close(got[key].numpy(), ref[key].numpy(), RTOL, ATOL, key)
        assert fin.any() and not fin.all()


IN_PLACE_CASES = [  # cin, cout, groups, (h, w), act: 1x1 stride 1 on the direct kernel
    (16, 96, 1, (8, 8), "relu6"),      # reads x and writes out in place
    (12, 8, 2, (4, 6), "hardswish"),   # two groups of 4 output channels, 24 positions
    (16, 20, 1, (9, 8), "sigmoid"),    # 72 positions, 5 tiles of 4 channels
    (16, 18, 1, (8, 8), "relu"),       # 18 channels: not a multiple of 4, compacted
    (16, 16, 1, (7, 9), None),         # 63 positions: compacted
    # over 16 KiB of input and at most 64 channels: blocks of positions copied rows apart
    (16, 96, 1, (32, 32), "relu6"),    # blocks of 240: 4 whole and one of 64
    (24, 20, 1, (16, 16), "hardswish"),  # blocks of 144 and 112, 5 tiles of 4 channels
    (64, 8, 1, (9, 8), "sigmoid"),     # blocks of 48 and 24 (the tail by 8s)
    (48, 12, 1, (11, 8), None),        # 88 positions: blocks of 48 and 40
]


@pytest.mark.parametrize("case", IN_PLACE_CASES, ids=[str(c) for c in IN_PLACE_CASES])
def test_1x1_direct_in_place_against_windows_and_numpy(case, isa):
    """A 1x1 stride-1 convolution whose map is a multiple of 8 positions and whose groups have
    a multiple of 4 output channels is computed straight from x into the output; the others
    through the padded copy and the compaction, the same results either way (NaN and inf too)."""
    cin, cout, groups, (h, w), act = case
    rng = np.random.default_rng(cin + cout + h)
    W = rng.standard_normal((cout, cin // groups, 1, 1)).astype(np.float32)
    B = rng.standard_normal(cout).astype(np.float32)
    fn_act, formula = ACTS[act]

    def fn(x):
        return fn_act(om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B),
                                    groups=groups))

    x0 = rng.standard_normal((5, cin, h, w)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x0), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    src = session.plan_source({"input": x0})
    assert "conv2d_direct" in src and "pointwise" not in src, src
    for batch in (1, 3):
        x = rng.standard_normal((batch, cin, h, w)).astype(np.float32)
        x[0, 0, 0, 1], x[-1, cin - 1, h - 1, w - 1], x[0, 1, 2, 0] = np.nan, np.inf, -np.inf
        with np.errstate(invalid="ignore", over="ignore"):
            ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
        got = session.run({"input": x})["output"].numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        fin = ~np.isnan(ref)
        np.testing.assert_allclose(got[fin], ref[fin], rtol=RTOL, atol=ATOL)
        xc = np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
        want = np.concatenate([
            np.einsum("nchw,oc->nohw", xc[:, gi * (cin // groups):(gi + 1) * (cin // groups)]
                      .astype(np.float64),
                      W[gi * (cout // groups):(gi + 1) * (cout // groups), :, 0, 0])
            for gi in range(groups)], axis=1) + B.reshape(1, -1, 1, 1)
        np.testing.assert_allclose(session.run({"input": xc})["output"].numpy(), formula(want),
                                   rtol=RTOL, atol=ATOL)
