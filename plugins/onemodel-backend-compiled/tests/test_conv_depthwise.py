"""Depthwise convolutions on the paths that gather their input: small maps (dw_small: 8
channels in the lanes, moved through 8x8 transposes, the activation on all 8 lanes at once,
the taps gathered once for every image) and strided ones on larger maps (the direct kernel
over phase planes split from each padded row, 8 even and 8 odd columns at a time at stride
2). Against a float64 formula written here and the numpy backend, both kernel copies, NaN and
inf included."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.testing.numerics import assert_specials_then_close

RTOL, ATOL = 1e-4, 1e-4


def depthwise_reference(x, w, b, stride, pad):
    """out[n, c, i, j] = b[c] + sum_uv w[c, 0, u, v] xpad[n, c, i s + u, j s + v], float64."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    out = np.zeros((n, c, ho, wo)) + b.reshape(1, c, 1, 1)
    for u in range(k):
        for v in range(k):
            out += w[:, 0, u, v].reshape(1, c, 1, 1) * \
                xp[:, :, u: u + stride * (ho - 1) + 1: stride, v: v + stride * (wo - 1) + 1: stride]
    return out


ACTS = {"swish": (lambda y: om.ops.swish(y, beta=1.0), lambda v: v / (1 + np.exp(-v))),
        "hardswish": (om.ops.hardswish, lambda v: v * np.clip(v + 3, 0, 6) / 6),
        "relu6": (lambda y: om.ops.clip(y, min=0.0, max=6.0), lambda v: np.clip(v, 0, 6)),
        "sigmoid": (om.ops.sigmoid, lambda v: 1 / (1 + np.exp(-v)))}

CASES = [  # channels, kernel, stride, pad, (h, w): small maps (dw_small) and strided larger ones
    (11, 5, 1, 2, (2, 2)),   # EfficientNet's 5x5 on 2x2, channels not a multiple of 8
    (20, 3, 1, 1, (4, 4)),   # two blocks of 8 through the 8x8 transposes, then 4 channels
    (16, 3, 1, 1, (8, 8)),   # 64 outputs: the limit, 8 transposes each way
    (9, 5, 1, 2, (6, 5)),    # 30 positions: 3 transposes and 6 positions one by one
    (8, 3, 1, 1, (9, 8)),    # 72 outputs: the direct kernel
    (13, 3, 2, 1, (9, 9)),   # stride 2, 25 outputs: dw_small
    (10, 3, 2, 1, (31, 32)),  # stride 2, 256 outputs: the row kernel (past 64)
    (5, 3, 3, 1, (30, 28)),  # stride 3, 100 outputs: dw_small (the row kernel takes 1 and 2)
    (9, 3, 2, 1, (33, 31)),  # stride 2, 272 outputs: the row kernel, 8 columns and a tail
    (6, 5, 2, 2, (36, 34)),  # 5x5 stride 2, padding 2: the row kernel
    (5, 3, 3, 1, (50, 47)),  # stride 3, 272 outputs: phase planes by the scalar split
    (6, 3, 2, 0, (35, 37)),  # stride 2 rows split straight from x: no padding, odd width
    (4, 3, 2, 1, (120, 9)),  # rows of 9: too short for a vector of the split
]


@pytest.mark.parametrize("act", sorted(ACTS))
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_depthwise_with_activation_against_formula_and_numpy(case, act, isa):
    c, k, stride, pad, (h, w) = case
    rng = np.random.default_rng(c * 7 + k)
    W = rng.standard_normal((c, 1, k, k)).astype(np.float32)
    B = rng.standard_normal(c).astype(np.float32)
    fn_act, formula = ACTS[act]

    def fn(x):
        return fn_act(om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B),
                                    stride=stride, padding=pad, groups=c))

    x0 = (2 * rng.standard_normal((7, c, h, w))).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x0), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    src = session.plan_source({"input": x0})
    assert "conv2d_direct" in src and "pointwise" not in src, src
    numpy_session = om.Session(traced, backend="numpy")
    for batch in (1, 3):
        x = (2 * rng.standard_normal((batch, c, h, w))).astype(np.float32)
        got = session.run({"input": x})["output"].numpy()
        want = formula(depthwise_reference(x, W, B, stride, pad))
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"b{batch}")
        ref = numpy_session.run({"input": x})["output"].numpy()
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=f"numpy b{batch}")


@pytest.mark.parametrize("hw", [(2, 2), (8, 8), (35, 36)])
def test_depthwise_nan_and_inf_as_numpy(hw, isa):
    """NaN and inf through the gathered small map and through the phase planes, with the
    activation on all lanes: where the numpy backend has them."""
    rng = np.random.default_rng(11)
    c = 10
    W = rng.standard_normal((c, 1, 3, 3)).astype(np.float32)
    B = rng.standard_normal(c).astype(np.float32)

    def fn(x):
        y = om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B), stride=2, padding=1,
                          groups=c)
        return om.ops.hardswish(y), om.ops.conv2d(x, Tensor.from_numpy(W), stride=1, padding=1,
                                                  groups=c)

    x = rng.standard_normal((3, c, *hw)).astype(np.float32)
    x[0, 0, 0, 0], x[0, 9, 1, 1], x[1, 3, 1, 0] = np.nan, np.inf, -np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
        ref = om.Session(traced, backend="numpy").run({"input": x})
    got = om.Session(traced, backend="compiled").run({"input": x})
    for key in ref:
        fin = assert_specials_then_close(got[key].numpy(), ref[key].numpy(), RTOL, ATOL, key)
        assert not fin.all()
