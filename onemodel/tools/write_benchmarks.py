"""Rewrite the generated parts of docs/benchmarks.md from a pytest-benchmark JSON (`make bench`).

    python -m pytest benchmarks --benchmark-only -p no:randomly \\
        --benchmark-json .benchmarks/latest.json
    python -m onemodel.tools.write_benchmarks [.benchmarks/latest.json] [--doc docs/benchmarks.md]

Four sections are generated, each between ``<!-- BEGIN GENERATED: name -->`` and ``<!-- END
GENERATED: name -->`` markers; everything outside the markers (the "Training step" section,
notes on profiles) is kept as written:

* ``sessions`` (benchmarks/test_bench_session.py): eager against Session.run at each
  optimization level on the numpy backend;
* ``backends`` (benchmarks/test_bench_backends.py): eager, the numpy and threaded backends and
  ONNX Runtime at 1 and 2 threads, one table per model (a row per batch and implementation)
  with ratios to ONNX Runtime at its best thread count and to eager, the targets, and the
  machine the numbers come from.
* ``threads`` (benchmarks/test_bench_threads.py): sessions with default settings, interleaved:
  the numpy backend against itself with BLAS forced to one thread, and the threaded backend
  against the numpy backend, with their targets;
* ``eager`` (benchmarks/test_bench_eager.py): one eager op against the bare numpy call, the op's
  kernel and the uncached path, with the dispatch overhead and its target.

A section whose benchmarks are absent from the JSON is left as it is.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import re
import sys
from pathlib import Path

DESCRIPTIONS = {
    "mlp": "MLP 784-512-512-10",
    "cnn": "CNN (conv 1→16, pool, conv 16→32, pool, 1568→128→10)",
    "transformer": "encoder layer d=128, 4 heads, ffn 512, seq 64 (from primitives)",
    "transformer_ops": "encoder layer d=128, 4 heads, ffn 512, seq 64 (layer_norm/sdpa ops)",
    "deep100": "100 x Linear(64,64)+ReLU",
    "branches8": "8 branches of Linear(256,256)+ReLU+Linear(256,256), summed",
    "lstm": "LSTM(64, 128), seq 32, batch first",
    "gru": "GRU(64, 128), seq 32, batch first",
}
SESSION_MODES = ("eager", "none", "basic", "all")
BACKEND_MODES = ("eager", "numpy", "compiled", "threaded", "ort1", "ort2", "ov1", "torch")
BACKEND_LABELS = {"eager": "eager (numpy kernels, no_grad)", "numpy": "Session, numpy backend",
                  "compiled": "Session, compiled backend (1 thread)",
                  "threaded": "Session, threaded backend (2 threads)",
                  "ort1": "ONNX Runtime, 1 thread", "ort2": "ONNX Runtime, 2 threads",
                  "ov1": "OpenVINO, 1 thread (f32)", "torch": "PyTorch eager, 1 thread"}
#: the one-thread peers the compiled backend is held against (issue 26)
PEERS_1T = ("ort1", "ov1", "torch")
#: the rows whose time is mostly GEMM: their GFLOP/s is compared with the ISA's peak
GEMM_BOUND = {("mlp", 64), ("transformer_ops", 16), ("transformer", 16)}
#: best of our backends / ONNX Runtime at its best thread count, at most (docs/benchmarks.md)
ORT_TARGETS = {"mlp": 1.5, "transformer": 1.5, "transformer_ops": 1.5, "cnn": 2.5,
               "deep100": 3.0}
#: threaded / numpy speedups asked for
THREADED_TARGETS = {("branches8", 64): 1.5}
#: the threaded backend may be at most this much slower than numpy on any model
THREADED_SLOWEST = 1.10


def fmt(seconds: float) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "–"
    us = seconds * 1e6
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} µs"


def _order(model: str) -> int:
    return list(DESCRIPTIONS).index(model) if model in DESCRIPTIONS else 99


def _numpy_version() -> str:
    import numpy

    return numpy.__version__


# -- sessions (formerly tools/session_bench_report.py) ---------------------------------------------
def render_sessions(data: dict) -> str | None:
    rows: dict[tuple, dict] = {}
    overhead = None
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        if info.get("suite") or "model" not in info:
            continue
        if info.get("mode") == "overhead":
            overhead = (b["stats"]["median"], info["nodes"])
            continue
        rows.setdefault((info["model"], info["batch"]), {})[info["mode"]] = (
            b["stats"]["median"], info.get("nodes"))
    if not rows:
        return None
    mi = data.get("machine_info", {})
    cpu = mi.get("cpu", {}).get("brand_raw") or platform.processor() or "unknown CPU"
    lines = [
        "## Sessions",
        "",
        "`benchmarks/test_bench_session.py` (`make bench`): eager calls under `no_grad` against "
        "`Session.run` at each optimization level (numpy backend), BLAS limited to one thread "
        "with threadpoolctl. Medians; the ratios are eager / session(all) and none / all.",
        "",
        f"Machine: {cpu}, Python {mi.get('python_version', platform.python_version())}, "
        f"numpy {_numpy_version()}; 2 cores shared with other work, so absolute times move by "
        f"10–20 %.",
        "",
        "| model | batch | eager | none | basic | all | eager/all | none/all | nodes (none → all) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (model, batch), m in sorted(rows.items(), key=lambda kv: (_order(kv[0][0]), kv[0][1])):
        if not all(k in m for k in SESSION_MODES):
            continue
        t = {k: m[k][0] for k in SESSION_MODES}
        lines.append(
            f"| {DESCRIPTIONS.get(model, model)} | {batch} | "
            + " | ".join(fmt(t[k]) for k in SESSION_MODES)
            + f" | {t['eager'] / t['all']:.2f}x | {t['none'] / t['all']:.2f}x | "
            f"{m['none'][1]} → {m['all'][1]} |")

    def ratio(model, batch, a, b):
        m = rows.get((model, batch), {})
        return m[a][0] / m[b][0] if a in m and b in m else float("nan")

    b1 = [ratio(m, 1, "eager", "all") for m in DESCRIPTIONS if (m, 1) in rows]
    lines += ["", "Targets: session(all) vs eager on the 100-layer model at batch 1: "
                  f"{ratio('deep100', 1, 'eager', 'all'):.1f}x (target 3x); slowest model at "
                  f"batch 1: {min(b1) if b1 else float('nan'):.2f}x (target 1.5x); `all` vs "
                  f"`none` on the transformer at batch 1: "
                  f"{ratio('transformer', 1, 'none', 'all'):.2f}x from primitives, "
                  f"{ratio('transformer_ops', 1, 'none', 'all'):.2f}x written with the "
                  f"layer_norm/attention/gelu ops (target 1.3x)."]
    if overhead is not None:
        med, nodes = overhead
        lines += ["", f"Plan overhead: the 100-layer model's plan at batch 1 (level `none`, "
                      f"{nodes} nodes) with every kernel replaced by a no-op Python function runs "
                      f"in {fmt(med)}, i.e. {med / nodes * 1e6:.2f} µs per node (this includes "
                      f"the call into the replaced kernel; target 1 µs)."]
    lines += ["", "To reproduce:", "", "```text",
              "python -m pytest benchmarks/test_bench_session.py --benchmark-only -p no:randomly "
              "--benchmark-json=/tmp/session.json",
              "python -m onemodel.tools.write_benchmarks /tmp/session.json", "```"]
    return "\n".join(lines) + "\n"


# -- backends ----------------------------------------------------------------------------------
def _collect_backends(data: dict):
    rows: dict[tuple, dict] = {}
    machine: dict = {}
    plans: dict[tuple, str] = {}
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        if info.get("suite") == "machine":
            machine = {**info, **machine}
        elif info.get("suite") == "capacity":
            machine = {**machine, "capacity_end": info.get("capacity_end")}
        elif info.get("suite") == "backends":
            key = (info["model"], info["batch"])
            rows.setdefault(key, {})[info["mode"]] = b["stats"]["median"]
            if info.get("flops"):
                rows[key]["flops"] = info["flops"]
            if info["mode"] == "threaded":
                chosen = info.get("chosen")
                plans[key] = (info.get("plan", "") + (f"; chosen: {chosen}" if chosen else ""))
    return rows, machine, plans


def _ort_best(m: dict) -> tuple[float, str]:
    best = [(m[k], k) for k in ("ort1", "ort2") if k in m]
    if not best:
        return float("nan"), ""
    t, k = min(best)
    return t, f"{k[-1]} thread{'s' if k != 'ort1' else ''}"


def _ours_best(m: dict) -> tuple[float, str]:
    ours = [(m[k], k) for k in ("numpy", "compiled", "threaded") if k in m]
    return min(ours) if ours else (float("nan"), "")


def _peer_section(rows: dict, machine: dict) -> list[str]:
    """The compiled backend against the best one-thread peer, and GFLOP/s against the peak of
    the ISA its kernels chose (issue 26's table)."""
    plat = (machine.get("platforms") or {}).get("compiled") or {}
    peak = plat.get("peak_gflops")
    versions = ", ".join(f"{k} {machine[k]}" for k in ("onnxruntime", "openvino", "torch")
                         if machine.get(k))
    lines = ["### The compiled backend against its peers", "",
             f"One thread everywhere, BLAS at one thread; the compiled kernels ran "
             f"{plat.get('isa', '?')}" + (f" (peak {peak:g} GFLOP/s per core: lanes x 2 x FMA "
                                          f"pipes x clock)" if peak else "") +
             f"; peers: {versions or '?'}. GFLOP/s counts the FLOPs the ops declare "
             f"(`onemodel.tools.flops`).", "",
             "| model | batch | compiled | best peer | compiled / best | GFLOP/s | % of peak |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for (model, batch), m in sorted(rows.items(), key=lambda kv: (_order(kv[0][0]), kv[0][1])):
        if "compiled" not in m:
            continue
        peers = [(m[k], k) for k in PEERS_1T if k in m]
        t = m["compiled"]
        best = min(peers) if peers else None
        gflops = m["flops"] / t / 1e9 if m.get("flops") else None
        share = (f"{100 * gflops / peak:.0f} %" if gflops and peak and (model, batch) in GEMM_BOUND
                 else "–")
        lines.append(f"| {DESCRIPTIONS.get(model, model)} | {batch} | {fmt(t)} | "
                     + (f"{fmt(best[0])} ({BACKEND_LABELS[best[1]].split(',')[0]}) | "
                        f"{t / best[0]:.2f} | " if best else "– | – | ")
                     + (f"{gflops:.1f} | " if gflops else "– | ") + f"{share} |")
    return lines + [""]


def render_backends(data: dict) -> str | None:
    rows, machine, plans = _collect_backends(data)
    if not rows:
        return None
    mi = data.get("machine_info", {})
    cpu = machine.get("cpu") or mi.get("cpu", {}).get("brand_raw") or "unknown CPU"
    lines = [
        "## Backends and ONNX Runtime",
        "",
        "`benchmarks/test_bench_backends.py` (`make bench`), all in one run: the model's Python "
        "function called eagerly under `no_grad`, `Session.run` on the numpy and the threaded "
        "backend (optimization `all`, `threads=2`), and the same model exported with "
        "`save_onnx` and run by ONNX Runtime (CPU, ORT_ENABLE_ALL) with 1 and 2 intra-op "
        "threads. BLAS is limited to one thread (threadpoolctl) for the whole run: the "
        "threaded backend's parallelism is its own pool. Medians of pytest-benchmark's "
        "rounds; \"/ ORT\" divides by ONNX Runtime at its faster thread count, \"/ eager\" by "
        "the eager call (lower is better for both). OpenVINO (CPU plugin, f32 precision, one "
        "stream, latency hint) runs the same ONNX file, and PyTorch eager a twin of the model "
        "with the same weights (benchmarks/torch_twins.py), each at one thread, when "
        "installed (`make bench` installs both).",
        "",
        f"Machine: {cpu}, {machine.get('cores', '?')} cores (shared with other work), Python "
        f"{machine.get('python') or mi.get('python_version', '?')}, numpy "
        f"{machine.get('numpy') or _numpy_version()}, BLAS {machine.get('blas') or '?'}, "
        f"onnxruntime {machine.get('onnxruntime', '?')}, openvino "
        f"{machine.get('openvino', '?')}, torch {machine.get('torch', '?')}; compiled kernels: "
        f"{((machine.get('platforms') or {}).get('compiled') or {}).get('isa', '?')}.",
        "",
    ]
    if machine.get("capacity_start") is not None:
        lines += [f"Parallel capacity (two threads' float32 GEMM throughput against one's: 2.0 "
                  f"when both cores are free): {machine['capacity_start']}x at the start of the "
                  f"run, {machine.get('capacity_end', '?')}x at the end. The machine is shared, "
                  f"so the threaded backend's and ONNX Runtime's 2-thread numbers depend on "
                  f"what else ran at the time; the threaded backend falls back to its "
                  f"sequential plan while the second core is busy.", ""]
    models = sorted({m for m, _ in rows}, key=_order)
    for model in models:
        lines += [f"### {DESCRIPTIONS.get(model, model)}", "",
                  "| batch | implementation | median | / ORT | / eager |",
                  "| --- | --- | --- | --- | --- |"]
        for batch in sorted(b for m, b in rows if m == model):
            m = rows[(model, batch)]
            ort, _ = _ort_best(m)
            for mode in BACKEND_MODES:
                if mode not in m:
                    continue
                t = m[mode]
                vs_ort = f"{t / ort:.2f}" if math.isfinite(ort) else "–"
                vs_eager = f"{t / m['eager']:.2f}" if "eager" in m else "–"
                lines.append(f"| {batch} | {BACKEND_LABELS[mode]} | {fmt(t)} | {vs_ort} | "
                             f"{vs_eager} |")
        lines.append("")

    lines += _peer_section(rows, machine)
    lines += ["### Targets", "",
              "Best of our backends against ONNX Runtime at its best thread count (target: at "
              "most the given factor slower), and the threaded backend against the numpy "
              "backend (at least 1.5x faster on the 8-branch model at batch 64; never more "
              "than 10 % slower).", "",
              "| model | batch | ours (best) | ONNX Runtime (best) | ours / ORT | target | "
              "threaded / numpy | threaded plan |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    missed = []
    for (model, batch), m in sorted(rows.items(), key=lambda kv: (_order(kv[0][0]), kv[0][1])):
        ours, which = _ours_best(m)
        ort, ort_which = _ort_best(m)
        ratio = ours / ort if math.isfinite(ort) else float("nan")
        target = ORT_TARGETS.get(model)
        verdict = "–"
        if target is not None and math.isfinite(ratio):
            ok = ratio <= target
            verdict = f"{target}x: {'met' if ok else 'missed'}"
            if not ok:
                missed.append(f"{DESCRIPTIONS.get(model, model)} at batch {batch}: "
                              f"{ratio:.2f}x against a target of {target}x "
                              f"({ratio / target:.2f}x over)")
        tn = m.get("numpy", float("nan")) / m.get("threaded", float("nan"))
        tn_text = f"{tn:.2f}x" if math.isfinite(tn) else "–"
        want = THREADED_TARGETS.get((model, batch))
        if want is not None and math.isfinite(tn):
            tn_text += f" (target {want}x: {'met' if tn >= want else 'missed'})"
            if tn < want:
                missed.append(f"threaded vs numpy on {DESCRIPTIONS.get(model, model)} at batch "
                              f"{batch}: {tn:.2f}x against a target of {want}x")
        elif math.isfinite(tn) and tn < 1 / THREADED_SLOWEST:
            tn_text += " (more than 10 % slower)"
            missed.append(f"threaded backend {1 / tn:.2f}x slower than numpy on "
                          f"{DESCRIPTIONS.get(model, model)} at batch {batch}")
        plan = plans.get((model, batch), "").split(":")[0] or "–"
        lines.append(f"| {DESCRIPTIONS.get(model, model)} | {batch} | {fmt(ours)} ({which}) | "
                     f"{fmt(ort)} ({ort_which}) | {ratio:.2f}x | {verdict} | {tn_text} | "
                     f"{plan} |")
    lines += ["", "Missed in this run: " + ("; ".join(missed) + "." if missed else "none.")]
    lines += ["", "To reproduce:", "", "```text", "make bench",
              "# or: python -m pytest benchmarks/test_bench_backends.py --benchmark-only "
              "-p no:randomly --benchmark-json=.benchmarks/latest.json",
              "#     python -m onemodel.tools.write_benchmarks .benchmarks/latest.json", "```"]
    return "\n".join(lines) + "\n"


# -- threads (benchmarks/test_bench_threads.py) ----------------------------------------------------
#: the numpy backend's default (BLAS bounded inside each run) against BLAS forced to one thread
#: for the whole process: at most this ratio
BLAS_COST_LIMIT = 1.10
#: the threaded backend against the numpy backend, both with default settings
THREADS_TARGETS = {("branches8", 64): 1.5}
THREADS_SLOWEST = 0.95


def render_threads(data: dict) -> str | None:
    rows = {}
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        if info.get("suite") == "threads":
            rows[(info["model"], info["batch"])] = info
    if not rows:
        return None
    any_info = next(iter(rows.values()))
    lines = [
        "## Threads",
        "",
        "`benchmarks/test_bench_threads.py` (`make bench`): sessions with default settings, "
        "interleaved (every round runs each way a few times in a row, the first run untimed, "
        "the order rotating) so that the load of the shared machine hits all alike; medians. "
        "*numpy* is a numpy-backend session "
        f"(`threads=1`: BLAS bounded to one thread inside each run, the process's BLAS left at "
        f"its default of {any_info.get('blas_default', '?')} threads), *numpy, BLAS 1* the same "
        "session with BLAS forced to one thread for the whole process, *threaded* a "
        f"threaded-backend session (`threads={any_info.get('threaded_threads', '?')}`, every "
        f"core of {any_info.get('cores', '?')}). Capacity is two threads' float32 GEMM "
        "throughput against one's before and after the case (2.0: both cores free).",
        "",
        "| model | batch | numpy | numpy, BLAS 1 | numpy / BLAS 1 | threaded | numpy / "
        "threaded | threaded plan | capacity |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    missed = []
    for (model, batch), info in sorted(rows.items(), key=lambda kv: (_order(kv[0][0]),
                                                                      kv[0][1])):
        med = info["medians"]
        # compared as printed, so that a row never reads "0.95x (below 0.95x)"
        cost, speed = round(info["blas_cost"], 2), round(info["speedup"], 2)
        name = DESCRIPTIONS.get(model, model)
        cost_text = f"{cost:.2f}"
        if cost > BLAS_COST_LIMIT:
            cost_text += " (over 1.10)"
            missed.append(f"numpy default vs BLAS 1 on {name} at batch {batch}: {cost:.2f}")
        speed_text = f"{speed:.2f}x"
        want = THREADS_TARGETS.get((model, batch))
        if want is not None:
            speed_text += f" (target {want}x: {'met' if speed >= want else 'missed'})"
            if speed < want:
                missed.append(f"threaded vs numpy on {name} at batch {batch}: {speed:.2f}x "
                              f"against {want}x")
        elif speed < THREADS_SLOWEST:
            speed_text += " (below 0.95x)"
            missed.append(f"threaded {speed:.2f}x numpy on {name} at batch {batch}")
        plan = (info.get("plan") or "").split(":")[0] or "–"
        if info.get("chosen"):
            plan += f", {info['chosen']} chosen"
        cap = info.get("capacity") or ["?", "?"]
        lines.append(f"| {name} | {batch} | {fmt(med['numpy'])} | {fmt(med['numpy_blas1'])} | "
                     f"{cost_text} | {fmt(med['threaded'])} | {speed_text} | {plan} | "
                     f"{cap[0]}–{cap[1]} |")
    lines += ["", "Missed in this run: " + ("; ".join(missed) + "." if missed else "none."),
              "", "To reproduce:", "", "```text",
              "python -m pytest benchmarks/test_bench_threads.py --benchmark-only -p no:randomly "
              "--benchmark-json=.benchmarks/threads.json",
              "python -m onemodel.tools.write_benchmarks .benchmarks/threads.json", "```"]
    return "\n".join(lines) + "\n"


# -- eager dispatch ----------------------------------------------------------------------------
EAGER_MODES = ("numpy", "kernel", "cached", "uncached")
#: dispatch overhead per op on a repeated signature (cached call minus the op's kernel), at most
EAGER_TARGET_US = 5.0


def render_eager(data: dict) -> str | None:
    rows: dict[str, dict[str, float]] = {}
    shape = None
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        if info.get("suite") == "eager":
            rows.setdefault(info["case"], {})[info["mode"]] = b["stats"]["median"]
            shape = info.get("shape", shape)
    rows = {k: v for k, v in rows.items() if all(m in v for m in EAGER_MODES)}
    if not rows:
        return None
    mi = data.get("machine_info", {})
    cpu = mi.get("cpu", {}).get("brand_raw") or platform.processor() or "unknown CPU"
    dims = "x".join(map(str, shape or ()))
    lines = [
        "## Eager dispatch",
        "",
        f"`benchmarks/test_bench_eager.py` (`make bench`): one op applied eagerly to {dims} "
        "float32 tensors, against the bare numpy call it wraps, the op's own kernel called "
        "directly with the call already bound, and the full path with the signature cache "
        "emptied before every call (binding, inference and output checks each time, as before "
        "the cache). BLAS limited to one thread with threadpoolctl. Medians; \"dispatch\" is "
        "the cached call minus the kernel (what the core adds), \"over numpy\" the cached call "
        "minus the bare numpy call (the plugin kernel's own work included), \"/ numpy\" their "
        "ratio.",
        "",
        f"Machine: {cpu}, Python {mi.get('python_version', platform.python_version())}, numpy "
        f"{_numpy_version()}; 2 cores shared with other work.",
        "",
        "| call | numpy | op kernel | OneModel | uncached | dispatch | over numpy | / numpy |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    worst = 0.0
    for case, m in rows.items():
        dispatch = (m["cached"] - m["kernel"]) * 1e6
        worst = max(worst, dispatch)
        lines.append(f"| `{case}` | {fmt(m['numpy'])} | {fmt(m['kernel'])} | {fmt(m['cached'])} "
                     f"| {fmt(m['uncached'])} | {dispatch:.1f} µs | "
                     f"{(m['cached'] - m['numpy']) * 1e6:.1f} µs | "
                     f"{m['cached'] / m['numpy']:.1f}x |")
    verdict = "met" if worst < EAGER_TARGET_US else "missed"
    lines += ["", f"Target: under {EAGER_TARGET_US:g} µs of dispatch overhead per op on a "
                  f"repeated signature: {verdict} (worst {worst:.1f} µs).",
              "", "To reproduce:", "", "```text",
              "python -m pytest benchmarks/test_bench_eager.py --benchmark-only -p no:randomly "
              "--benchmark-json=/tmp/eager.json",
              "python -m onemodel.tools.write_benchmarks /tmp/eager.json", "```"]
    return "\n".join(lines) + "\n"


# -- the document ------------------------------------------------------------------------------
def _markers(name: str) -> tuple[str, str]:
    return (f"<!-- BEGIN GENERATED: {name} (python -m onemodel.tools.write_benchmarks) -->",
            f"<!-- END GENERATED: {name} -->")


def replace_section(text: str, name: str, body: str, heading: str) -> str:
    """``text`` with the generated section ``name`` set to ``body``: between its markers if
    they are there, else in place of the section headed ``heading`` (a document written before
    the markers), else appended."""
    begin, end = _markers(name)
    block = f"{begin}\n{body.rstrip()}\n{end}\n"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end) + r"\n?", re.S)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text, count=1)
    old = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.S | re.M)
    if old.search(text):
        return old.sub(lambda _: block + "\n", text, count=1)
    return text.rstrip("\n") + "\n\n" + block


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m onemodel.tools.write_benchmarks",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="?", default=".benchmarks/latest.json",
                    help="pytest-benchmark JSON (default .benchmarks/latest.json)")
    ap.add_argument("--doc", default="docs/benchmarks.md", help="the document to update")
    args = ap.parse_args(argv)
    data = json.loads(Path(args.json).read_text(encoding="utf-8"))
    doc = Path(args.doc)
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmarks\n"
    written = []
    for name, heading, render in (("sessions", "## Sessions", render_sessions),
                                  ("backends", "## Backends and ONNX Runtime",
                                   render_backends),
                                  ("threads", "## Threads", render_threads),
                                  ("eager", "## Eager dispatch", render_eager)):
        body = render(data)
        if body is not None:
            text = replace_section(text, name, body, heading)
            written.append(name)
    doc.write_text(text, encoding="utf-8")
    print(f"{doc}: rewrote {', '.join(written) or 'nothing (no matching benchmarks)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
