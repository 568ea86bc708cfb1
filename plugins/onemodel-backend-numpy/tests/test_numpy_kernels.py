"""Every kernel this plugin registers agrees with the op's own kernel on the op's samples, in
float32 and float64, including when the plan writes it over a dying input (in place)."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import testing
from onemodel.core.interpreter import run_graph
from onemodel_backend_numpy import plugin


def _cases():
    ops = om.registry.ops()
    for k in plugin.onemodel_kernels():
        op = ops.get(k.op)
        if op is None:
            continue
        for i, s in enumerate(op.samples(np.random.default_rng(0))):
            for dt in (np.float32, np.float64):
                yield pytest.param(op, s, dt, id=f"{k.op}-{s.name or i}-{np.dtype(dt).name}")


@pytest.mark.parametrize("op,sample,dtype", list(_cases()))
def test_kernel_matches_the_op(op, sample, dtype):
    # every input a feed, so the plan owns (and may reuse) its buffer; then all but the first
    # constant (the kernels that pre-pack weights)
    for const_weights in (False, True):
        built = testing.sample_graph(op, sample, dtype,
                                     constant=lambda j, c=const_weights: c and j > 0)
        if built is None:
            pytest.skip("not a graph op with these params")
        graph, feeds = built
        want = run_graph(graph, feeds)
        got = om.Session(graph, optimization="none").run(feeds)
        tol = 2e-5 if dtype == np.float32 else 1e-10
        for k, w in want.items():
            assert got[k].dtype.numpy == w.dtype and got[k].shape == w.shape
            np.testing.assert_allclose(got[k].numpy(), w, rtol=tol, atol=tol)
