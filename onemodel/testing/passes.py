"""Helpers for testing a graph pass (the core's and a plugin's): run one registered pass with
its result verified, trace a small function with a symbolic batch axis, make a constant, and
compare two graphs' outputs on the reference interpreter."""
from __future__ import annotations

import numpy as np

import onemodel as om
from onemodel.core.interpreter import run_graph
from onemodel.passes import run_pass
from onemodel.registry import passes

ops = om.ops


def apply(name: str, graph):
    """Run the registered pass ``name`` once on ``graph``; both must verify."""
    graph.verify()
    return run_pass(passes()[name], graph, verify=True)


def traced(fn, *shape, axes=("batch",), batch=3):
    """The graph of ``fn`` traced on a random float32 input of ``(batch, *shape)``."""
    rng = np.random.default_rng(7)
    ex = om.Tensor.from_numpy(rng.standard_normal((batch, *shape)).astype(np.float32))
    names = list(axes) + [None] * (len(shape) + 1 - len(axes))
    return om.trace(fn, ex, *names).graph


def const(*shape, seed=0):
    """A deterministic float32 tensor of ``shape``."""
    rng = np.random.default_rng(seed)
    return om.Tensor.from_numpy(rng.standard_normal(shape).astype(np.float32))


def assert_same(g1, g2, *shape, batches=(2, 5), rtol=1e-5, atol=1e-5):
    """Both graphs compute the same outputs at two sizes of the batch axis."""
    rng = np.random.default_rng(3)
    for b in batches:
        feeds = {v.name: rng.standard_normal((b, *shape)).astype(v.dtype.numpy)
                 for v in g1.inputs}
        r1, r2 = run_graph(g1, feeds), run_graph(g2, feeds)
        for k in r1:
            np.testing.assert_allclose(r2[k], r1[k], rtol=rtol, atol=atol)


def counts(graph) -> dict:
    """Op name -> number of nodes."""
    return graph.op_counts()


__all__ = ["apply", "traced", "const", "assert_same", "counts", "ops"]
