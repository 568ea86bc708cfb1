"""Backends against each other and against ONNX Runtime: `make bench` (pytest-benchmark).

For each benchmark model and batch (the models of test_bench_session.py), in one run:

* ``eager``: the model's Python function on Tensors under ``no_grad``;
* ``numpy``: a Session on the numpy backend (optimization "all");
* ``compiled``: a Session on the compiled backend (native kernels, one thread; optimization
  "all");
* ``threaded``: a Session on the threaded backend (``threads=2``, optimization "all");
* ``ort1`` / ``ort2``: the model exported with ``save_onnx`` and run by ONNX Runtime on the CPU
  with ``intra_op_num_threads`` 1 and 2 and ORT_ENABLE_ALL (skipped without onnxruntime);
* ``ov1``: the same ONNX file on OpenVINO's CPU plugin, one thread, f32 inference precision,
  one stream, latency hint (skipped without openvino; `make bench` installs it);
* ``torch``: PyTorch eager (one thread, ``inference_mode``) on a twin of the model with the
  same weights (benchmarks/torch_twins.py), when ``torch`` is importable (`make bench`
  installs it; the project's test environment does not have it).

Each row also records the model's declared FLOPs (`onemodel.tools.flops`), so the report gives
GFLOP/s against the compiled backend's ISA peak (`BackendDef.platform`).

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
from onemodel.tools.flops import graph_flops
from onemodel.tools.machine import backend_platforms, cpu_name
from onemodel.tools.peers import openvino_runner, openvino_version

from bench_models import CASES, model as _model, models

threadpoolctl = pytest.importorskip("threadpoolctl")

THREADS = 2
#: per model and batch, in this order: ONNX Runtime first, because its 2-thread pool keeps
#: spinning on the second core for up to a second after a run, and the threaded backend last,
#: after eager and numpy have given that core back
MODES = ["ort2", "ort1", "ov1", "torch", "eager", "numpy", "compiled", "threaded"]
PARAMS = [(m, b, mode) for m, b in CASES for mode in MODES]
#: the engines that run the exported ONNX file: mode -> (name, version, runner, threads)
PEERS = {"ort1": ("onnxruntime", onnxruntime_version, ort_runner, 1),
         "ort2": ("onnxruntime", onnxruntime_version, ort_runner, 2),
         "ov1": ("openvino", openvino_version, openvino_runner, 1)}


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
        openvino=openvino_version() or "not installed", torch=_torch_version(),
        platforms=backend_platforms(), cpu=cpu_name(),
        capacity_start=round(parallel_capacity(), 2))
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
    benchmark.extra_info.update(model=name, batch=batch, mode=mode, suite="backends",
                                flops=graph_flops(traced.graph, {"batch": batch}))
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
    if mode in PEERS:
        engine, version_of, runner, threads = PEERS[mode]
        version = version_of()
        if version is None:
            pytest.skip(f"{engine} is not installed (make bench installs it)")
        path, why = _onnx_path(name, traced, tmp_path_factory)
        if path is None:
            pytest.skip(f"export failed: {why}")
        call = runner(path, threads, feeds)
        for _ in range(10):
            call()
        benchmark.extra_info[engine] = version
        out = benchmark(call)
        first = out[0] if isinstance(out, (list, tuple)) else next(iter(out.values()))
        assert first.shape[0] == batch
        return
    torch = pytest.importorskip("torch", reason="torch is not installed (make bench installs it)")
    from torch_twins import graph_twin, layer_twin

    torch.set_num_threads(1)
    layer = getattr(fn, "layer", None)
    run = layer_twin(torch, layer) if layer is not None else graph_twin(torch, traced.graph,
                                                                        {"batch": batch})
    tx = torch.from_numpy(x)
    with torch.inference_mode():
        got = run(tx).numpy()
        for _ in range(10):
            run(tx)
        want = om.Session(traced, backend="numpy").run(feeds)["output"].numpy()
        assert abs(got - want).max() <= 1e-3 * (1 + abs(want).max()), "the twin differs"
        benchmark.extra_info["torch"] = torch.__version__
        benchmark(run, tx)


def _torch_version() -> str:
    try:
        import torch
    except ImportError:
        return "not installed"
    return torch.__version__


def test_parallel_capacity_at_the_end(benchmark):
    """Two threads' GEMM throughput against one's, once more after everything else ran."""
    benchmark.group = "machine"
    benchmark.extra_info.update(suite="capacity", capacity_end=round(parallel_capacity(), 2))
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
