"""Every `onemodel` command, run as a subprocess, including bad input."""
import os
import subprocess
import sys

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor


def cli(*args, cwd=None, env=None):
    proc = subprocess.run([sys.executable, "-m", "onemodel.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=120,
                          env=None if env is None else {**os.environ, **env})
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    om.manual_seed(0)
    model = om.nn.Sequential(om.nn.Linear(3, 8), om.nn.ReLU(), om.nn.Linear(8, 2))
    traced = model.trace(Tensor.zeros(DType.F32, 4, 3), "batch", None)
    traced.save(tmp / "m.onemodel")
    traced.save_onnx(tmp / "m.onnx")
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.save(tmp / "x.npy", x)
    expected = model(Tensor.from_numpy(x)).numpy()
    return tmp, expected


@pytest.mark.parametrize("command", ["", "ops", "plugins", "info", "show", "convert", "run", "bench",
                                     "cache"])
def test_help_everywhere(command):
    code, out, _ = cli(*([command] if command else []), "--help")
    assert code == 0 and "usage: onemodel" in out
    if command:
        assert "example" in out


def test_ops_table_and_markdown():
    # wide enough for whole rows: at 80 columns a long op name (binary_cross_entropy_with_logits)
    # makes the plugin column wrap, which test_cli_newcomer checks
    code, out, _ = cli("ops", env={"COLUMNS": "200"})
    assert code == 0 and "relu" in out and "onemodel-ops-basic" in out and "trace" in out
    code, md, _ = cli("ops", "--markdown")
    assert code == 0 and md.startswith("| op |") and "| ctc_loss |" in md


def test_plugins_lists_distributions():
    code, out, _ = cli("plugins")
    assert code == 0 and "onemodel-ops-nn" in out and "onemodel-backend-numpy" in out


def test_show_text_and_dot(model_files):
    tmp, _ = model_files
    code, out, _ = cli("show", tmp / "m.onemodel")
    assert code == 0 and out.startswith("graph (%input: f32[batch,3])")
    code, dot, _ = cli("show", tmp / "m.onnx", "--dot")
    assert code == 0 and dot.startswith("digraph onemodel") and "-> o:output" in dot.replace("\"", "")


def test_run_prints_and_writes_outputs(model_files, tmp_path):
    tmp, expected = model_files
    for f in ("m.onemodel", "m.onnx"):
        out_dir = tmp_path / f
        code, out, err = cli("run", tmp / f, "--input", f"input={tmp / 'x.npy'}", "--output-dir", out_dir)
        assert code == 0, err
        assert "output: f32[5, 2]" in out
        np.testing.assert_allclose(np.load(out_dir / "output.npy"), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("args,message", [
    (["show", "missing.onemodel"], "no such file"),
    (["show", "model.txt"], "expected a .onemodel or .onnx file"),
    (["run", "{m}", "--input", "nope={x}"], "nope"),
    (["run", "{m}", "--input", "input={bad}"], "not a valid .npy file"),
    (["run", "{m}", "--input", "input"], "expected NAME=FILE.npy"),
    (["info", "{bad}"], ""),
])
def test_bad_input_is_one_line_without_traceback(model_files, args, message):
    tmp, _ = model_files
    (tmp / "bad.npy").write_bytes(b"not numpy at all")
    (tmp / "model.txt").write_text("x")
    args = [a.format(m=tmp / "m.onemodel", x=tmp / "x.npy", bad=tmp / "bad.npy") for a in args]
    code, out, err = cli(*args, cwd=tmp)
    assert code != 0
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("onemodel: error:")
    assert message in err


def test_debug_shows_the_traceback(model_files):
    tmp, _ = model_files
    code, _, err = cli("--debug", "show", tmp / "missing.onemodel")
    assert code != 0 and "Traceback" in err
