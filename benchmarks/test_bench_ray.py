"""Batch inference on Ray Data: rows per second of one pass over a dataset (actor start
included) at 1 and 2 actors, each actor one session at one thread, against one local session
over the same rows. Run with ``python -m pytest benchmarks/test_bench_ray.py
--benchmark-group-by=group``; figures are in docs/benchmarks.md ("Ray Data")."""
from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

from onemodel.integrations.ray import predict  # noqa: E402

from bench_models import model  # noqa: E402

ROWS = 20_000
BATCH = 256
GROUP = f"ray data: cnn, {ROWS} rows, batches of {BATCH}"


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False, ignore_reinit_error=True)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def data():
    _fn, shape, traced = model("cnn")
    x = np.random.default_rng(0).standard_normal((ROWS, *shape)).astype(np.float32)
    return traced, x


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("actors", [1, 2])
def test_ray_rows_per_second(benchmark, cluster, data, actors):
    traced, x = data
    ds = ray.data.from_numpy(x).rename_columns({"data": "input"}).materialize()

    def one_pass():
        return predict(ds, traced, actors=actors, batch_size=BATCH).count()

    assert benchmark.pedantic(one_pass, rounds=3, warmup_rounds=1) == ROWS
    benchmark.extra_info["rows_per_second"] = ROWS / benchmark.stats.stats.median


@pytest.mark.benchmark(group=GROUP)
def test_local_session_rows_per_second(benchmark, data):
    traced, x = data
    with traced.create_session(threads=1) as s:
        def one_pass():
            for i in range(0, ROWS, BATCH):
                s.run({"input": x[i:i + BATCH]})
        benchmark.pedantic(one_pass, rounds=3, warmup_rounds=1)
    benchmark.extra_info["rows_per_second"] = ROWS / benchmark.stats.stats.median
