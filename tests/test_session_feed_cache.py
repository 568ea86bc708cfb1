"""The session remembers the sizes a feed signature (dtypes and shapes) bound, so a repeated
signature skips rebuilding them; every other feed is still checked in full."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor

from .session_models import feed, mlp, trace
from .test_session import two_input_graph


@pytest.fixture(scope="module")
def traced():
    fn, shape = mlp((4, 8, 3))
    return trace(fn, shape)


def test_bad_feeds_after_a_good_one_are_still_refused(traced):
    s = om.Session(traced)
    s.run({"input": feed((4,), 2)})
    s.run({"input": Tensor.from_numpy(feed((4,), 2))})  # same signature, as a Tensor
    bad = [
        ({"input": feed((4,), 2).astype(np.float64)}, "expected dtype f32"),
        ({"input": feed((5,), 2)}, "axis 1: expected size 4"),
        ({"input": feed((4,), 2), "extra": feed((4,), 2)}, "unknown input 'extra'"),
        ({"input": feed((4,), 2).tolist()}, "must be a Tensor or a numpy array"),
        ({}, "missing input 'input'"),
    ]
    for _ in range(2):  # the second time, after the good signature is cached twice over
        for feeds, match in bad:
            with pytest.raises(om.SessionError, match=match):
                s.run(feeds)
        s.run({"input": feed((4,), 2)})


def test_each_signature_binds_its_own_sizes(traced):
    s = om.Session(traced)
    ref = om.Session(traced, optimization="none")
    for batch in (1, 3, 1, 7, 3):
        x = feed((4,), batch)
        got = s.run({"input": x})["output"].numpy()
        assert got.shape == (batch, 3)
        np.testing.assert_allclose(got, ref.run({"input": x})["output"].numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_a_clash_between_inputs_is_found_after_a_good_run():
    s = om.Session(two_input_graph())
    s.run({"a": feed((5,), 3), "b": feed((2,), 3)})
    with pytest.raises(om.SessionError, match="symbolic size 'batch' is 4 here but 3"):
        s.run({"a": feed((5,), 3), "b": feed((2,), 4)})


def test_cache_stays_bounded(traced):
    from onemodel.runtime.session import _FEED_CACHE

    s = om.Session(traced)
    for batch in range(1, _FEED_CACHE + 10):
        s.run({"input": feed((4,), batch)})
    assert 0 < len(s._feed_envs) <= _FEED_CACHE
