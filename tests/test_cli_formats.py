"""``onemodel convert`` and ``onemodel info``."""
from __future__ import annotations

import json

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.cli import main
from onemodel.core.interpreter import run_graph
from onemodel.formats import load_graph, load_onnx


@pytest.fixture
def model_file(tmp_path):
    om.manual_seed(0)
    m = om.nn.Sequential(om.nn.Linear(4, 8), om.nn.ReLU(), om.nn.Linear(8, 2))
    path = tmp_path / "mlp.onemodel"
    m.trace(Tensor.zeros(DType.F32, 3, 4), "batch", None).save(path)
    return path


def test_convert_both_ways_keeps_results(model_file, tmp_path, capsys):
    onnx_path = tmp_path / "mlp.onnx"
    back = tmp_path / "back.onemodel"
    assert main(["convert", str(model_file), str(onnx_path)]) == 0
    assert "ONNX opset" in capsys.readouterr().out
    assert main(["convert", str(onnx_path), str(back)]) == 0
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    want = run_graph(load_graph(model_file), {"input": x})["output"]
    np.testing.assert_allclose(run_graph(load_onnx(onnx_path), {"input": x})["output"], want,
                               rtol=1e-6)
    np.testing.assert_allclose(run_graph(load_graph(back), {"input": x})["output"], want,
                               rtol=1e-6)


def test_convert_opset(model_file, tmp_path):
    onnx = pytest.importorskip("onnx")
    out = tmp_path / "m.onnx"
    assert main(["convert", str(model_file), str(out), "--opset", "17"]) == 0
    assert onnx.load(out).opset_import[0].version == 17


@pytest.mark.parametrize("args,needle", [
    (["x.onemodel", "y.txt"], "unknown extension"),
    (["missing.onemodel", "y.onnx"], "no such file"),
])
def test_convert_errors(tmp_path, capsys, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.onemodel").write_bytes(b"")
    assert main(["convert", *args]) == 1
    assert needle in capsys.readouterr().err


def test_info_text_and_json(model_file, capsys):
    assert main(["info", str(model_file)]) == 0
    out = capsys.readouterr().out
    assert "[batch, 4]" in out and "symbolic axes: batch" in out
    assert "linear  2" in out and "58 values" in out
    assert main(["info", str(model_file), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["inputs"] == [{"name": "input", "dtype": "f32", "shape": ["batch", 4]}]
    assert d["outputs"][0]["shape"] == ["batch", 2]
    assert d["ops"] == {"linear": 2, "relu": 1}
    assert d["parameters"] == 4 * 8 + 8 + 8 * 2 + 2 and d["parameter_bytes"] == 58 * 4
    assert d["format"] == "onemodel" and d["format_version"] == "1.0"


def test_info_on_onnx(model_file, tmp_path, capsys):
    onnx_path = tmp_path / "m.onnx"
    main(["convert", str(model_file), str(onnx_path)])
    capsys.readouterr()
    assert main(["info", str(onnx_path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["format"] == "onnx" and d["opset"] >= 17
    assert d["symbolic_axes"] == ["batch"]


def test_info_on_a_broken_file(tmp_path, capsys):
    p = tmp_path / "bad.onemodel"
    p.write_bytes(b"not a zip")
    assert main(["info", str(p)]) == 1
    assert "not a zip" in capsys.readouterr().err
