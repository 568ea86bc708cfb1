"""``--threads`` on ``onemodel run`` and ``onemodel bench``: passed to every session, and the
thread settings stated in bench's output (as `make demo` states them)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.core.threads import cores


def cli(*args):
    proc = subprocess.run([sys.executable, "-m", "onemodel.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("threads")
    om.manual_seed(0)
    model = om.nn.Sequential(om.nn.Linear(6, 8), om.nn.ReLU(), om.nn.Linear(8, 2))
    traced = model.trace(Tensor.zeros(DType.F32, 4, 6), "batch", None)
    traced.save(tmp / "m.onemodel")
    x = np.ones((3, 6), np.float32)
    np.save(tmp / "x.npy", x)
    with om.GradMode.no_grad():
        expected = model(Tensor.from_numpy(x)).numpy()
    return tmp, expected


@pytest.mark.parametrize("backend", ["numpy", "threaded"])
def test_run_with_threads(files, backend):
    tmp, expected = files
    code, out, err = cli("run", tmp / "m.onemodel", "--input", f"input={tmp / 'x.npy'}",
                         "--backend", backend, "--threads", "2", "--output-dir", tmp / backend)
    assert code == 0, err
    np.testing.assert_allclose(np.load(tmp / backend / "output.npy"), expected, rtol=1e-5,
                               atol=1e-6)


def test_run_with_bad_threads_is_one_line_naming_it(files):
    tmp, _ = files
    code, _, err = cli("run", tmp / "m.onemodel", "--input", f"input={tmp / 'x.npy'}",
                       "--threads", "0")
    assert code == 1
    assert err.strip().splitlines() == [
        "onemodel: error: Session: threads must be a positive int, got 0 (None: the "
        "backend's default)"]


def test_bench_states_the_thread_settings(files):
    tmp, _ = files
    code, out, err = cli("bench", tmp / "m.onemodel", "--runs", "2", "--warmup", "0",
                         "--no-ort")
    assert code == 0, err
    # the note wraps to the terminal's width (COLUMNS): compare with whitespace collapsed
    assert f"threads: numpy threads=1, compiled threads=1, threaded threads={cores()} (BLAS " \
           f"bounded inside each run)" in " ".join(out.split())
    assert "numpy (1 thread)" in out
    code, out, err = cli("bench", tmp / "m.onemodel", "--runs", "2", "--warmup", "0",
                         "--no-ort", "--threads", "2")
    assert code == 0, err
    assert "threads: numpy threads=2, compiled threads=2, threaded threads=2" in \
        " ".join(out.split())
    assert "numpy (2 threads)" in out and "threaded (2 threads)" in out
