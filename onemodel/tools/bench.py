"""Timing helpers shared by ``onemodel bench``, ``make demo`` and benchmarks/: random feeds for
a graph's inputs, a timer with warm-up and percentiles, ONNX Runtime sessions with a thread
count, and the words that say which thread settings a measurement ran with.

All three measure a session the same way: created with its ``threads`` option (None: the
backend's default), which bounds BLAS inside every run, and nothing else changed; so their
numbers agree. Eager code runs with the process's own BLAS setting (`blas_threads`).
"""
from __future__ import annotations

import os
import time
from typing import Callable, Mapping

import attrs
import numpy as np

from ..errors import OneModelError

#: size given to a symbolic axis that is not a batch axis (axis 0 of an input), unless set
DEFAULT_DIM = 16


@attrs.frozen
class Timing:
    """Seconds per run: the median and the 10th and 90th percentiles of ``runs`` runs."""

    median: float
    p10: float
    p90: float
    runs: int

    @classmethod
    def of(cls, samples) -> "Timing":
        a = np.asarray(samples, dtype=np.float64)
        return cls(float(np.median(a)), float(np.percentile(a, 10)),
                   float(np.percentile(a, 90)), len(a))


def time_calls(fn: Callable[[], object], runs: int = 20, warmup: int = 3,
               progress: Callable[[int, int], None] | None = None) -> Timing:
    """Call ``fn`` ``warmup`` times untimed, then ``runs`` times timed."""
    for _ in range(warmup):
        fn()
    samples = []
    for i in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
        if progress is not None:
            progress(i + 1, runs)
    return Timing.of(samples)


def axis_sizes(graph, batch: int = 1, dims: Mapping[str, int] | None = None) -> dict[str, int]:
    """A size for every symbolic axis of ``graph``'s inputs: ``dims[name]`` if given, else
    ``batch`` for an axis that is axis 0 of an input, else `DEFAULT_DIM`."""
    from ..core.symbolic import Dim

    dims = dict(dims or {})
    env: dict[str, int] = {}
    for v in graph.inputs:
        for axis, d in enumerate(v.shape):
            if not isinstance(d, Dim):
                continue
            for name in sorted(d.symbols()):
                if name in env:
                    continue
                if name in dims:
                    env[name] = int(dims[name])
                elif axis == 0 and d == Dim.symbol(name):
                    env[name] = int(batch)
    for v in graph.inputs:
        for d in v.shape:
            if isinstance(d, Dim):
                for name in d.symbols():
                    env.setdefault(name, int(dims.get(name, DEFAULT_DIM)))
    return env


