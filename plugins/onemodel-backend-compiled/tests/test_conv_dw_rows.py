"""Depthwise convolutions on larger maps, row by row (om_dw.h's dw_direct: 3x3 and 5x5, stride 1
and 2, each input row copied once into a zero-padded row slot, two or four output rows a pass,
ReLU and clip in the registers, the other activations on each output row). Against a float64
formula and the numpy backend on every kernel copy: row widths of a multiple of 8, with a
last overlapping vector, and under 8; channels not a multiple of 8; paddings 0, 1 and 2;
batches 1 to 5; NaN and inf; the same bits at 1 and 2 threads."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.testing.numerics import assert_specials_then_close

from test_conv_depthwise import ACTS, depthwise_reference

RTOL, ATOL = 1e-4, 1e-4
ACTS = {**ACTS, "none": (lambda y: y, lambda v: v),
        "relu": (om.ops.relu, lambda v: np.maximum(v, 0))}

CASES = [  # channels, kernel, stride, pad, (h, w), batch
    (3, 3, 1, 1, (8, 8), 2),     # 8 outputs a row: one vector (dw_small's 8x8 before)
    (5, 3, 1, 1, (9, 9), 1),     # 9: a vector and an overlapping last one
    (7, 3, 1, 0, (40, 5), 3),    # 3 outputs a row, no padding: through the scratch vector
    (2, 3, 1, 1, (1, 1), 1),     # a 1x1 map (dw_small)
    (9, 5, 1, 2, (33, 33), 2),   # 33: 32 and an overlapping 8; odd rows: single-row passes
    (11, 5, 1, 1, (20, 70), 1),  # padding 1 of a 5x5 kernel, a row wider than 64
    (4, 3, 1, 2, (17, 16), 5),   # padding 2 of a 3x3 kernel: 20 outputs a row
    (6, 3, 2, 1, (33, 31), 2),   # stride 2, 17x16 outputs: even / odd split rows
    (10, 5, 2, 2, (36, 34), 1),  # 5x5 stride 2
    (3, 3, 2, 0, (64, 67), 4),   # stride 2, no padding, 31x33 outputs
    (12, 5, 2, 1, (120, 13), 3),  # stride 2, 6 outputs a row: through the scratch vector
]


@pytest.mark.parametrize("act", sorted(ACTS))
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_depthwise_rows_against_formula_and_numpy(case, act, isa):
    c, k, stride, pad, (h, w), batch = case
    rng = np.random.default_rng(c * 7 + k + h)
    W = rng.standard_normal((c, 1, k, k)).astype(np.float32)
    B = rng.standard_normal(c).astype(np.float32)
    fn_act, formula = ACTS[act]

    def fn(x):
        return fn_act(om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B),
                                    stride=stride, padding=pad, groups=c))

    x = (2 * rng.standard_normal((batch, c, h, w))).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x))
    session = om.Session(traced, backend="compiled")
    src = session.plan_source({"input": x})
    assert "conv2d_direct" in src and "pointwise" not in src, src
    got = session.run({"input": x})["output"].numpy()
    np.testing.assert_allclose(got, formula(depthwise_reference(x, W, B, stride, pad)),
                               rtol=RTOL, atol=ATOL)
    ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("k", [3, 5])
def test_depthwise_rows_nan_and_inf_as_numpy(k, stride, isa):
    rng = np.random.default_rng(k + stride)
    c = 5
    W = rng.standard_normal((c, 1, k, k)).astype(np.float32)

    def fn(x):
        y = om.ops.conv2d(x, Tensor.from_numpy(W), stride=stride, padding=k // 2, groups=c)
        return om.ops.clip(y, min=0.0, max=6.0), om.ops.swish(
            om.ops.conv2d(x, Tensor.from_numpy(W), stride=stride, padding=k // 2, groups=c),
            beta=1.0)

    x = rng.standard_normal((2, c, 35, 37)).astype(np.float32)
    x[0, 0, 0, 0], x[0, 4, 17, 36], x[1, 3, 34, 9] = np.nan, np.inf, -np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        traced = om.trace(fn, Tensor.from_numpy(x))
        ref = om.Session(traced, backend="numpy").run({"input": x})
    got = om.Session(traced, backend="compiled").run({"input": x})
    for key in ref:
        fin = assert_specials_then_close(got[key].numpy(), ref[key].numpy(), RTOL, ATOL, key)
        assert not fin.all()


def test_depthwise_rows_same_bits_at_two_threads():
    """The split by images gives each image the same sums in the same order."""
    rng = np.random.default_rng(3)
    c = 13
    W = rng.standard_normal((c, 1, 5, 5)).astype(np.float32)
    B = rng.standard_normal(c).astype(np.float32)

    def fn(x):
        return om.ops.swish(om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B),
                                          stride=1, padding=2, groups=c), beta=1.0)

    x = rng.standard_normal((4, c, 30, 30)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x))
    one = om.Session(traced, backend="compiled").run({"input": x})["output"].numpy()
    two = om.Session(traced, backend="compiled", threads=2).run({"input": x})["output"].numpy()
    np.testing.assert_array_equal(one, two)
