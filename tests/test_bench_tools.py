"""The measuring tools issue 26 added: declared FLOPs, what each backend runs on, and the
OpenVINO peer (run where openvino is installed: `make bench` installs it, `make test` not)."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import ops
from onemodel.registry import BackendDef, hookimpl
from onemodel.tools.flops import graph_flops
from onemodel.tools.machine import (backend_platforms, cpu_family, cpu_ghz, cpu_model,
                                    cpu_name, platform_text)
from onemodel.tools.peers import openvino_runner, openvino_version

SIZES = (12, 20, 7)


def _mlp():
    rng = np.random.default_rng(0)
    ws = [om.Tensor.from_numpy(rng.standard_normal((b, a)).astype(np.float32))
          for a, b in zip(SIZES[:-1], SIZES[1:])]

    def fn(x):
        for w in ws:
            x = ops.relu(ops.linear(x, w))
        return x

    example = om.Tensor.from_numpy(rng.standard_normal((3, SIZES[0])).astype(np.float32))
    return om.trace(fn, example, "batch", None)


def test_graph_flops_counts_each_gemm_twice_per_multiply_add():
    traced = _mlp()
    for batch in (1, 5):
        want = sum(2 * batch * a * b for a, b in zip(SIZES[:-1], SIZES[1:]))  # relu declares 0
        assert graph_flops(traced.graph, {"batch": batch}) == want


def test_the_compiled_backend_says_which_kernel_copy_runs():
    if "compiled" not in om.backends():
        pytest.skip("the compiled backend is not installed")
    info = backend_platforms()["compiled"]
    assert info["isa"] in ("avx512", "avx2", "generic")
    pipes = 2 if info["isa"] in ("avx512", "avx2") else 1
    if info["isa"] == "avx512" and cpu_family() == ("AuthenticAMD", 25):
        pipes = 1  # Zen 4: 512-bit operations at half rate
    model = cpu_model()
    if info["isa"] == "avx2" and model and model[:2] == ("AuthenticAMD", 23) and model[2] < 0x30:
        pipes = 1  # Zen 1 / Zen+: 128-bit FMA pipes, a 256-bit FMA takes both
    if cpu_ghz():
        assert info["peak_gflops"] == pytest.approx(info["lanes"] * 2 * pipes * cpu_ghz(),
                                                    rel=0.01)
    assert info["isa"] in platform_text(info) and info["kernels"]
    mixed = dict(info, isa="avx512", kernels="avx512 (gemm) + avx2 (18)")
    assert platform_text(mixed).startswith("avx512 (kernels: avx512 (gemm) + avx2 (18))")
    assert cpu_name()


def test_a_platform_that_raises_is_reported_not_hidden():
    class Broken:
        @hookimpl
        def onemodel_backends(self):
            def boom():
                raise RuntimeError("no cpuid here")
            return (BackendDef(name="broken-platform", create=lambda **o: None, platform=boom),)

    name = om.registry.register(Broken())
    try:
        text = backend_platforms()["broken-platform"]["isa"]
        assert "RuntimeError" in text and "no cpuid here" in text
    finally:
        om.registry.unregister(name)


def test_onemodel_info_prints_the_platform_of_the_auto_backend(tmp_path, capsys):
    from onemodel.cli import main
    from onemodel.core.backend_choice import choose_backend
    from onemodel.registry import REGISTRY

    traced = _mlp()
    path = tmp_path / "m.onemodel"
    traced.save(path)
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    chosen = choose_backend(traced.graph, REGISTRY.tables().backends).chosen
    plat = backend_platforms().get(chosen)
    if plat is None:
        assert "platform:" not in out
    else:
        assert f"platform: {platform_text(plat)}" in out


def test_bench_json_has_the_cpu_platforms_and_gflops(tmp_path, capsys):
    import json

    from onemodel.cli import main

    path = tmp_path / "m.onemodel"
    _mlp().save(path)
    assert main(["bench", str(path), "--backend", "numpy", "--runs", "2", "--warmup", "0",
                 "--no-ort", "--no-openvino", "--json", "--batch", "4"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cpu"] and isinstance(data["platforms"], dict)
    assert data["flops"] == sum(2 * 4 * a * b for a, b in zip(SIZES[:-1], SIZES[1:]))
    (row,) = data["results"]
    assert row["gflops"] == pytest.approx(data["flops"] / row["median_s"] / 1e9)


def test_openvino_runs_the_exported_model_as_our_session_does(tmp_path):
    if openvino_version() is None:
        pytest.skip("openvino is not installed here (make bench installs it)")
    traced = _mlp()
    path = tmp_path / "m.onnx"
    traced.save_onnx(path)
    x = np.random.default_rng(1).standard_normal((4, SIZES[0])).astype(np.float32)
    out = openvino_runner(path, 1, {traced.input_names[0]: x})()
    got = next(iter(out.values()))
    want = om.Session(traced, backend="numpy").run({traced.input_names[0]: x})
    np.testing.assert_allclose(got, want[traced.output_names[0]].numpy(), rtol=1e-5, atol=1e-5)
