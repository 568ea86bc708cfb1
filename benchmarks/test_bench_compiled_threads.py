"""The compiled backend's intra-op threads: `make bench` (pytest-benchmark).

Per model (the MLP, CNN and 8-branch model at batch 64, the transformer layers at 16), four
ways, each its own benchmark in group "<model> b<batch> threads":

* ``compiled1`` / ``compiled2``: compiled-backend sessions with ``threads=1`` and ``threads=2``
  (the native pool splits large instructions; csrc/om_split.h);
* ``ort1`` / ``ort2``: the model exported with ``save_onnx``, ONNX Runtime with 1 and 2
  intra-op threads (skipped without onnxruntime).

BLAS is held to one thread (threadpoolctl) for the whole module. pytest-benchmark times the
ways one after another, not interleaved: for ratios on a shared machine, use
plugins/onemodel-backend-compiled/tools/threads.py, which interleaves them (docs/benchmarks.md
quotes its numbers). Suite ``compiled_threads`` in extra_info.
"""
from __future__ import annotations

import pytest

import onemodel as om
from onemodel.tools.bench import onnxruntime_version, ort_runner

from bench_models import model as _model, models

threadpoolctl = pytest.importorskip("threadpoolctl")

CASES = [("mlp", 64), ("cnn", 64), ("branches8", 64), ("transformer", 16),
         ("transformer_ops", 16)]
#: ONNX Runtime first: its 2-thread pool spins on the second core for a while after a run
MODES = ["ort2", "ort1", "compiled1", "compiled2"]
PARAMS = [(m, b, mode) for m, b in CASES for mode in MODES]


@pytest.fixture(scope="module", autouse=True)
def single_thread_blas():
    with threadpoolctl.threadpool_limits(1):
        yield


_ONNX: dict = {}


def _onnx_path(name, traced, tmp_path_factory):
    if name not in _ONNX:
        path = tmp_path_factory.mktemp("onnx") / f"{name}.onnx"
        traced.save_onnx(path)
        _ONNX[name] = path
    return _ONNX[name]


@pytest.mark.parametrize("name,batch,mode", PARAMS, ids=[f"{m}-b{b}-{o}" for m, b, o in PARAMS])
def test_compiled_threads(benchmark, name, batch, mode, tmp_path_factory):
    _, shape, traced = _model(name)
    feeds = {"input": models.feed(shape, batch)}
    benchmark.group = f"{name} b{batch} threads"
    benchmark.extra_info.update(model=name, batch=batch, mode=mode, suite="compiled_threads")
    if mode.startswith("ort"):
        version = onnxruntime_version()
        if version is None:
            pytest.skip("onnxruntime is not installed")
        call = ort_runner(_onnx_path(name, traced, tmp_path_factory), int(mode[-1]), feeds)
        for _ in range(10):
            call()
        benchmark.extra_info["onnxruntime"] = version
        assert benchmark(call)[0].shape[0] == batch
        return
    session = om.Session(traced, backend="compiled", threads=int(mode[-1]))
    for _ in range(10):
        session.run(feeds)
    result = benchmark(session.run, feeds)
    assert result["output"].shape[0] == batch
    if mode == "compiled2":
        benchmark.extra_info["splits"] = session._compiled.pool.jobs
