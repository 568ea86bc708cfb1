"""Tracing cost: a 100-layer Linear(64, 64)+ReLU stack with a symbolic batch, with and without
the trace check (which re-runs the model eagerly at two other batch sizes and compares node by
node). Results are quoted in docs/benchmarks.md ("Tracing")."""
from __future__ import annotations

import pytest

import onemodel as om
from onemodel import DType, Tensor


@pytest.fixture(scope="module")
def stack():
    om.manual_seed(0)
    layers = []
    for _ in range(100):
        layers += [om.nn.Linear(64, 64), om.nn.ReLU()]
    return om.nn.Sequential(*layers)


@pytest.mark.parametrize("check", [False, True], ids=["no-check", "check"])
def test_trace_100_layers(benchmark, stack, check):
    benchmark.group = "trace 100 x (Linear 64 + ReLU)"
    example = Tensor.randn(DType.F32, 5, 64)
    traced = benchmark(lambda: stack.trace(example, "batch", None, check=check))
    assert len(traced.graph.nodes) == 200


def test_eager_forward_100_layers(benchmark, stack):
    """The eager forward at the example size, for scale."""
    benchmark.group = "trace 100 x (Linear 64 + ReLU)"
    example = Tensor.randn(DType.F32, 5, 64)
    stack.eval()
    with om.GradMode.no_grad():
        benchmark(lambda: stack(example))
