"""Interleaved timing of the compiled backend, the numpy backend and ONNX Runtime (one intra-op
thread), the method behind docs/benchmarks.md's compiled-backend table.

Run from the repository root::

    .venv/bin/python plugins/onemodel-backend-compiled/tools/interleaved.py [model[-bN] ...]

Per model and batch (those of benchmarks/bench_models.py), each engine runs 5 calls in turn,
rotating which goes first, until ``SECS`` seconds (default 1.5) have passed and at least 5
rounds ran; a round's time per engine is the median of its 5 calls. Printed: each engine's median
over rounds and the median of the per-round ratios to ONNX Runtime (below 1 = faster), with BLAS
held to one thread by threadpoolctl. A shared machine moves these ratios: repeat and quote ranges.
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
from onemodel.tools.bench import ort_runner  # noqa: E402

from bench_models import CASES, model as traced_model, models  # noqa: E402
from round_robin import interleave  # noqa: E402  (this folder is on sys.path)


def measure(name: str, batch: int, secs: float) -> str:
    _, shape, traced = traced_model(name)
    feeds = {"input": models.feed(shape, batch)}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        traced.save_onnx(path)
        engines = {"compiled": om.Session(traced, backend="compiled").run,
                   "numpy": om.Session(traced, backend="numpy").run,
                   "ort": ort_runner(path, 1, feeds)}
        calls = {k: (lambda f=f: f(feeds)) if k != "ort" else f for k, f in engines.items()}
        for call in calls.values():
            for _ in range(10):
                call()
        ref = engines["numpy"](feeds)["output"].numpy()
        err = float(np.max(np.abs(engines["compiled"](feeds)["output"].numpy() - ref)))
        med, ratio, rounds = interleave(calls, secs)
    med = {k: v * 1e6 for k, v in med.items()}
    return (f"{name}-b{batch:<4} compiled {med['compiled']:9.1f} us  numpy {med['numpy']:9.1f} us"
            f"  ort {med['ort']:9.1f} us  compiled/ort {ratio['compiled']:.2f}"
            f"  numpy/ort {ratio['numpy']:.2f}  max |diff| {err:.1e}"
            f"  rounds {rounds}")


def main(argv) -> None:
    secs = float(os.environ.get("SECS", "1.5"))
    with threadpoolctl.threadpool_limits(1):
        for name, batch in CASES:
            if argv and not any(a in (name, f"{name}-b{batch}") for a in argv):
                continue
            print(measure(name, batch, secs), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
