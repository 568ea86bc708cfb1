"""Measure the threaded backend's thresholds on this machine (docs/guide/backends.md records a
run; the constants live in plugins/onemodel-backend-threaded/onemodel_backend_threaded/costs.py).

    python tools/measure_threaded_threshold.py [--threads 2] [--rounds 40]

1. Capacity: two threads each running float32 GEMMs, against one thread doing both. On a
   machine whose second core is busy with other work this is near 1.0 and nothing below means
   anything; the script says so and waits (up to --wait seconds) for a quieter moment.
2. Rates: FLOP/s of a single-threaded 64x256x256 GEMM, and seconds per element of np.add on 1M
   float32 elements; their ratio is costs.ELEM.
3. Inter-op hand-off: a graph of two independent branches (Linear(w, w) + ReLU + Linear(w, w)
   at batch 64, summed), run with the branches on two threads (schedule="parallel",
   handoff_flops=0, no regions) and one after the other (schedule="sequential"), interleaved,
   medians. The *break-even* branch cost is where the parallel run stops being slower; a
   task is handed off when its cost is at least that (costs.HANDOFF_FLOPS).
4. Batch regions: a chain of m elementwise steps (not fused: optimization="none") on a
   (rows, 256) float32 input, split into
   one piece per thread (split_flops=0) against sequential. With one step at several sizes the
   fixed cost of one region (the hand-off and the wait) is ``parallel - sequential / threads``
   (costs.SPLIT_FLOPS); with m = 16 small steps the rest, per step, is what each extra piece
   adds to every step (costs.STEP_FLOPS).
All costs are reported in FLOP-equivalents (seconds x the GEMM rate of step 2).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np


def rates() -> tuple[float, float]:
    x = np.random.default_rng(0).random((64, 256), dtype=np.float32)
    w = np.random.default_rng(1).random((256, 256), dtype=np.float32)
    o = np.empty((64, 256), np.float32)
    gemm = _best(lambda: np.dot(x, w, out=o), 300) / (2 * 64 * 256 * 256)
    a = np.random.default_rng(2).random(1 << 20, dtype=np.float32)
    b = np.empty_like(a)
    elem = _best(lambda: np.add(a, a, out=b), 50) / a.size
    return 1.0 / gemm, elem


def _best(fn, n: int) -> float:
    for _ in range(3):
        fn()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def compare(traced, feeds, rounds: int, optimization="all", **par_options
            ) -> tuple[float, float]:
    """Median seconds of the sequential and the parallel session, runs interleaved."""
    import onemodel as om

    seq = om.Session(traced, backend="threaded", schedule="sequential",
                     optimization=optimization)
    par = om.Session(traced, backend="threaded", schedule="parallel",
                     optimization=optimization, **par_options)
    for _ in range(5):
        seq.run(feeds)
        par.run(feeds)
    ts, tp = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        seq.run(feeds)
        t1 = time.perf_counter()
        par.run(feeds)
        t2 = time.perf_counter()
        ts.append(t1 - t0)
        tp.append(t2 - t1)
    return statistics.median(ts), statistics.median(tp)


def two_branches(width: int):
    import onemodel as om
    from onemodel import Tensor

    rng = np.random.default_rng(0)

    def p(*shape):
        return Tensor.from_numpy((rng.uniform(-1, 1, shape) / np.sqrt(shape[-1]))
                                 .astype(np.float32))

    ws = [(p(width, width), p(width), p(width, width), p(width)) for _ in range(2)]

    def fn(x):
        ys = [om.ops.linear(om.ops.relu(om.ops.linear(x, a, b)), c, d) for a, b, c, d in ws]
        return ys[0] + ys[1]

    ex = Tensor.from_numpy(rng.standard_normal((3, width)).astype(np.float32))
    return om.trace(fn, ex, "batch", None)


def chain(steps: int):
    import onemodel as om
    from onemodel import Tensor

    def fn(x):
        for i in range(steps):
            x = om.ops.tanh(x) if i % 2 else om.ops.exp(om.ops.neg(x))
        return x

    ex = Tensor.from_numpy(np.random.default_rng(0).standard_normal((3, 256))
                           .astype(np.float32))
    return om.trace(fn, ex, "batch", None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--wait", type=float, default=120.0,
                    help="seconds to wait for the other cores to be free (default 120)")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    from onemodel.tools.bench import parallel_capacity as capacity

    threadpool_limits(1)
    deadline = time.time() + args.wait
    while True:
        cap = capacity()
        print(f"capacity: two threads run GEMMs {cap:.2f}x as fast as one")
        if cap >= 1.6 or time.time() > deadline:
            break
        print("  the other core looks busy; waiting for a quieter moment ...")
        time.sleep(5)
    if cap < 1.6:
        print("WARNING: parallel capacity below 1.6x: the numbers below are not meaningful")
    flops_per_s, s_per_elem = rates()
    elem = s_per_elem * flops_per_s
    print(f"GEMM 64x256x256 float32: {flops_per_s / 1e9:.1f} GFLOP/s; np.add: "
          f"{s_per_elem * 1e9:.3f} ns/element -> ELEM = {elem:.1f} FLOP-equivalents")

    def fe(seconds):  # seconds -> FLOP-equivalents
        return seconds * flops_per_s

    print("\ninter-op: two branches Linear(w,w)+ReLU+Linear(w,w) at batch 64, on 2 threads vs 1")
    print("| width | cost per branch (MFLOP) | sequential | parallel | parallel / sequential |")
    print("| --- | --- | --- | --- | --- |")
    breakeven = None
    rows = []
    for width in (32, 64, 96, 128, 192, 256, 384, 512):
        traced = two_branches(width)
        x = np.random.default_rng(1).standard_normal((64, width)).astype(np.float32)
        seq, par = compare(traced, {"input": x}, args.rounds, handoff_flops=0,
                           split_flops=float("inf"))
        cost = 2 * 2 * 64 * width * width
        rows.append((cost, par / seq))
        print(f"| {width} | {cost / 1e6:.2f} | {seq * 1e6:.1f} µs | {par * 1e6:.1f} µs | "
              f"{par / seq:.2f} |")
    for cost, _ratio in rows:  # the smallest cost from which parallel is never slower
        if all(r <= 1.0 for c, r in rows if c >= cost):
            breakeven = cost
            break
    print(f"break-even task cost: {breakeven / 1e6 if breakeven else float('nan'):.2f} MFLOP")

    print(f"\nbatch regions: chains of elementwise steps on (rows, 256) float32, "
          f"{args.threads} pieces vs sequential")
    print("| steps | rows | sequential | region | region / sequential | fixed cost of the "
          "region |")
    print("| --- | --- | --- | --- | --- | --- |")
    fixed = []
    for steps, rows_ in ((1, 256), (1, 1024), (1, 4096), (16, 64), (16, 256)):
        traced = chain(steps)
        x = np.random.default_rng(1).standard_normal((rows_, 256)).astype(np.float32)
        seq, par = compare(traced, {"input": x}, args.rounds, optimization="none",
                           split_flops=0, handoff_flops=float("inf"))
        over = par - seq / args.threads
        if steps == 1 and rows_ >= 1024:
            fixed.append(over)
        else:
            fixed_s = statistics.median(fixed) if fixed else 0.0
            per_step = (over - fixed_s) / steps
        print(f"| {steps} | {rows_} | {seq * 1e6:.1f} µs | {par * 1e6:.1f} µs | {par / seq:.2f} "
              f"| {over * 1e6:.1f} µs |")
    fixed_s = statistics.median(fixed)
    print(f"region hand-off: {fixed_s * 1e6:.1f} µs = {fe(fixed_s) / 1e6:.2f} MFLOP-eq; "
          f"per step and extra piece: {per_step * 1e6:.1f} µs = {fe(per_step) / 1e6:.2f} MFLOP-eq")
    print("\nsuggested costs.py: "
          f"ELEM = {elem:.0f}, HANDOFF_FLOPS = {breakeven or float('nan'):.3g}, "
          f"SPLIT_FLOPS = {fe(fixed_s):.3g}, STEP_FLOPS = {max(fe(per_step), 0):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
