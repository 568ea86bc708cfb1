"""The VM program x * s with one factor a row (om_vm_scale.h): the squeeze-and-excitation
scale of each channel of a map by its own value, s of shape (N, C, 1, 1). Against numpy's
product (one rounding: the same bits) on every kernel copy, both operand orders, maps of 1 to
67 values a channel (8 lanes and the rest), NaN and inf in either operand, and the threaded
split (rows and blocks of 64 cut between parts) giving the same bits as one thread. A program
that is not exactly this (a factor that varies along the row, a third op) keeps the general
loop."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor


def _trace(fn, c, hw):
    ex_x = np.zeros((6, c, *hw), np.float32)
    ex_s = np.zeros((6, c, 1, 1), np.float32)
    return om.trace(fn, {"x": (Tensor.from_numpy(ex_x), "batch", None, None, None),
                         "s": (Tensor.from_numpy(ex_s), "batch", None, None, None)})


@pytest.mark.parametrize("order", ["s*x", "x*s"])
@pytest.mark.parametrize("hw", [(1, 1), (2, 2), (3, 5), (4, 4), (8, 8), (67, 1), (9, 9)])
def test_scale_by_channel_is_numpys_product(hw, order, isa):
    c = 11
    traced = _trace((lambda x, s: s * x) if order == "s*x" else (lambda x, s: x * s), c, hw)
    session = om.Session(traced, backend="compiled")
    rng = np.random.default_rng(hw[0] * 100 + hw[1])
    for batch in (1, 2, 5):
        x = rng.standard_normal((batch, c, *hw)).astype(np.float32)
        s = rng.standard_normal((batch, c, 1, 1)).astype(np.float32)
        x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
        s[0, 1, 0, 0], s[-1, -1, 0, 0] = np.inf, np.nan
        feeds = {"x": x, "s": s}
        assert "pointwise" in session.plan_source(feeds)
        got = next(iter(session.run(feeds).values())).numpy()
        with np.errstate(invalid="ignore"):
            want = s * x if order == "s*x" else x * s
        np.testing.assert_array_equal(got, want, err_msg=f"b{batch}")


@pytest.mark.parametrize("hw", [(2, 2), (13, 11)])
def test_scale_by_channel_split_over_threads_is_exact(hw):
    c = 40
    traced = _trace(lambda x, s: x * s, c, hw)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, c, *hw)).astype(np.float32)
    s = rng.standard_normal((4, c, 1, 1)).astype(np.float32)
    feeds = {"x": x, "s": s}
    outs = [next(iter(om.Session(traced, backend="compiled", threads=t).run(feeds).values()))
            .numpy() for t in (1, 2, 3)]
    np.testing.assert_array_equal(outs[0], x * s)
    for got in outs[1:]:
        assert got.tobytes() == outs[0].tobytes()


def test_other_programs_keep_the_general_loop(isa):
    """A factor along the row (s of shape (N, 1, H, W)) and x * s + x: not the scale form."""
    c, hw = 6, (3, 4)
    ex = Tensor.from_numpy(np.zeros((5, c, *hw), np.float32))
    ex_row = Tensor.from_numpy(np.zeros((5, 1, *hw), np.float32))
    traced = om.trace(lambda x, s: (x * s, x * s + x),
                      {"x": (ex, "batch", None, None, None),
                       "s": (ex_row, "batch", None, None, None)})
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, c, *hw)).astype(np.float32)
    s = rng.standard_normal((2, 1, *hw)).astype(np.float32)
    got = om.Session(traced, backend="compiled").run({"x": x, "s": s})
    a, b = (v.numpy() for v in got.values())
    np.testing.assert_array_equal(a, x * s)
    np.testing.assert_allclose(b, x * s + x, rtol=1e-6, atol=1e-6)
