"""Exported PyTorch models (random weights, nothing downloaded) on the compiled backend, the
numpy backend and ONNX Runtime (one intra-op thread), interleaved: the method behind
docs/benchmarks.md's "Real exported models" table (issue 14's geometric-mean target).

Run from the repository root (torch, and torchvision / transformers for their models)::

    .venv/bin/python plugins/onemodel-backend-compiled/tools/real_models.py [name ...]
        [--batches 1,4] [--secs 1.5] [--profile]

The models are the builders of tests/torch_onnx_models.py (the ones tests/test_onnx_models.py
compares with PyTorch), exported with torch.onnx.export (opset 17) and imported with
``om.load_onnx``; vision models at their builders' small image sizes, text models at sequence
16. Per model and batch each engine runs 5 calls in turn, rotating which goes first, until
``--secs`` have passed and at least 5 rounds ran; printed are each engine's median over rounds,
the median of the per-round ratios to ONNX Runtime, the largest difference from the numpy
backend, the compiled backend's session creation and first run (lowering this signature), and
the nodes left on numpy. At the end: geometric means of compiled / ORT and numpy / ORT.
``--profile`` times every native instruction and numpy step alone (one at a time, in order)
and prints the five largest, summed by op. BLAS is held to one thread with threadpoolctl.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import numpy as np  # noqa: E402
import threadpoolctl  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.tools.bench import ort_runner  # noqa: E402

import torch_onnx_models as tm  # noqa: E402
from instruction_profile import profile_line  # noqa: E402  (this folder is on sys.path)
from round_robin import interleave  # noqa: E402

SEQ = 16
#: the issue's model list, as tests/torch_onnx_models.py builds them
MODELS = {**{k: tm.VISION_BUILDERS[k] for k in (
              "resnet18", "mobilenet_v2", "efficientnet_b0", "shufflenet_v2_x0_5",
              "densenet121", "convnext_small", "vit_small", "mobilenet_v3_small",
              "squeezenet1_1")},
          **tm.TEXT_BUILDERS, "conv1d_audio": tm.conv1d_audio}


def fallbacks(session, feeds) -> Counter:
    from onemodel_backend_compiled.lower import PyStep

    _, env = session._check_feeds(feeds)
    plan = session._compiled.plan(env)
    return Counter(s.node.op for s in plan.segments if isinstance(s, PyStep))


def measure(name: str, build, batches, secs: float, want_profile: bool, results: list) -> None:
    try:
        built = build()
    except ImportError as exc:
        print(f"{name}: skipped ({exc})", flush=True)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{name}.onnx")
        tm.export(built, path)
        traced = om.load_onnx(path)
        t0 = time.perf_counter()
        compiled = om.Session(traced, backend="compiled")
        session_s = time.perf_counter() - t0
        numpy_s = om.Session(traced, backend="numpy")
        for batch in batches:
            feeds = dict(zip(built.input_names, built.make_inputs(batch, SEQ)))
            t0 = time.perf_counter()
            got = compiled.run(feeds)
            first_s = time.perf_counter() - t0
            ref = numpy_s.run(feeds)
            diff = max(float(np.max(np.abs(got[k].numpy() - ref[k].numpy()))) for k in ref)
            calls = {"compiled": lambda f=feeds: compiled.run(f),
                     "numpy": lambda f=feeds: numpy_s.run(f),
                     "ort": ort_runner(path, 1, feeds)}
            for call in calls.values():
                for _ in range(5):
                    call()
            med, ratio, rounds = interleave(calls, secs)
            left = fallbacks(compiled, feeds)
            results.append((name, batch, ratio["compiled"], ratio["numpy"]))
            print(f"{name}-b{batch:<3} compiled {med['compiled'] * 1e3:8.3f} ms  numpy "
                  f"{med['numpy'] * 1e3:8.3f} ms  ort {med['ort'] * 1e3:8.3f} ms  "
                  f"compiled/ort {ratio['compiled']:.2f}  numpy/ort {ratio['numpy']:.2f}  "
                  f"max|diff| {diff:.1e}  session {session_s * 1e3:.0f} ms  first run "
                  f"{first_s * 1e3:.1f} ms  rounds {rounds}  on numpy: "
                  f"{dict(left) or 'nothing'}", flush=True)
            if want_profile:
                print(profile_line(compiled, feeds), flush=True)


def geomean(xs) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help=f"models (default all: {', '.join(MODELS)})")
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--secs", type=float, default=1.5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; known: {', '.join(MODELS)}")
    batches = [int(b) for b in args.batches.split(",")]
    results: list = []
    with threadpoolctl.threadpool_limits(1):
        for name in args.names or MODELS:
            try:
                measure(name, MODELS[name], batches, args.secs, args.profile, results)
            except Exception as exc:  # noqa: BLE001 - report the model and go on
                print(f"{name}: failed: {type(exc).__name__}: "
                      f"{str(exc).splitlines()[0] if str(exc) else ''}", flush=True)
    for batch in batches:
        rows = [r for r in results if r[1] == batch]
        print(f"batch {batch}: {len(rows)} models, geometric mean compiled/ort "
              f"{geomean([r[2] for r in rows]):.2f}, numpy/ort {geomean([r[3] for r in rows]):.2f}")
    print(f"all: geometric mean compiled/ort {geomean([r[2] for r in results]):.2f}, "
          f"numpy/ort {geomean([r[3] for r in results]):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
