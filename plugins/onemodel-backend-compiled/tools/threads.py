"""Interleaved timing of the compiled backend's intra-op threads: compiled at threads=1 and 2,
ONNX Runtime at 1 and 2 intra-op threads, on the benchmark models at batch 64 (the transformer
layers at 16). Run from the repository root, when the machine is otherwise idle::

    .venv/bin/python plugins/onemodel-backend-compiled/tools/threads.py [handoff] [model[-bN] ...]

The compiled sessions (threads 1 and 2) are timed against each other, then ONNX Runtime's (1 and
2 intra-op threads) against each other: blocks of BLOCK calls per engine, the first WARM
untimed, the order rotating every round, for ``SECS`` seconds (default 2) and at least 5
rounds; medians over rounds. Not interleaved with ORT: its 2-thread pool spins on the second
core after its runs and would take the core the compiled worker needs. BLAS held to one
thread. Printed per case: the medians, t2/t1 of each, compiled / ORT at 2 and at 1 thread, and
the parallel capacity (two threads' GEMM throughput over one's; 2.0 = both cores free) before
and after.

The threads=2 session chooses by timing whether its runs use the pool (onemodel.core.adaptive); ``MARGIN=inf``
makes it always use it (but for one probe run in 16), to measure the splits themselves.
``SPLIT_MIN_WORK=<flops>`` sets the least work of a part on another thread
(`_native.split_min_work`, csrc/om_split.h) to measure the rule itself.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

import threadpoolctl  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.tools.bench import ort_runner, parallel_capacity  # noqa: E402
from onemodel.core import adaptive  # noqa: E402
from onemodel_backend_compiled import _native  # noqa: E402

from bench_models import model as traced_model, models  # noqa: E402

BLOCK, WARM = 20, 5
CASES = [("mlp", 64), ("cnn", 64), ("branches8", 64), ("transformer_ops", 16),
         ("transformer", 16), ("deep100", 64)]


def blocks(calls: dict, secs: float) -> tuple[dict, int]:
    """Each engine runs BLOCK calls in a row, the order rotating every round, until ``secs``
    seconds and at least 5 rounds; the first WARM calls of a block are not timed (the other
    engine's weights leave the caches, and ONNX Runtime's 2-thread pool spins on the second
    core for a while after its runs). Returns each engine's median over rounds of the block
    medians, and the rounds."""
    order = list(calls)
    times: dict = {k: [] for k in calls}
    end, rounds = time.perf_counter() + secs, 0
    while time.perf_counter() < end or rounds < 5:
        for k in order[rounds % len(order):] + order[:rounds % len(order)]:
            ts = []
            for i in range(BLOCK):
                t0 = time.perf_counter()
                calls[k]()
                if i >= WARM:
                    ts.append(time.perf_counter() - t0)
            times[k].append(statistics.median(ts))
        rounds += 1
    return {k: statistics.median(v) for k, v in times.items()}, rounds


def measure(name: str, batch: int, secs: float) -> str:
    _, shape, traced = traced_model(name)
    feeds = {"input": models.feed(shape, batch)}
    capacity = parallel_capacity(0.05)  # 2.0: two free cores; near 1: the second one is taken
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        traced.save_onnx(path)
        c1 = om.Session(traced, backend="compiled", threads=1)
        c2 = om.Session(traced, backend="compiled", threads=2)
        same = c1.run(feeds)["output"].numpy().tobytes() == c2.run(feeds)["output"].numpy().tobytes()
        plan = c2._compiled.plan({"batch": batch})
        jobs, count = c2._compiled.pool.jobs, plan.chooser.count
        # compiled first, then ONNX Runtime, never interleaved: ORT's spinning threads would
        # take the core the compiled session's worker needs
        ours, r1 = blocks({"c1": lambda: c1.run(feeds), "c2": lambda: c2.run(feeds)}, secs)
        splits = (c2._compiled.pool.jobs - jobs) / max(1, plan.chooser.count - count)
        theirs, r2 = blocks({"ort1": ort_runner(path, 1, feeds), "ort2": ort_runner(path, 2, feeds)},
                            secs)
    med = {**ours, **theirs}
    us = {k: v * 1e6 for k, v in med.items()}
    chosen = "pool" if plan.use_pool else "alone"
    return (f"{name}-b{batch:<3} compiled t1 {us['c1']:8.1f} us  t2 {us['c2']:8.1f} us"
            f"  (t2/t1 {med['c2'] / med['c1']:.2f}, {splits:.1f} splits/run, {chosen} chosen)"
            f"  ort t1 {us['ort1']:8.1f}  t2 {us['ort2']:8.1f} us (t2/t1 {med['ort2'] / med['ort1']:.2f})"
            f"  | c2/ort2 {med['c2'] / med['ort2']:.2f}  c1/ort1 {med['c1'] / med['ort1']:.2f}"
            f"  same bits {same}  rounds {r1}/{r2}  capacity {capacity:.2f}"
            f"-{parallel_capacity(0.05):.2f}")


def handoff(secs: float) -> str:
    """What a split costs: the 100-layer stack of 64x64 linear layers at batch 64 (100 GEMMs
    of about 5 us each, back to back in one run) at threads=2, every GEMM split in two
    (split_min_work 0) against none split, in alternating blocks. The difference per GEMM is the
    hand-off (publish, the spinning worker's claim, the join) less what the second thread
    saved."""
    fn, shape = models.deep()
    with threadpoolctl.threadpool_limits(1):
        traced = models.trace(fn, shape)
    s = om.Session(traced, backend="compiled", threads=2)
    feeds = {"input": models.feed(shape, 64)}
    before, margin = _native.split_min_work(), adaptive.MARGIN
    adaptive.MARGIN = float("inf")  # the pool on every run (but one probe in 16)

    def run(work):
        def call():
            _native.split_min_work(work)
            s.run(feeds)
        return call

    calls = {"whole": run(1e30), "split": run(0.0)}
    for call in calls.values():
        for _ in range(20):
            call()
    jobs = s._compiled.pool.jobs
    calls["split"]()
    calls["split"]()
    splits = (s._compiled.pool.jobs - jobs) // 2 or 1  # (one of the two may be a probe)
    med, rounds = blocks(calls, secs)
    _native.split_min_work(before)
    adaptive.MARGIN = margin
    return (f"hand-off: deep100-b64 {med['whole'] * 1e6:.1f} us unsplit, {med['split'] * 1e6:.1f} us "
            f"with {splits} splits: {(med['split'] - med['whole']) / splits * 1e6:+.2f} us a split"
            f" (capacity {parallel_capacity(0.05):.2f})")


def main(argv) -> None:
    secs = float(os.environ.get("SECS", "2"))
    if "MARGIN" in os.environ:
        adaptive.MARGIN = float(os.environ["MARGIN"])
    if "SPLIT_MIN_WORK" in os.environ:
        _native.split_min_work(float(os.environ["SPLIT_MIN_WORK"]))
    print(f"load {os.getloadavg()[0]:.2f}, split_min_work {_native.split_min_work():.3g}",
          flush=True)
    with threadpoolctl.threadpool_limits(1):
        if "handoff" in argv:
            print(handoff(secs), flush=True)
            argv = [a for a in argv if a != "handoff"]
            if not argv:
                return
        for name, batch in CASES:
            if argv and not any(a in (name, f"{name}-b{batch}") for a in argv):
                continue
            print(measure(name, batch, secs), flush=True)
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
