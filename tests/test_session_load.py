"""Sessions under load, on every installed backend: 8 threads x 200 runs at mixed batch sizes
(every output checked), no memory growth over 10,000 runs, plan-cache churn, and `run` racing
`close` (docs/reliability.md has the figures)."""
from __future__ import annotations

import gc
import os
import threading
import time

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.core.interpreter import run_graph

BACKENDS = om.backends()
BATCHES = (0, 1, 2, 3, 5, 8, 13, 32)
THREADS, RUNS = 8, 200


@pytest.fixture(scope="module")
def traced():
    """A tiny two-layer MLP with a softmax (fast, so the loops measure the session)."""
    rng = np.random.default_rng(0)
    w1 = Tensor.from_numpy(rng.standard_normal((16, 4)).astype(np.float32))
    b1 = Tensor.from_numpy(rng.standard_normal(16).astype(np.float32))
    w2 = Tensor.from_numpy(rng.standard_normal((3, 16)).astype(np.float32))

    def fn(x):
        return om.ops.softmax(om.ops.linear(om.ops.relu(om.ops.linear(x, w1, b1)), w2), -1)

    return om.trace(fn, Tensor.zeros(DType.F32, 2, 4), "batch", None)


def _inputs(n_sets: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((BATCHES[i % len(BATCHES)], 4)).astype(np.float32)
            for i in range(n_sets)]


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("backend", BACKENDS)
def test_eight_threads_two_hundred_runs_mixed_batches(traced, backend):
    session = om.Session(traced, backend=backend)
    inputs = _inputs(24)
    expected = [run_graph(traced.graph, {"input": x})["output"] for x in inputs]
    errors, barrier = [], threading.Barrier(THREADS)
    checked = [0] * THREADS

    def work(t):
        try:
            barrier.wait()
            for i in range(RUNS):
                k = (t * 7 + i) % len(inputs)
                got = session.run({"input": inputs[k]})["output"].numpy()
                np.testing.assert_allclose(got, expected[k], rtol=1e-5, atol=1e-6)
                checked[t] += 1
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert errors == [] and sum(checked) == THREADS * RUNS


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_memory_growth_over_ten_thousand_runs(traced, backend):
    session = om.Session(traced, backend=backend)
    inputs = _inputs(4, seed=2)  # batch sizes 0, 1, 2, 3: four plans
    for i in range(500):  # warm-up: plans, runner pools, numpy's caches
        session.run({"input": inputs[i % 4]})
    gc.collect()
    before = _rss_bytes()
    for i in range(10_000):
        session.run({"input": inputs[i % 4]})
    gc.collect()
    growth = _rss_bytes() - before
    assert growth < 20 * 2 ** 20, f"RSS grew {growth / 2 ** 20:.1f} MiB over 10,000 runs"


@pytest.mark.parametrize("backend", BACKENDS)
def test_plan_cache_churn_does_not_leak(traced, backend):
    """More batch sizes than the plan cache holds (32): plans are evicted and rebuilt."""
    session = om.Session(traced, backend=backend)
    xs = [np.ones((n, 4), np.float32) for n in range(1, 41)]
    for x in xs:
        session.run({"input": x})
    gc.collect()
    before = _rss_bytes()
    for _ in range(10):
        for x in xs:
            out = session.run({"input": x})["output"]
            assert out.shape == (x.shape[0], 3)
    gc.collect()
    assert len(session._compiled._plans) <= 32
    assert _rss_bytes() - before < 20 * 2 ** 20


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_after_close_is_a_clear_session_error(traced, backend):
    x = np.ones((2, 4), np.float32)
    session = om.Session(traced, backend=backend)
    session.run({"input": x})
    session.close()
    session.close()  # twice is fine
    with pytest.raises(om.SessionError, match="closed.*new Session"):
        session.run({"input": x})
    with pytest.raises(om.SessionError, match="closed"):
        session.plan_source({"input": x})


@pytest.mark.parametrize("backend", BACKENDS)
def test_close_while_threads_run(traced, backend):
    """Threads running when another closes the session finish their run or get SessionError."""
    session = om.Session(traced, backend=backend)
    x = np.ones((3, 4), np.float32)
    want = run_graph(traced.graph, {"input": x})["output"]
    started, other = threading.Barrier(5), []
    outcomes = {"ok": 0, "closed": 0}
    lock = threading.Lock()

    def work():
        started.wait()
        deadline = time.monotonic() + 60  # runs until the session closes (a safety cap)
        while time.monotonic() < deadline:
            try:
                got = session.run({"input": x})["output"].numpy()
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
                key = "ok"
            except om.SessionError:
                key = "closed"
            except Exception as exc:  # noqa: BLE001
                other.append(exc)
                return
            with lock:
                outcomes[key] += 1
            if key == "closed":
                return

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    started.wait()
    while outcomes["ok"] < 20 and any(th.is_alive() for th in threads):
        threading.Event().wait(0.001)
    session.close()
    for th in threads:
        th.join(timeout=60)
    assert other == [] and outcomes["closed"] == 4 and outcomes["ok"] >= 20
