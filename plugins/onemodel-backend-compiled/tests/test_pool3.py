"""The 3x3 stride-2 max pool by rows (om_pool3.h) on maps wide enough for its 8-column paths
and their tails: ceil mode or not, padding 0 or 1, NaN and +-inf, equal to the numpy backend
and to a window formula written here, on both kernel copies."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor


def pool_formula(x, pad, ho, wo):
    """The max of each 3x3 window at stride 2 (NaN if any is NaN), -inf outside the map."""
    n, c, h, w = x.shape
    xp = np.full((n, c, 2 * ho + 3, 2 * wo + 3), -np.inf, np.float32)
    xp[:, :, pad:pad + h, pad:pad + w] = x
    win = np.stack([xp[:, :, u:u + 2 * ho:2, t:t + 2 * wo:2] for u in range(3) for t in range(3)])
    out = win.max(axis=0)
    return np.where(np.isnan(win).any(axis=0), np.nan, out)


@pytest.mark.parametrize("hw", [(31, 31), (20, 19), (15, 40)])
@pytest.mark.parametrize("pad", [0, 1])
@pytest.mark.parametrize("ceil", [True, False])
def test_max_pool_3x3_stride_2_rows(hw, pad, ceil, isa):
    rng = np.random.default_rng(hw[1] + pad)
    x = rng.standard_normal((3, 5, *hw)).astype(np.float32)
    x[0, 0, 4, 4], x[1, 2, 0, 17], x[2, 4, -1, -1], x[0, 3, 9, 0] = np.nan, np.inf, np.nan, -np.inf
    x[1, 1, 2:6, 2:6] = -np.inf
    traced = om.trace(lambda t: om.ops.max_pool2d(t, 3, 2, pad, ceil_mode=ceil),
                      Tensor.from_numpy(x), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    assert "0 on numpy" in session.plan_source({"input": x})
    got = session.run({"input": x})["output"].numpy()
    ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got, pool_formula(x, pad, *got.shape[2:]))
    assert np.isnan(got).any() and np.isneginf(got).any() and np.isposinf(got).any()
