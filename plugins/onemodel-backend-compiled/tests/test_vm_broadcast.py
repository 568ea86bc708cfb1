"""Broadcast programs of the pointwise VM (om_vm.h): inputs of stride 0 along any axis (a bias
over channels, a scale and shift per image and channel, a mean and a reciprocal per position
over the channels, a scalar), rows shorter than a block (several to a block) and longer (a
row over several blocks), odd lengths, a strided input, NaN and infinities. Against numpy's
formula on every kernel copy: each op is one rounding, so the bits are numpy's. And the bits do
not depend on the path: the same formula with the broadcast operands made full arrays first
(other blocks, other register forms), and split over two threads, gives the same bytes."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel_backend_compiled import _native

#: (n, c, h, w): maps of 1, 4, 15, 49 values (several rows a block), 196 and 2100 (rows over
#: one and several blocks of 1024)
SHAPES = [(2, 3, 1, 1), (3, 5, 2, 2), (2, 7, 3, 5), (2, 6, 7, 7), (1, 4, 14, 14), (2, 3, 1, 2100)]

#: name -> (formula, broadcast shape of each operand other than x, given x's (n, c, h, w))
FORMS = {
    "x + b[c]": (lambda x, b: x + b, lambda n, c, h, w: [(1, c, 1, 1)]),
    "x * s[n,c] + t[n,c]": (lambda x, s, t: x * s + t,
                            lambda n, c, h, w: [(n, c, 1, 1), (n, c, 1, 1)]),
    "(x - m) * r, m r (n,1,h,w)": (lambda x, m, r: (x - m) * r,
                                   lambda n, c, h, w: [(n, 1, h, w), (n, 1, h, w)]),
    "b[n] / x": (lambda x, b: b / x, lambda n, c, h, w: [(n, 1, 1, 1)]),
    "x - row[w]": (lambda x, r: x - r, lambda n, c, h, w: [(1, 1, 1, w)]),
    "x * col[h] - x": (lambda x, r: x * r - x, lambda n, c, h, w: [(1, 1, h, 1)]),
    "s * t (both broadcast) + x": (lambda x, s, t: s * t + x,
                                   lambda n, c, h, w: [(n, c, 1, 1), (1, c, 1, 1)]),
    "scalar * x + 2": (lambda x, s: s * x + 2.0, lambda n, c, h, w: [(1, 1, 1, 1)]),
}


def _feeds(shape, extra, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    others = [rng.standard_normal(s).astype(np.float32) + 0.5 for s in extra]
    if others[0].size > 1:
        others[0].reshape(-1)[-1] = np.nan
    return x, others


def _session(fn, arrays, threads=None):
    names = ["x"] + [f"a{i}" for i in range(len(arrays) - 1)]
    spec = {k: (Tensor.from_numpy(np.zeros_like(v)), *([None] * v.ndim))
            for k, v in zip(names, arrays)}
    traced = om.trace(fn, spec)
    kw = {} if threads is None else {"threads": threads}
    return om.Session(traced, backend="compiled", **kw), dict(zip(names, arrays))


def _run(fn, arrays, threads=None):
    session, feeds = _session(fn, arrays, threads)
    assert "0 on numpy" in session.plan_source(feeds)
    return next(iter(session.run(feeds).values())).numpy()


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_broadcast_program_is_numpys(form, shape, isa):
    fn, extra = FORMS[form]
    x, others = _feeds(shape, extra(*shape), sum(shape))
    got = _run(fn, [x, *others])
    with np.errstate(invalid="ignore", divide="ignore"):
        want = fn(x, *others)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got).any()


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_strided_input_is_numpys(shape, isa):
    """x read through a transpose (an innermost stride of w, not 1: a gather) plus b[c]."""
    n, c, h, w = shape
    x, (b,) = _feeds((n, c, w, h), [(1, c, 1, 1)], 3)
    got = _run(lambda x, b: x.transpose(2, 3) * b + b, [x, b])
    np.testing.assert_array_equal(got, np.swapaxes(x, 2, 3) * b + b)


def _exp_form(x, s, t):
    return om.ops.exp(x * s + t) if isinstance(x, Tensor) else np.exp(x * s + t)


@pytest.mark.parametrize("shape", SHAPES + [(4, 40, 13, 11)], ids=lambda s: "x".join(map(str, s)))
def test_result_does_not_depend_on_the_path(shape, isa):
    """exp(x * s + t) with s, t per (n, c) against the same with s and t full arrays (one
    contiguous run: other blocks, no splats), and over 2 threads with every part split."""
    n, c, h, w = shape
    x, (s, t) = _feeds(shape, [(n, c, 1, 1), (n, c, 1, 1)], 11)
    x = x * np.float32(0.3)
    ref = _run(_exp_form, [x, s, t])
    full = [np.ascontiguousarray(np.broadcast_to(v, shape)) for v in (s, t)]
    assert ref.tobytes() == _run(_exp_form, [x, *full]).tobytes()
    before = _native.split_min_work()
    _native.split_min_work(0)
    try:
        assert ref.tobytes() == _run(_exp_form, [x, s, t], threads=2).tobytes()
        assert ref.tobytes() == _run(_exp_form, [x, *full], threads=2).tobytes()
    finally:
        _native.split_min_work(before)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(ref, np.exp((x * s + t).astype(np.float64)), rtol=2e-6,
                                   atol=1e-30)
