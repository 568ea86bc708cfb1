"""Backends against each other and against ONNX Runtime: `make bench` (pytest-benchmark).

For each benchmark model and batch (the models of test_bench_session.py), in one run:

* ``eager``: the model's Python function on Tensors under ``no_grad``;
* ``numpy``: a Session on the numpy backend (optimization "all");
* ``compiled``: a Session on the compiled backend (native kernels, one thread; optimization
  "all");
* ``threaded``: a Session on the threaded backend (``threads=2``, optimization "all");
* ``ort1`` / ``ort2``: the model exported with ``save_onnx`` and run by ONNX Runtime on the CPU
  with ``intra_op_num_threads`` 1 and 2 and ORT_ENABLE_ALL (skipped without onnxruntime);
* ``torch``: PyTorch eager, when ``torch`` is importable (it is not in the project's
  environment; the case is skipped there).

BLAS is limited to one thread with threadpoolctl for the whole module (the numpy backend and
eager are single-threaded; the threaded backend's parallelism is its own pool). The group is
"<model> b<batch>"; ``onemodel.tools.write_benchmarks`` turns the saved JSON into the tables of
docs/benchmarks.md.
"""
from __future__ import annotations

import os

import pytest

import onemodel as om
from onemodel.tools.bench import onnxruntime_version, ort_runner, parallel_capacity

from bench_models import CASES, model as _model, models

threadpoolctl = pytest.importorskip("threadpoolctl")

THREADS = 2
#: per model and batch, in this order: ONNX Runtime first, because its 2-thread pool keeps
#: spinning on the second core for up to a second after a run, and the threaded backend last,
#: after eager and numpy have given that core back
MODES = ["ort2", "ort1", "torch", "eager", "numpy", "compiled", "threaded"]
PARAMS = [(m, b, mode) for m, b in CASES for mode in MODES]


@pytest.fixture(scope="module", autouse=True)
def single_thread_blas():
    with threadpoolctl.threadpool_limits(1):
        yield


def test_machine_info(benchmark):
    """Records what the other results ran on (CPU, cores, versions, BLAS) in extra_info."""
    import platform

    import numpy as np

    benchmark.group = "machine"
    info = threadpoolctl.threadpool_info()
    blas = [f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')})"
            for i in info if i.get("user_api") == "blas"]
    benchmark.extra_info.update(
        suite="machine", cores=os.cpu_count(), numpy=np.__version__, blas=", ".join(blas),
        python=platform.python_version(), onnxruntime=onnxruntime_version() or "not installed",
        cpu=_cpu_name(), capacity_start=round(parallel_capacity(), 2))
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


_ONNX: dict = {}


def _onnx_path(name, traced, tmp_path_factory):
    if name not in _ONNX:
        path = tmp_path_factory.mktemp("onnx") / f"{name}.onnx"
        try:
            traced.save_onnx(path)
            _ONNX[name] = (path, None)
        except Exception as exc:  # noqa: BLE001 - recorded as a skip reason
            _ONNX[name] = (None, f"{type(exc).__name__}: {exc}")
    return _ONNX[name]


@pytest.mark.parametrize("name,batch,mode", PARAMS, ids=[f"{m}-b{b}-{o}" for m, b, o in PARAMS])
def test_backend(benchmark, name, batch, mode, tmp_path_factory):
    fn, shape, traced = _model(name)
    x = models.feed(shape, batch)
    feeds = {"input": x}
    benchmark.group = f"{name} b{batch}"
    benchmark.extra_info.update(model=name, batch=batch, mode=mode, suite="backends")
    if mode == "eager":
        t = om.Tensor.from_numpy(x)

        def eager():
            with om.GradMode.no_grad():
                return fn(t)

        benchmark(eager)
        return
    if mode in ("numpy", "compiled", "threaded"):
        options = {"threads": THREADS} if mode == "threaded" else {}
        session = om.Session(traced, backend=mode, optimization="all", **options)
        for _ in range(30):  # warm up (the threaded backend times its plans at first)
            session.run(feeds)
        plan = session._compiled.plan({"batch": batch})
        benchmark.extra_info["plan"] = getattr(plan, "schedule_summary", "sequential")
        result = benchmark(session.run, feeds)
        if hasattr(plan, "chosen"):
            benchmark.extra_info["chosen"] = plan.chosen
        assert result["output"].shape[0] == batch
        return
    if mode in ("ort1", "ort2"):
        version = onnxruntime_version()
        if version is None:
            pytest.skip("onnxruntime is not installed")
        path, why = _onnx_path(name, traced, tmp_path_factory)
        if path is None:
            pytest.skip(f"export failed: {why}")
        call = ort_runner(path, int(mode[-1]), feeds)
        for _ in range(10):
            call()
        benchmark.extra_info["onnxruntime"] = version
        out = benchmark(call)
        assert out[0].shape[0] == batch
        return
    torch = pytest.importorskip("torch")
    pytest.skip(f"no PyTorch twin of {name!r} yet (torch {torch.__version__} found)")


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown CPU"


def test_parallel_capacity_at_the_end(benchmark):
    """Two threads' GEMM throughput against one's, once more after everything else ran."""
    benchmark.group = "machine"
    benchmark.extra_info.update(suite="capacity", capacity_end=round(parallel_capacity(), 2))
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
