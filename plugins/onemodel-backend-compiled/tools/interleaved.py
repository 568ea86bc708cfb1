"""Interleaved timing of the compiled backend, the numpy backend and ONNX Runtime (one intra-op
thread), the method behind docs/benchmarks.md's compiled-backend table.

Run from the repository root::

    .venv/bin/python plugins/onemodel-backend-compiled/tools/interleaved.py [model[-bN] ...]

Per model and batch (those of benchmarks/bench_models.py), each engine runs 5 calls in turn,
rotating which goes first, until ``SECS`` seconds (default 1.5) have passed and at least 5
rounds ran; a round's time per engine is the median of its 5 calls. Printed: each engine's median
over rounds and the median of the per-round ratios to ONNX Runtime (below 1 = faster), with BLAS
held to one thread by threadpoolctl. A shared machine moves these ratios: repeat and quote ranges.

``PEERS=1`` adds the other peers of issue 26 when they are installed (`make bench` installs
them): OpenVINO on the same ONNX file (one thread, f32, `onemodel.tools.peers`) and PyTorch eager
at one thread on the model's twin (benchmarks/torch_twins.py, checked against numpy first), and
prints compiled / the fastest peer of each round (``best``). ``THREADS=2`` gives the compiled
session, ONNX Runtime and OpenVINO that many intra-op threads (torch stays at one; the issue's
threads=2 row compares with ORT only); BLAS stays at one thread. ``PROFILE=1`` then prints where the
compiled run's time goes (instruction_profile.py: each instruction timed alone).
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
from onemodel.tools.peers import openvino_runner, openvino_version  # noqa: E402

from bench_models import CASES, model as traced_model, models  # noqa: E402
from instruction_profile import profile_line  # noqa: E402  (this folder is on sys.path)
from round_robin import interleave  # noqa: E402


def _torch_call(fn, traced, batch: int, x: np.ndarray, ref: np.ndarray):
    """PyTorch eager at one thread on the model's twin, checked against the numpy backend."""
    import torch
    from torch_twins import graph_twin, layer_twin

    torch.set_num_threads(1)
    layer = getattr(fn, "layer", None)
    run = layer_twin(torch, layer) if layer is not None \
        else graph_twin(torch, traced.graph, {"batch": batch})
    tx = torch.from_numpy(x)

    def call():
        with torch.inference_mode():
            return run(tx)

    got = call().numpy()
    assert abs(got - ref).max() <= 1e-3 * (1 + abs(ref).max()), "the torch twin differs"
    return call


def _torch_installed() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def measure(name: str, batch: int, secs: float, peers: bool = False, threads: int = 1) -> str:
    fn, shape, traced = traced_model(name)
    feeds = {"input": models.feed(shape, batch)}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        traced.save_onnx(path)
        compiled = om.Session(traced, backend="compiled", threads=threads)
        engines = {"compiled": compiled.run,
                   "numpy": om.Session(traced, backend="numpy").run}
        calls = {k: (lambda f=f: f(feeds)) for k, f in engines.items()}
        calls["ort"] = ort_runner(path, threads, feeds)
        ref = engines["numpy"](feeds)["output"].numpy()
        best_of: tuple = ()
        if peers:
            if openvino_version() is not None:
                calls["ov"] = openvino_runner(path, threads, feeds)
            if _torch_installed():
                calls["torch"] = _torch_call(fn, traced, batch, feeds["input"], ref)
            best_of = tuple(k for k in ("ort", "ov", "torch") if k in calls)
        for call in calls.values():
            for _ in range(10):
                call()
        err = float(np.max(np.abs(engines["compiled"](feeds)["output"].numpy() - ref)))
        med, ratio, rounds = interleave(calls, secs, best_of=best_of)
        prof = "\n" + profile_line(compiled, feeds) if os.environ.get("PROFILE") == "1" else ""
    med = {k: v * 1e6 for k, v in med.items()}
    extra = "".join(f"  {k} {med[k]:9.1f} us  {k}/ort {ratio[k]:.2f}" for k in ("ov", "torch")
                    if k in med)
    if best_of:
        extra += f"  compiled/best {ratio['best']:.2f}"
    return (f"{name}-b{batch:<4} compiled {med['compiled']:9.1f} us  numpy {med['numpy']:9.1f} us"
            f"  ort {med['ort']:9.1f} us  compiled/ort {ratio['compiled']:.2f}"
            f"  numpy/ort {ratio['numpy']:.2f}{extra}  max |diff| {err:.1e}"
            f"  rounds {rounds}{prof}")


def main(argv) -> None:
    secs = float(os.environ.get("SECS", "1.5"))
    with threadpoolctl.threadpool_limits(1):
        for name, batch in CASES:
            if argv and not any(a in (name, f"{name}-b{batch}") for a in argv):
                continue
            print(measure(name, batch, secs, peers=os.environ.get("PEERS") == "1",
                          threads=int(os.environ.get("THREADS", "1"))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
