"""Sigmoid and SiLU (swish, x * sigmoid(beta x)) as the convolution's epilogue (om_sigrows.h:
1 / (1 + exp(-z)) on 8 or 16 lanes, the last 1-7 values of a row through one padded vector)
on every convolution path: the implicit GEMM on a 2x2 map (rows of 4 values: only the padded
vector), one GEMM for a small 1x1 convolution, the direct kernel (rows of 63 values) and the
depthwise paths (the gathered small map, and the direct kernel on a larger one). Against a
float64 formula and the numpy backend, on every kernel copy; a 1x1 depthwise convolution of
weight 1 feeds the activation the exact values NaN, +-inf, -0.0, +-100, +-88.5 and +-20."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.testing.numerics import assert_specials_then_close

RTOL, ATOL = 1e-5, 1e-6  # tighter than the docs' 1e-4 / 1e-5: the exp form is a few ulps


def _sig(v):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-v))


ACTS = {"sigmoid": (om.ops.sigmoid, _sig),
        "swish": (lambda y: om.ops.swish(y, beta=1.0), lambda v: v * _sig(v)),
        "swish1.7": (lambda y: om.ops.swish(y, beta=1.7), lambda v: v * _sig(1.7 * v))}

DENSE = [  # cin, cout, k, (h, w), the instruction that runs
    (256, 20, 1, (2, 2), "conv2d_gemm"),      # 4 values a channel: the padded vector only
    (9, 13, 3, (3, 5), "conv2d_gemm"),        # 15: 8 and 7
    (24, 40, 1, (3, 3), "conv2d_1x1_gemm"),   # one GEMM, the activation over all of it
    (5, 12, 3, (7, 9), "conv2d_direct"),      # 63 positions a channel, rows at stride 10
]


@pytest.mark.parametrize("act", sorted(ACTS))
@pytest.mark.parametrize("case", DENSE, ids=[str(c) for c in DENSE])
def test_dense_conv_then_sigmoid_rows(case, act, isa):
    cin, cout, k, (h, w), kind = case
    rng = np.random.default_rng(cin + cout)
    W = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k) * 4).astype(np.float32)
    B = rng.standard_normal(cout).astype(np.float32)
    fn_act, formula = ACTS[act]

    def fn(x):
        return fn_act(om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B),
                                    padding=k // 2))

    traced = om.trace(fn, Tensor.from_numpy(rng.standard_normal((6, cin, h, w))
                                            .astype(np.float32)), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    numpy_session = om.Session(traced, backend="numpy")
    for batch in (1, 2, 5):
        x = rng.standard_normal((batch, cin, h, w)).astype(np.float32)
        src = session.plan_source({"input": x})
        assert kind in src and "pointwise" not in src, src
        got = session.run({"input": x})["output"].numpy()
        y = np.einsum("nchw,oc->nohw", x.astype(np.float64), W[:, :, k // 2, k // 2]) \
            if k == 1 else None
        if y is not None:
            want = formula(y + B.reshape(1, -1, 1, 1))
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"b{batch}")
        ref = numpy_session.run({"input": x})["output"].numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5, err_msg=f"numpy b{batch}")


SPECIALS = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 100.0, -100.0, 88.5, -88.5, 20.0,
                     -20.0, 1e-3, -1e-3, 5.0, -5.0], np.float32)


@pytest.mark.parametrize("act", sorted(ACTS))
@pytest.mark.parametrize("hw", [(2, 2), (3, 5), (8, 8), (11, 13)])
def test_depthwise_identity_sigmoid_rows_of_special_values(hw, act, isa):
    """out = act(1 * x): NaN, inf, -0.0 and the overflow range of exp reach the formula as
    they are (dw_small up to 64 positions, the direct kernel at 143, 19 channels: two blocks
    of 8 and 3)."""
    c = 19
    fn_act, formula = ACTS[act]
    ones = Tensor.from_numpy(np.ones((c, 1, 1, 1), np.float32))

    def fn(x):
        return fn_act(om.ops.conv2d(x, ones, groups=c))

    rng = np.random.default_rng(hw[0] * 31 + hw[1])
    x = (3 * rng.standard_normal((2, c, *hw))).astype(np.float32)
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=len(SPECIALS) * 3, replace=False)
    flat[picks] = np.tile(SPECIALS, 3)
    traced = om.trace(fn, Tensor.from_numpy(np.zeros((6, c, *hw), np.float32)), "batch",
                      None, None, None)
    session = om.Session(traced, backend="compiled")
    assert "conv2d_direct" in session.plan_source({"input": x})
    got = session.run({"input": x})["output"].numpy()
    with np.errstate(invalid="ignore", over="ignore"):
        want = formula(x.astype(np.float64)).astype(np.float32)
        ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
    assert_specials_then_close(got, want, RTOL, ATOL, "formula")
    assert_specials_then_close(got, ref, 1e-4, 1e-5, "numpy")
    at = np.signbit(x) & (x == 0)  # swish(-0.0) = -0.0 * 0.5: -0.0, as numpy's
    np.testing.assert_array_equal(np.signbit(got[at]), np.signbit(ref[at]))
