"""Where a Session's time goes: per-node times of the numpy backend's plan for a benchmark model,
and the share of the run spent outside the kernels (the plan itself, the Session's checks).

    python tools/profile_plan.py MODEL BATCH [--runs 200]

MODEL is a name from benchmarks/bench_models.py (mlp, cnn, transformer, transformer_ops,
deep100, branches8). BLAS is limited to one thread. Each kernel of the plan is wrapped in a
timer and the generated function is run ``--runs`` times; the table gives each node's median,
its share of the summed kernel medians, and the run's median without the timers. The summary of
docs/benchmarks.md ("Profiles of the missed targets") comes from this.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("batch", type=int)
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args(argv)

    import threadpoolctl

    import onemodel as om
    from bench_models import model, models

    threadpoolctl.threadpool_limits(1)
    fn, shape, traced = model(args.model)
    feeds = {"input": models.feed(shape, args.batch)}
    session = om.Session(traced)
    session.run(feeds)
    plan = session._compiled.plan({"batch": args.batch})

    times: dict[str, list[float]] = {}
    labels: dict[str, str] = {}
    by_kernel = {}
    for st in plan.steps:  # the closure name of each step's kernel, in order
        by_kernel.setdefault(id(st.kernel.fn), st)

    def timed(name, k):
        def call(*a, **kw):
            t0 = time.perf_counter()
            r = k(*a, **kw)
            times[name].append(time.perf_counter() - t0)
            return r
        return call

    closure = {}
    for name, value in plan.closure.items():
        st = by_kernel.get(id(value))
        if name.startswith("k") and st is not None:
            times[name] = []
            out = plan.types[st.node.outputs[0]]
            labels[name] = f"{st.node.op} -> {out.dtype}{list(out.shape)}"
            closure[name] = timed(name, value)
        else:
            closure[name] = value
    ns: dict = {}
    exec(compile(plan.source, "<profiled plan>", "exec"), ns)  # noqa: S102
    runner = ns["_factory"](**closure)(plan._alloc)
    for _ in range(max(5, args.runs // 10)):
        runner(feeds)
    for ts in times.values():
        ts.clear()
    for _ in range(args.runs):
        runner(feeds)
    whole = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        session.run(feeds)
        whole.append(time.perf_counter() - t0)
    med = {n: statistics.median(ts) for n, ts in times.items() if ts}
    total = sum(med.values())
    run = statistics.median(whole)
    print(f"{args.model} at batch {args.batch}: Session.run median {run * 1e6:.1f} µs; "
          f"kernels {total * 1e6:.1f} µs ({total / run:.0%}); the rest (plan, checks, "
          f"outputs) {max(run - total, 0) * 1e6:.1f} µs")
    print("| node | median | share of kernels |")
    print("| --- | --- | --- |")
    for n, t in sorted(med.items(), key=lambda kv: -kv[1])[:12]:
        print(f"| {labels[n]} | {t * 1e6:.1f} µs | {t / total:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
