"""Interleaved timing of the compiled backend's intra-op threads: compiled at threads=1 and 2,
ONNX Runtime at 1 and 2 intra-op threads, on the benchmark models at batch 64 (the transformer
layers at 16). Run from the repository root, when the machine is otherwise idle::

    .venv/bin/python plugins/onemodel-backend-compiled/tools/threads.py [handoff] [model[-bN] ...]

Same loop as interleaved.py (tools/round_robin.py: 5 calls per engine in turn, rotating which
goes first, until ``SECS`` seconds, default 2, and at least 5 rounds; medians over rounds), BLAS
held to one thread. Printed per case: each engine's median, compiled 2 threads / 1 thread,
and each engine / ORT at 2 threads (the per-round medians of the ratios).

The threads=2 session chooses by timing whether its runs use the pool (plan.py); ``MARGIN=inf``
makes it always use it (but for one probe run in 16), to measure the splits themselves.
``SPLIT_MIN_WORK=<flops>`` sets the least work of a part on another thread
(`_native.split_min_work`, csrc/om_split.h) to measure the rule itself.
"""
from __future__ import annotations

import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

import numpy as np  # noqa: E402
import threadpoolctl  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.tools.bench import ort_runner, parallel_capacity  # noqa: E402
from onemodel_backend_compiled import _native, plan as native_plan  # noqa: E402

from bench_models import model as traced_model, models  # noqa: E402
from round_robin import interleave  # noqa: E402  (this folder is on sys.path)

CASES = [("mlp", 64), ("cnn", 64), ("branches8", 64), ("transformer_ops", 16),
         ("transformer", 16), ("deep100", 64)]


def measure(name: str, batch: int, secs: float) -> str:
    _, shape, traced = traced_model(name)
    feeds = {"input": models.feed(shape, batch)}
    capacity = parallel_capacity(0.05)  # 2.0: two free cores; near 1: the second one is taken
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        traced.save_onnx(path)
        c1 = om.Session(traced, backend="compiled", threads=1)
        c2 = om.Session(traced, backend="compiled", threads=2)
        calls = {"c1": lambda: c1.run(feeds), "c2": lambda: c2.run(feeds),
                 "ort1": ort_runner(path, 1, feeds), "ort": ort_runner(path, 2, feeds)}
        for call in calls.values():
            for _ in range(10):
                call()
        same = c1.run(feeds)["output"].numpy().tobytes() == c2.run(feeds)["output"].numpy().tobytes()
        plan = c2._compiled.plan({"batch": batch})
        jobs, count = c2._compiled.pool.jobs, plan._count
        med, ratio, rounds = interleave(calls, secs)
        splits = (c2._compiled.pool.jobs - jobs) / max(1, plan._count - count)
    us = {k: v * 1e6 for k, v in med.items()}
    chosen = "pool" if plan.use_pool else "alone"
    return (f"{name}-b{batch:<3} compiled t1 {us['c1']:8.1f} us  t2 {us['c2']:8.1f} us"
            f"  (t2/t1 {med['c2'] / med['c1']:.2f}, {splits:.1f} splits/run, {chosen} chosen)"
            f"  ort t1 {us['ort1']:8.1f}  t2 {us['ort']:8.1f} us"
            f"  | /ort2: c1 {ratio['c1']:.2f} c2 {ratio['c2']:.2f} ort1 {ratio['ort1']:.2f}"
            f"  same bits {same}  rounds {rounds}  capacity {capacity:.2f}")


def handoff(secs: float) -> str:
    """What a split costs: the 100-layer stack of 64x64 linear layers at batch 64 (100 GEMMs
    of about 5 us each, back to back in one run) at threads=2, every GEMM split in two
    (split_min_work 0) against none split, interleaved. The difference per GEMM is the
    hand-off (publish, the spinning worker's claim, the join) less what the second thread
    saved."""
    fn, shape = models.deep()
    with threadpoolctl.threadpool_limits(1):
        traced = models.trace(fn, shape)
    s = om.Session(traced, backend="compiled", threads=2)
    feeds = {"input": models.feed(shape, 64)}
    before = _native.split_min_work()

    def run(work):
        def call():
            _native.split_min_work(work)
            s.run(feeds)
        return call

    calls = {"ort": run(1e30), "split": run(0.0)}  # "ort": the reference key of interleave
    for call in calls.values():
        for _ in range(20):
            call()
    jobs = s._compiled.pool.jobs
    calls["split"]()
    splits = s._compiled.pool.jobs - jobs
    med, ratio, rounds = interleave(calls, secs)
    _native.split_min_work(before)
    return (f"hand-off: deep100-b64 {med['ort'] * 1e6:.1f} us unsplit, {med['split'] * 1e6:.1f} us "
            f"with {splits} splits: {(med['split'] - med['ort']) / splits * 1e6:+.2f} us a split"
            f" (capacity {parallel_capacity(0.05):.2f})")


def main(argv) -> None:
    secs = float(os.environ.get("SECS", "2"))
    if "MARGIN" in os.environ:
        native_plan.MARGIN = float(os.environ["MARGIN"])
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