def random_feeds(graph, env: Mapping[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    """Random arrays for ``graph``'s inputs at the sizes in ``env``: floats standard normal,
    integers in [0, 4), booleans half true."""
    from ..core.symbolic import evaluate

    rng = np.random.default_rng(seed)
    feeds = {}
    for v in graph.inputs:
        shape = tuple(int(evaluate(d, env)) for d in v.shape)
        dt = np.dtype(v.dtype.numpy)
        if dt.kind == "f":
            a = rng.standard_normal(shape).astype(dt)
        elif dt.kind in "iu":
            a = rng.integers(0, 4, shape).astype(dt)
        elif dt.kind == "b":
            a = rng.random(shape) < 0.5
        else:
            raise OneModelError(f"input {v.name!r}: no random values for dtype {v.dtype}")
        feeds[v.name] = a
    return feeds


def onnxruntime_version() -> str | None:
    try:
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime.__version__


def ort_runner(onnx_path: str | os.PathLike, threads: int, feeds: Mapping[str, np.ndarray]
               ) -> Callable[[], object]:
    """A function running ``feeds`` in an ONNX Runtime CPU session with ``threads`` intra-op
    threads and every graph optimisation (ORT_ENABLE_ALL)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = int(threads)
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(os.fspath(onnx_path), so, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    missing = [n for n in names if n not in feeds]
    if missing:
        raise OneModelError(f"ONNX Runtime wants input(s) {missing} that the model's feeds lack")
    ort_feeds = {k: v for k, v in feeds.items() if k in names}
    run = sess.run

    def call():
        return run(None, ort_feeds)

    return call


#: run by `cold_start` in a fresh interpreter: argv = model file, feeds .npz, backend, threads
#: ("" for the default), optimization; prints the four times as JSON
_COLD_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import onemodel as om
from onemodel.cli._models import load_model
t1 = time.perf_counter()
traced = load_model(sys.argv[1])
t2 = time.perf_counter()
with np.load(sys.argv[2]) as z:
    feeds = {k: z[k] for k in z.files}
s = om.Session(traced, backend=sys.argv[3], optimization=sys.argv[5],
               threads=int(sys.argv[4]) if sys.argv[4] else None)
t3 = time.perf_counter()
s.run(feeds)
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "session_s": t3 - t2,
                  "first_run_s": t4 - t3}))
"""


def cold_start(model_path: str | os.PathLike, backend: str, feeds: Mapping[str, np.ndarray],
               threads: int | None = None, optimization: str = "all",
               timeout: float = 600.0, env: Mapping[str, str] | None = None) -> dict[str, float]:
    """Seconds a fresh Python process takes to import onemodel, load ``model_path``, create a
    ``backend`` session and run ``feeds`` once (keys ``import_s``, ``load_s``, ``session_s``,
    ``first_run_s``): what a user's new process pays before its first result. ``env``: the
    process's environment (default this one's)."""
    import json
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "feeds.npz")
        np.savez(npz, **dict(feeds))  # type: ignore[arg-type]  # numpy's stub types allow_pickle
        proc = subprocess.run([sys.executable, "-c", _COLD_SCRIPT, os.fspath(model_path), npz,
                               backend, "" if threads is None else str(int(threads)),
                               optimization], capture_output=True, text=True, timeout=timeout,
                              env=None if env is None else dict(env))
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise OneModelError(f"cold start of backend {backend!r} failed in a fresh process: "
                            f"{last}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cold_and_cached_start(model_path: str | os.PathLike, backend: str,
                          feeds: Mapping[str, np.ndarray], threads: int | None = None,
                          optimization: str = "all") -> tuple[dict, dict | None]:
    """`cold_start` twice over one new, empty on-disk cache (`onemodel.cache`): the first
    process finds nothing cached; the second finds what the first stored, and is timed only
    when the backend stored something (else None)."""
    import tempfile

    from ..cache import DIR_ENV, ENABLE_ENV, SUFFIX

    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, DIR_ENV: folder, ENABLE_ENV: "1"}
        cold = cold_start(model_path, backend, feeds, threads, optimization, env=env)
        stored = any(name.endswith(SUFFIX) for _, _, names in os.walk(folder) for name in names)
        cached = (cold_start(model_path, backend, feeds, threads, optimization, env=env)
                  if stored else None)
    return cold, cached


def parallel_capacity(seconds: float = 0.15) -> float:
    """How much faster two threads run float32 GEMMs than one, now (2.0 on two free cores; near
    1.0 when another program holds the second core). BLAS should be at one thread."""
    import threading

    a = np.random.default_rng(0).random((384, 384), dtype=np.float32)
    outs = [np.empty_like(a), np.empty_like(a)]
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < seconds:
        np.dot(a, a, out=outs[0])
        n += 1

    def work(o):
        for _ in range(n):
            np.dot(a, a, out=o)

    t0 = time.perf_counter()
    work(outs[0])
    work(outs[1])
    seq = time.perf_counter() - t0
    t0 = time.perf_counter()
    th = threading.Thread(target=work, args=(outs[1],))
    th.start()
    work(outs[0])
    th.join()
    return seq / (time.perf_counter() - t0)


def threads_text(n: int) -> str:
    return f"{n} thread{'' if n == 1 else 's'}"


def session_label(session) -> str:
    """``"numpy (1 thread)"``: a session's backend and the threads its runs may use."""
    return f"{session.backend} ({threads_text(session.threads)})"


def blas_threads() -> int | None:
    """The BLAS threads code outside sessions gets now (None when no BLAS was found)."""
    from ..core.threads import BLAS

    counts = [lib.get() for lib in BLAS.libs()]
    return max((c for c in counts if c), default=None)


def settings_note(sessions: dict[str, int]) -> str:
    """One line stating the thread settings of a measurement: ``sessions`` maps backend name
    to its sessions' ``threads``."""
    parts = ", ".join(f"{b} threads={n}" for b, n in sessions.items())
    blas = blas_threads()
    eager = f"eager code: BLAS {threads_text(blas)}" if blas else "eager code: no BLAS found"
    return (f"threads: {parts} (BLAS bounded inside each run); {eager} (the process's "
            f"setting, untouched)")


def format_seconds(s: float) -> str:
    us = s * 1e6
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.1f} µs"


__all__ = ["DEFAULT_DIM", "Timing", "time_calls", "axis_sizes", "random_feeds", "ort_runner",
           "onnxruntime_version", "cold_start", "cold_and_cached_start", "parallel_capacity",
           "format_seconds",
           "threads_text", "session_label", "blas_threads", "settings_note"]
