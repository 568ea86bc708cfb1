"""The 3x3 stride-2 max pool by rows (om_pool3.h) on maps wide enough for its 8-column paths
and their tails: ceil mode or not, padding 0 or 1, NaN and +-inf, equal to the numpy backend
and to a window formula written here, on every kernel copy; maps under 8 wide and rows of
under 8 outputs too, and a split over threads."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.core import adaptive
from onemodel_backend_compiled import _native


def pool_formula(x, pad, ho, wo):
    """The max of each 3x3 window at stride 2 (NaN if any is NaN), -inf outside the map."""
    n, c, h, w = x.shape
    xp = np.full((n, c, 2 * ho + 3, 2 * wo + 3), -np.inf, np.float32)
    xp[:, :, pad:pad + h, pad:pad + w] = x
    win = np.stack([xp[:, :, u:u + 2 * ho:2, t:t + 2 * wo:2] for u in range(3) for t in range(3)])
    out = win.max(axis=0)
    return np.where(np.isnan(win).any(axis=0), np.nan, out)


def _traced(x, pad, ceil):
    return om.trace(lambda t: om.ops.max_pool2d(t, 3, 2, pad, ceil_mode=ceil),
                    Tensor.from_numpy(x), "batch", None, None, None)


def _pooled_natively(x, pad, ceil):
    """The compiled pool of ``x`` (all native), checked against the numpy backend and the
    window formula."""
    traced = _traced(x, pad, ceil)
    session = om.Session(traced, backend="compiled")
    assert "0 on numpy" in session.plan_source({"input": x})
    got = session.run({"input": x})["output"].numpy()
    ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got, pool_formula(x, pad, *got.shape[2:]))
    return got


@pytest.mark.parametrize("hw", [(31, 31), (20, 19), (15, 40), (41, 600)])  # 600: 3 chunks
@pytest.mark.parametrize("pad", [0, 1])
@pytest.mark.parametrize("ceil", [True, False])
def test_max_pool_3x3_stride_2_rows(hw, pad, ceil, isa):
    rng = np.random.default_rng(hw[1] + pad)
    x = rng.standard_normal((3, 5, *hw)).astype(np.float32)
    x[0, 0, 4, 4], x[1, 2, 0, 17], x[2, 4, -1, -1], x[0, 3, 9, 0] = np.nan, np.inf, np.nan, -np.inf
    x[1, 1, 2:6, 2:6] = -np.inf
    got = _pooled_natively(x, pad, ceil)
    assert np.isnan(got).any() and np.isneginf(got).any() and np.isposinf(got).any()


@pytest.mark.parametrize("hw", [(15, 15), (14, 14), (16, 7), (7, 7), (5, 6), (3, 3), (9, 3)])
@pytest.mark.parametrize("pad", [0, 1])
@pytest.mark.parametrize("ceil", [True, False])
def test_max_pool_3x3_stride_2_narrow_maps(hw, pad, ceil, isa):
    """Maps under 8 wide and rows of under 8 outputs (SqueezeNet's 15x15 -> 7x7 and 7x7 -> 3x3
    pools): one padded vector a row, NaN and +-inf where they fall, 40 maps (more than a
    branch predictor learns from repeated runs)."""
    rng = np.random.default_rng(hw[0] * 31 + hw[1] + pad)
    x = rng.standard_normal((2, 20, *hw)).astype(np.float32)
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=9, replace=False)
    flat[picks[:3]], flat[picks[3:6]], flat[picks[6:]] = np.nan, np.inf, -np.inf
    _pooled_natively(x, pad, ceil)


@pytest.mark.parametrize("hw", [(1, 1), (2, 2), (1, 4), (4, 1)])
@pytest.mark.parametrize("ceil", [True, False])
def test_max_pool_3x3_stride_2_tiny_maps_padded(hw, ceil, isa):
    """Maps of 1-4 values, padding 1 (the only way a 3x3 window fits): rows of one output,
    several rows within one vector's reach of the output's end."""
    x = np.random.default_rng(sum(hw)).standard_normal((3, 7, *hw)).astype(np.float32)
    x[1, 3].flat[0] = np.nan
    _pooled_natively(x, 1, ceil)


@pytest.mark.parametrize("hw", [(15, 15), (7, 7), (2, 2)])
def test_narrow_pool_split_over_threads_is_exact(hw, monkeypatch):
    """Channels split over two threads: a part's rows of under 8 outputs end inside the part
    (its last rows are copied, not stored as a whole vector), so the bits are one thread's."""
    monkeypatch.setattr(adaptive, "MARGIN", float("inf"))  # the pool whatever timings say
    x = np.random.default_rng(hw[0]).standard_normal((3, 37, *hw)).astype(np.float32)
    traced = _traced(x, 1, True)
    want = om.Session(traced, backend="compiled").run({"input": x})["output"].numpy()
    before = _native.split_min_work()
    _native.split_min_work(0)  # parts of a few channels
    try:
        two = om.Session(traced, backend="compiled", threads=2)
        for _ in range(20):
            np.testing.assert_array_equal(two.run({"input": x})["output"].numpy(), want)
    finally:
        _native.split_min_work(before)
    np.testing.assert_array_equal(want, pool_formula(x, 1, *want.shape[2:]))
