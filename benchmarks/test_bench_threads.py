"""Sessions with their own threads (issue 15), interleaved: `make bench` (pytest-benchmark).

For each benchmark model and batch, three ways of running are timed in rounds, the order
rotating every round, so that a change in the machine's load hits all of them alike. In a round
each way runs `BLOCK` times in a row and the runs after the first are timed: the two sessions
hold their own copies of the weights, and a run right after the other session's pays for
bringing them back into the cache (up to 2.5x on the 8-branch model on the shared machine),
which is the interleaving's doing, not the session's:

* ``numpy``: a numpy-backend session with default settings (``threads=1``: the session limits
  BLAS to one thread inside every run and gives the process its setting back after it), the
  process's BLAS left at its default (every core);
* ``numpy_blas1``: the same session with BLAS forced to one thread for the whole process
  (threadpoolctl), so the session has nothing to limit — the cost of bounding BLAS per run is
  the difference;
* ``threaded``: a threaded-backend session with default settings (``threads`` = every core).

Medians per way; the ratios are ``numpy / numpy_blas1`` (target: within 10 %) and
``numpy / threaded`` (target: at least 1.5x on the 8-branch model at batch 64, never below
0.95x). `onemodel.tools.write_benchmarks` writes them to the "Threads" section of
docs/benchmarks.md, with the parallel capacity of the machine during the run.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

import onemodel as om
from onemodel.core.threads import cores
from onemodel.tools.bench import blas_threads, parallel_capacity

from bench_models import CASES, model as _model, models

threadpoolctl = pytest.importorskip("threadpoolctl")

MODES = ("numpy", "numpy_blas1", "threaded")
#: runs of one way in a row per round; the first is not timed
BLOCK = 4
#: seconds of timed rounds per case (each round runs every mode once)
BUDGET = float(os.environ.get("ONEMODEL_BENCH_THREADS_SECONDS", "3"))


def _rounds(per_round: float) -> int:
    return int(min(200, max(15, BUDGET / max(per_round, 1e-6))))


@pytest.mark.parametrize("name,batch", CASES, ids=[f"{m}-b{b}" for m, b in CASES])
def test_threads(benchmark, name, batch):
    # one controller for the whole case: threadpool_limits() would scan the loaded libraries
    # on every call, evicting caches just before whichever run comes next
    controller = threadpoolctl.ThreadpoolController()
    # Eager code (tracing, the capacity probe) runs with BLAS at one thread: a multi-threaded
    # BLAS call leaves an OpenBLAS worker spinning on a core for seconds, which would slow
    # whatever is timed next.
    with controller.limit(limits=1, user_api="blas"):
        fn, shape, traced = _model(name)
        capacity_start = parallel_capacity(0.05)
    feeds = {"input": models.feed(shape, batch)}
    numpy_s = om.Session(traced, backend="numpy")
    threaded_s = om.Session(traced, backend="threaded")
    blas_default = blas_threads()

    def run_numpy():
        return numpy_s.run(feeds)

    def run_threaded():
        return threaded_s.run(feeds)

    calls = {"numpy": run_numpy, "numpy_blas1": run_numpy, "threaded": run_threaded}
    for _ in range(30):  # warm-up: plans compiled, the threaded backend's first timings made
        run_numpy()
        run_threaded()
    t0 = time.perf_counter()
    for mode in MODES:
        calls[mode]()
    rounds = _rounds(BLOCK * (time.perf_counter() - t0))
    samples: dict[str, list[float]] = {m: [] for m in MODES}

    def interleaved():
        for r in range(rounds):
            k = r % len(MODES)
            for mode in MODES[k:] + MODES[:k]:
                call = calls[mode]
                forced = (controller.limit(limits=1, user_api="blas")
                          if mode == "numpy_blas1" else None)
                call()
                for _ in range(BLOCK - 1):
                    t = time.perf_counter()
                    call()
                    samples[mode].append(time.perf_counter() - t)
                if forced is not None:
                    forced.restore_original_limits()

    benchmark.group = f"threads {name} b{batch}"
    benchmark.pedantic(interleaved, rounds=1, iterations=1)
    with controller.limit(limits=1, user_api="blas"):
        capacity_end = parallel_capacity(0.05)
    med = {m: float(np.median(samples[m])) for m in MODES}
    plan = threaded_s._compiled.plan({"batch": batch})
    benchmark.extra_info.update(
        suite="threads", model=name, batch=batch, rounds=rounds, cores=cores(),
        blas_default=blas_default, numpy_threads=numpy_s.threads,
        threaded_threads=threaded_s.threads,
        medians=med, blas_cost=med["numpy"] / med["numpy_blas1"],
        speedup=med["numpy"] / med["threaded"],
        capacity=[round(capacity_start, 2), round(capacity_end, 2)],
        plan=getattr(plan, "schedule_summary", "sequential"),
        chosen=getattr(plan, "chosen", None))
    assert blas_threads() == blas_default  # every run gave BLAS back
