"""``onemodel bench FILE``: time a model on each backend (and ONNX Runtime and OpenVINO when
installed)."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

from ._models import CliInputError, load_model
from ..tools.progress import Stages
from ._table import render, wrap_text

#: the backends timed when --backend is not given (those installed, in this order)
DEFAULT_BACKENDS = ("numpy", "compiled", "threaded")

EPILOG = """examples:
  onemodel bench model.onemodel            numpy, compiled and threaded, batch 1
  onemodel bench model.onnx --backend threaded --batch 64 --threads 2
  onemodel bench model.onemodel --runs 100 --dim seq=128
                                           other symbolic axes set by name
  onemodel bench model.onnx --cold         also the start in a fresh process

Feeds are random: floats standard normal, integers in [0, 4), booleans half true. A symbolic
axis that is axis 0 of an input is a batch axis and takes --batch; every other symbolic axis
takes 16 unless --dim NAME=SIZE says otherwise. Each backend runs --warmup times untimed, then
--runs times timed; the table gives the median and the 10th/90th percentiles per run, each
median relative to the fastest, and the cold costs: "session" is creating the session
(optimisation passes, a backend's weight packing) and "first run" the first run, which
prepares the plan for this shape signature (on "compiled": lowering it to native
instructions, Python only, no compiler, and packing the weights, or loading both from the
on-disk cache) before running it. --cold also times, in a fresh
Python process per backend, importing onemodel, loading the file, creating the session and the
first run, over a new, empty on-disk cache; when the backend stored something there (its
lowered plans), a second fresh process is timed too ("cached"). When onnxruntime is installed
the model also runs there (with 1 and with --threads intra-op threads, every graph
optimisation on), and when openvino is installed on its CPU plugin (1 and --threads threads,
f32 precision, one stream, latency hint); a .onemodel file is exported to ONNX for them first.
GFLOP/s counts the FLOPs the ops declare (GEMMs, convolutions, attention; a lower bound).
Each session runs with its own thread setting, as in `make demo` and the benchmark suite:
--threads N for every backend, else each backend's default (numpy 1, threaded every core),
BLAS bounded inside each run; the output says which.
"""


def add_parser(sub):
    p = sub.add_parser("bench", help="time a model on each backend (and ONNX Runtime, OpenVINO)",
                       description="Time a .onemodel or .onnx model on random feeds on each "
                                   "backend, and on ONNX Runtime and OpenVINO when they are "
                                   "installed. The table gives GFLOP/s from the FLOPs the ops "
                                   "declare; the header, the CPU and the instruction set each "
                                   "backend's kernels chose.",
                       epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="a .onemodel or .onnx file")
    p.add_argument("--backend", default=None, metavar="NAMES",
                   help="comma-separated backends (default: those of "
                        f"{','.join(DEFAULT_BACKENDS)} that are installed)")
    p.add_argument("--batch", type=int, default=1, metavar="N",
                   help="size of the batch axes (default 1)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                   help="size of another symbolic axis (repeatable; default 16)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="threads of every session (BLAS included) and of ONNX Runtime's "
                        "second row (default: each backend's own, numpy 1 and threaded "
                        "every core; ONNX Runtime every core)")
    p.add_argument("--runs", type=int, default=20, metavar="N",
                   help="timed runs per backend (default 20)")
    p.add_argument("--warmup", type=int, default=3, metavar="N",
                   help="untimed runs first (default 3)")
    p.add_argument("--optimization", default="all", choices=("none", "basic", "all"),
                   help="graph passes before timing: none, basic (safe clean-ups) or all "
                        "(fusions too; default)")
    p.add_argument("--cold", action="store_true",
                   help="also time import, load, session and first run in a fresh process "
                        "per backend")
    p.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime")
    p.add_argument("--no-openvino", action="store_true",
                   help="skip OpenVINO (timed, when installed, as ONNX Runtime is: f32 "
                        "precision, one stream, latency hint)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def _dims(specs: list[str]) -> dict[str, int]:
    dims = {}
    for spec in specs:
        name, sep, size = spec.partition("=")
        if not sep or not name or not size.strip().isdigit() or int(size) < 1:
            raise CliInputError(f"--dim {spec!r}: expected NAME=SIZE with a positive size")
        dims[name] = int(size)
    return dims


def _positive(name: str, value: int | None, allow_zero: bool = False) -> None:
    if value is not None and (value < 0 or (value == 0 and not allow_zero)):
        raise CliInputError(f"{name} must be {'>= 0' if allow_zero else 'positive'}, "
                            f"got {value}")


def run(args) -> int:
    import onemodel as om
    from ..core.threads import cores
    import time

    from ..tools.bench import (axis_sizes, cold_and_cached_start, format_seconds, onnxruntime_version,
                               ort_runner, random_feeds, session_label, settings_note,
                               time_calls)
    from ..tools.flops import graph_flops
    from ..tools.machine import backend_platforms, cpu_name, platform_text
    from ..tools.peers import openvino_runner, openvino_version

    installed = om.backends()
    if args.backend is None:
        backends = [b for b in DEFAULT_BACKENDS if b in installed]
    else:
        backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    if not backends:
        raise CliInputError("--backend: give at least one backend name")
    for b in backends:
        if b not in installed:
            raise CliInputError(f"--backend: unknown backend {b!r}; installed backends: "
                                f"{', '.join(installed)}")
    _positive("--batch", args.batch)
    _positive("--runs", args.runs)
    _positive("--warmup", args.warmup, allow_zero=True)
    _positive("--threads", args.threads)
    dims = _dims(args.dim)
    threads = args.threads or cores()
    traced = load_model(args.file)
    graph = traced.graph
    env = axis_sizes(graph, args.batch, dims)
    feeds = random_feeds(graph, env)

    ort_version = None if args.no_ort else onnxruntime_version()
    ort_threads = sorted({1, threads}) if ort_version else []
    ov_version = None if args.no_openvino else openvino_version()
    ov_threads = sorted({1, threads}) if ov_version else []
    stages = len(backends) * (2 if args.cold else 1) + len(ort_threads) + len(ov_threads)
    progress = Stages(stages)
    rows: list[tuple[str, object]] = []
    cold: dict[str, tuple[float, float]] = {}  # row name -> (session, first run) seconds
    fresh: dict[str, dict[str, float]] = {}
    cached: dict[str, dict[str, float]] = {}  # a second fresh process, the cache filled
    notes: list[str] = []
    used: dict[str, int] = {}
    try:
        for b in backends:
            progress.stage(f"timing {b}")
            t0 = time.perf_counter()
            with om.Session(traced, backend=b, optimization=args.optimization,
                            threads=args.threads) as s:
                t1 = time.perf_counter()
                s.run(feeds)
                t2 = time.perf_counter()
                used[b] = s.threads
                label = session_label(s)
                cold[label] = (t1 - t0, t2 - t1)
                rows.append((label, time_calls(lambda: s.run(feeds), args.runs,
                                               args.warmup, progress.update)))
        for b in backends if args.cold else ():
            progress.stage(f"cold start of {b} in a fresh process")
            fresh[b], again = cold_and_cached_start(args.file, b, feeds, args.threads,
                                                    args.optimization)
            if again is not None:
                cached[b] = again
        if ort_threads or ov_threads:
            with tempfile.TemporaryDirectory() as tmp:
                path = args.file
                if not args.file.lower().endswith(".onnx"):
                    path = os.path.join(tmp, "model.onnx")
                    try:
                        traced.save_onnx(path)
                    except Exception as exc:  # noqa: BLE001 - report and keep our rows
                        notes.append(f"onnxruntime and openvino skipped: ONNX export failed: "
                                     f"{str(exc).splitlines()[0] if str(exc) else exc!r}")
                        path = None
                peers = ([(f"onnxruntime {ort_version}", ort_runner, n) for n in ort_threads]
                         + [(f"openvino {ov_version}", openvino_runner, n) for n in ov_threads])
                for engine, runner, n in peers if path else ():
                    name = f"{engine} ({n} thread{'s' if n > 1 else ''})"
                    progress.stage(f"timing {name}")
                    try:
                        call = runner(path, n, feeds)
                        rows.append((name, time_calls(call, args.runs, args.warmup,
                                                      progress.update)))
                    except Exception as exc:  # noqa: BLE001 - report and keep our rows
                        notes.append(f"{name} skipped: {type(exc).__name__}: "
                                     f"{str(exc).splitlines()[0] if str(exc) else ''}")
    finally:
        progress.finish()

    flops = graph_flops(graph, env)
    platforms = backend_platforms()
    if args.json:
        import json

        best = min(t.median for _, t in rows)
        print(json.dumps({
            "file": args.file, "runs": args.runs, "warmup": args.warmup,
            "optimization": args.optimization, "threads": args.threads, "axes": env,
            "feeds": {name: {"shape": list(a.shape), "dtype": str(a.dtype)}
                      for name, a in feeds.items()},
            "cpu": cpu_name(), "platforms": platforms, "flops": flops,
            "results": [{"backend": name, "median_s": t.median, "p10_s": t.p10, "p90_s": t.p90,
                         "vs_fastest": t.median / best,
                         **({"gflops": flops / t.median / 1e9} if flops else {}),
                         **({"session_s": cold[name][0], "first_run_s": cold[name][1]}
                            if name in cold else {})} for name, t in rows],
            "cold_start": fresh, "cold_start_cached": cached, "notes": notes}, indent=2))
        return 0
    shapes = ", ".join(f"{name} {tuple(a.shape)} {a.dtype}" for name, a in feeds.items())
    sizes = ", ".join(f"{k}={v}" for k, v in env.items())
    print(f"{os.path.basename(args.file)}: {shapes}" + (f" ({sizes})" if sizes else ""))
    print(f"{args.runs} runs after {args.warmup} warm-up, optimization={args.optimization}")
    print(wrap_text(settings_note(used), " " * 4))
    print(wrap_text(f"CPU: {cpu_name()}" + "".join(f"; {b}: {platform_text(p)}"
                                                  for b, p in platforms.items()), " " * 4))
    best = min(t.median for _, t in rows)
    table = [[name, format_seconds(t.median), format_seconds(t.p10), format_seconds(t.p90),
              f"{t.median / best:.2f}x"] + ([f"{flops / t.median / 1e9:.1f}"] if flops else [])
             for name, t in rows]
    print(render(["backend", "median", "p10", "p90", "vs fastest"]
                 + (["GFLOP/s"] if flops else []), table))
    print(wrap_text("cold costs in this process (first run: the plan for this shape "
                    "signature is prepared, then run):", " " * 4))
    print(render(["backend", "session", "first run", "first / median"],
                 [[name, format_seconds(c[0]), format_seconds(c[1]),
                   f"{c[1] / t.median:.1f}x"] for name, t in rows
                  for c in [cold.get(name)] if c is not None]))
    if fresh:
        print(wrap_text("cold start, each backend in a fresh Python process (an empty "
                        "on-disk cache; \"cached\": a second process that finds what the first "
                        "stored):", " " * 4))
        starts = [(b, c) for b0, c0 in fresh.items()
                  for b, c in [(b0, c0)] + ([(f"{b0}, cached", cached[b0])]
                                            if b0 in cached else [])]
        print(render(["backend", "import", "load", "session", "first run", "total"],
                     [[b, *(format_seconds(c[k]) for k in ("import_s", "load_s", "session_s",
                                                           "first_run_s")),
                       format_seconds(sum(c.values()))] for b, c in starts]))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
