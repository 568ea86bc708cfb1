"""``onemodel bench``, run as a subprocess (few runs, so it stays fast)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor


def cli(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "onemodel.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    om.manual_seed(0)
    model = om.nn.Sequential(om.nn.Linear(6, 8), om.nn.ReLU(), om.nn.Linear(8, 2))
    traced = model.trace(Tensor.zeros(DType.F32, 4, 6), "batch", None)
    traced.save(tmp / "m.onemodel")
    return tmp / "m.onemodel"


def test_bench_prints_a_table_and_progress(model_file):
    code, out, err = cli("bench", model_file, "--backend", "numpy,threaded", "--batch", "5",
                         "--threads", "2", "--runs", "3", "--warmup", "1", "--no-ort",
                         "--no-openvino")
    assert code == 0, err
    assert "input (5, 6) float32 (batch=5)" in out
    assert "3 runs after 1 warm-up" in out
    lines = out.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("backend"))
    assert lines[header].split() == ["backend", "median", "p10", "p90", "vs", "fastest",
                                     "GFLOP/s"]
    rows = [ln.split()[0] for ln in lines[header + 2:header + 4]]
    assert rows == ["numpy", "threaded"]
    cold = next(i for i, ln in enumerate(lines) if ln.startswith("backend") and i > header)
    assert lines[cold].split() == ["backend", "session", "first", "run", "first", "/",
                                   "median"]
    assert [ln.split()[0] for ln in lines[cold + 2:]] == ["numpy", "threaded"]
    assert "1.00x" in out
    # progress on stderr (one line per stage when stderr is not a terminal)
    assert "[1/2] timing numpy" in err and "[2/2] timing threaded" in err


def test_bench_default_backends_include_compiled(model_file):
    code, out, err = cli("bench", model_file, "--runs", "2", "--warmup", "0", "--no-ort",
                         "--no-openvino")
    assert code == 0, err
    lines = out.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("backend"))
    expected = [b for b in ("numpy", "compiled", "threaded") if b in om.backends()]
    rows = [ln.split()[0] for ln in lines[header + 2:header + 2 + len(expected)]]
    assert rows == expected and lines[header + 2 + len(expected)].startswith("cold costs")
    assert "compiled" in expected  # the plugin is installed with the project


def test_bench_json_has_the_cold_costs_and_a_fresh_process_start(model_file):
    import json

    code, out, err = cli("bench", model_file, "--backend", "numpy,compiled", "--runs", "2",
                         "--warmup", "0", "--no-ort", "--no-openvino", "--cold", "--json")
    assert code == 0, err
    data = json.loads(out)
    for row in data["results"]:
        # a session is created and run once before the timed runs: both measured, positive
        assert row["session_s"] > 0 and row["first_run_s"] > 0
    assert sorted(data["cold_start"]) == ["compiled", "numpy"]
    for times in data["cold_start"].values():
        assert sorted(times) == ["first_run_s", "import_s", "load_s", "session_s"]
        assert all(t > 0 for t in times.values())
    assert "[3/4] cold start of numpy in a fresh process" in err
    # only the compiled backend stores plans on disk: its cached start is timed too
    assert sorted(data["cold_start_cached"]) == ["compiled"]
    assert sorted(data["cold_start_cached"]["compiled"]) == sorted(data["cold_start"]["numpy"])


def test_bench_cold_table(model_file):
    code, out, err = cli("bench", model_file, "--backend", "compiled", "--runs", "2",
                         "--warmup", "0", "--no-ort", "--no-openvino", "--cold")
    assert code == 0, err
    assert "cold start, each backend in a fresh Python process" in out
    lines = out.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["backend", "import"])
    assert lines[header].split() == ["backend", "import", "load", "session", "first", "run",
                                     "total"]
    assert lines[header + 2].split()[0] == "compiled"
    # a second fresh process finds the plan the first stored in the (new, private) cache
    assert lines[header + 3].startswith("compiled, cached ")


def test_cold_start_names_the_backend_when_the_process_fails(tmp_path):
    from onemodel.errors import OneModelError
    from onemodel.tools.bench import cold_start

    with pytest.raises(OneModelError, match="cold start of backend 'numpy' failed"):
        cold_start(tmp_path / "missing.onemodel", "numpy", {"input": np.zeros((1, 6))})


def test_bench_with_onnxruntime(model_file):
    pytest.importorskip("onnxruntime")
    code, out, err = cli("bench", model_file, "--backend", "numpy", "--runs", "2",
                         "--warmup", "0", "--threads", "2")
    assert code == 0, err
    assert "onnxruntime" in out and "(1 thread)" in out and "(2 threads)" in out


@pytest.mark.parametrize("args,needle", [
    (["--backend", "gpu"], "unknown backend 'gpu'; installed backends:"),
    (["--batch", "0"], "--batch must be positive, got 0"),
    (["--dim", "seq"], "--dim 'seq': expected NAME=SIZE"),
    (["--threads", "-1"], "--threads must be positive"),
])
def test_bench_bad_input_is_one_line(model_file, args, needle):
    code, out, err = cli("bench", model_file, "--no-ort", "--no-openvino", *args)
    assert code == 1
    assert err.strip().splitlines() == [f"onemodel: error: {err.split('error: ', 1)[1].strip()}"]
    assert needle in err


def test_bench_missing_and_wrong_files(tmp_path):
    code, _, err = cli("bench", tmp_path / "nothing.onemodel")
    assert code == 1 and "no such file" in err
    (tmp_path / "m.txt").write_text("")
    code, _, err = cli("bench", tmp_path / "m.txt")
    assert code == 1 and "expected a .onemodel or .onnx file" in err
