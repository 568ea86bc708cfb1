"""Sessions vs eager: `make bench` (pytest-benchmark), single-threaded BLAS via threadpoolctl.

Each model is benchmarked eagerly (no grad) and in a Session at each optimization level; the
group is "<model> b<batch>". `python -m onemodel.tools.write_benchmarks` turns the saved JSON
into the "Sessions" section of docs/benchmarks.md.
"""
from __future__ import annotations

import pytest

import onemodel as om
from bench_models import CASES, model, models

threadpoolctl = pytest.importorskip("threadpoolctl")


@pytest.fixture(scope="module", autouse=True)
def single_thread():
    with threadpoolctl.threadpool_limits(1):
        yield


_model = model


@pytest.mark.parametrize("name,batch", CASES, ids=[f"{m}-b{b}" for m, b in CASES])
@pytest.mark.parametrize("mode", ["eager", "none", "basic", "all"])
def test_session(benchmark, name, batch, mode):
    fn, shape, traced = _model(name)
    x = models.feed(shape, batch)
    benchmark.group = f"{name} b{batch}"
    benchmark.extra_info.update(model=name, batch=batch, mode=mode)
    if mode == "eager":
        t = om.Tensor.from_numpy(x)

        def eager():
            with om.GradMode.no_grad():
                return fn(t)

        benchmark(eager)
        return
    session = om.Session(traced, optimization=mode)
    feeds = {"input": x}
    session.run(feeds)
    benchmark.extra_info["nodes"] = len(session.optimized_graph.nodes)
    result = benchmark(session.run, feeds)
    assert result["output"].shape[0] == batch


def test_plan_overhead_per_node(benchmark):
    """The plan's own cost per node: the 100-layer model at batch 1 with every kernel replaced by
    a no-op, divided by the number of nodes."""
    fn, shape, traced = _model("deep100")
    session = om.Session(traced, optimization="none")
    feeds = {"input": models.feed(shape, 1)}
    plan = session._compiled.plan({"batch": 1})
    benchmark.group = "plan overhead"
    benchmark.extra_info.update(model="deep100", batch=1, mode="overhead", nodes=plan.n_nodes)
    run = _null_runner(plan)
    benchmark(run, feeds)


def _null_runner(plan):
    """The same generated function with every kernel replaced by a function doing nothing."""
    ns: dict = {}
    exec(compile(plan.source, "<null plan>", "exec"), ns)
    closure = {k: (_noop if k.startswith("k") else v) for k, v in plan.closure.items()}
    return ns["_factory"](**closure)(plan._alloc)


def _noop(*args, out=None):
    return out
