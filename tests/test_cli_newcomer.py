"""The command line as a newcomer meets it: every table and help page fits an 80-column terminal,
--json everywhere a table is printed, examples keep their lines, ``run`` casts numpy's float64
files with ``--cast`` (and only with it: session.run never casts), ``info`` describes a file
whose plugin is missing."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.cli import main
from onemodel.cli._table import render
from onemodel.core import TensorType
from onemodel.registry import OpDef, Sample, hookimpl


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("newcomer")
    om.manual_seed(0)
    model = om.nn.Sequential(om.nn.Linear(3, 8), om.nn.ReLU(), om.nn.Linear(8, 2))
    traced = model.trace(Tensor.zeros(DType.F32, 4, 3), "batch", None)
    traced.save(tmp / "m.onemodel")
    traced.save_onnx(tmp / "m.onnx")
    x = np.random.default_rng(0).standard_normal((5, 3))  # numpy's default: float64
    np.save(tmp / "x64.npy", x)
    np.save(tmp / "exact64.npy", np.arange(15.0).reshape(5, 3))
    emb = om.nn.Embedding(10, 4)
    emb.trace(Tensor.zeros(DType.I64, 3, 2), "batch", None).save(tmp / "emb.onemodel")
    np.save(tmp / "ids_float.npy", np.array([[1.0, 2.0], [3.5, 9.0]]))
    np.save(tmp / "ids_i32.npy", np.array([[1, 2], [3, 9]], np.int32))
    np.save(tmp / "x_int.npy", np.arange(15, dtype=np.int64).reshape(5, 3))
    return tmp, model, x


def run_cli(capsys, monkeypatch, *args, columns=80):
    monkeypatch.setenv("COLUMNS", str(columns))
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # --help
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


TABLE_COMMANDS = [
    ["ops"], ["ops", "--long"], ["ops", "layer_norm", "dropout"], ["plugins"],
    ["info", "{m}"], ["info", "{onnx}"],
    ["bench", "{m}", "--runs", "1", "--warmup", "0", "--no-ort"],
    ["run", "{m}", "--input", "input={x}", "--cast"], ["cache"],
]


@pytest.mark.parametrize("args", TABLE_COMMANDS, ids=lambda a: " ".join(a))
def test_tables_fit_80_columns(files, capsys, monkeypatch, args):
    tmp, _, _ = files
    args = [a.format(m=tmp / "m.onemodel", onnx=tmp / "m.onnx", x=tmp / "x64.npy") for a in args]
    code, out, err = run_cli(capsys, monkeypatch, *args)
    assert code == 0, err
    assert out.strip() and widest(out) <= 80, "\n".join(l for l in out.splitlines() if len(l) > 80)


@pytest.mark.parametrize("command", ["", "ops", "plugins", "info", "show", "convert", "run",
                                     "bench", "cache"])
def test_help_fits_80_columns(capsys, monkeypatch, command):
    code, out, _ = run_cli(capsys, monkeypatch, *([command] if command else []), "--help")
    assert code == 0 and widest(out) <= 80


@pytest.mark.parametrize("command, example", [
    ("show", "  onemodel show model.onemodel\n"),
    ("info", "  onemodel info model.onemodel\n"),
    ("convert", "  onemodel convert model.onemodel model.onnx\n"),
    ("run", "  onemodel run model.onemodel --input input=x.npy --output-dir out/\n"),
    ("run", "  onemodel run model.onemodel --input input=x64.npy --cast\n"),
])
def test_help_examples_keep_their_lines(capsys, monkeypatch, command, example):
    _, out, _ = run_cli(capsys, monkeypatch, command, "--help")
    assert example in out


@pytest.mark.parametrize("command", ["run", "bench"])
def test_optimization_has_help(capsys, monkeypatch, command):
    _, out, _ = run_cli(capsys, monkeypatch, command, "--help", columns=200)
    options = out.split("options:", 1)[1]
    entry = options.split("--optimization", 1)[1].split("\n  -", 1)[0]
    assert "fusions" in entry


def test_ops_short_table_has_no_always_yes_column(capsys, monkeypatch):
    _, out, _ = run_cli(capsys, monkeypatch, "ops")
    header = out.splitlines()[0].split()
    assert header == ["op", "plugin", "grad", "trace", "ONNX", "kernels"]
    rows = {l.split()[0]: l.split() for l in out.splitlines()[2:] if l and not l[0].isspace()}
    assert rows["relu"][3] == "yes" and rows["cross_entropy"][3] == "no"
    assert rows["dropout"][3] == "params"


def test_ops_name_shows_details_and_unknown_name_is_an_error(capsys, monkeypatch):
    code, out, _ = run_cli(capsys, monkeypatch, "ops", "layer_norm")
    assert code == 0
    assert out.startswith("layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-05)")
    assert "LayerNormalization" in out and "normalized_shape" in out
    code, _, err = run_cli(capsys, monkeypatch, "ops", "rleu")
    assert code == 1 and "did you mean relu" in err


def test_ops_json_is_the_registry(capsys, monkeypatch):
    code, out, _ = run_cli(capsys, monkeypatch, "ops", "--json")
    data = {d["name"]: d for d in json.loads(out)}
    assert set(data) == set(om.registry.ops())
    assert data["relu"]["gradient"] is True and data["relu"]["traceable"] is True
    assert data["cross_entropy"]["traceable"] is False and data["cross_entropy"]["trace_refusal"]
    assert data["dropout"]["traceable"] == "depends on params"
    assert "Relu" in data["relu"]["onnx"]["imports"]
    assert data["linear"]["signature"] == "linear(x, weight, bias=None)"


def test_plugins_and_bench_json(files, capsys, monkeypatch):
    tmp, _, _ = files
    code, out, _ = run_cli(capsys, monkeypatch, "plugins", "--json")
    plugins = {p["distribution"]: p for p in json.loads(out)}
    assert code == 0 and "onemodel-ops-basic" in plugins
    assert plugins["onemodel-ops-basic"]["contributes"]["ops"]
    code, out, _ = run_cli(capsys, monkeypatch, "bench", tmp / "m.onemodel", "--runs", "2",
                           "--warmup", "0", "--no-ort", "--no-openvino", "--backend", "numpy",
                           "--json")
    data = json.loads(out)
    assert code == 0 and [r["backend"].split()[0] for r in data["results"]] == ["numpy"]
    assert data["results"][0]["median_s"] > 0 and data["feeds"]["input"]["dtype"] == "float32"


def test_table_wraps_long_cells_within_the_width():
    text = render(["name", "reason"], [["relu", "word " * 40], ["x", "short"]], width=40)
    assert widest(text) <= 40
    assert " ".join(text.split()).count("word") == 40  # nothing lost, only wrapped
    assert render(["a"], [["b" * 100]], width=None).splitlines()[2] == "b" * 100


# -- run: a feed of another dtype is cast only with --cast, as session.run never casts ----------
REFUSED = [  # model file, .npy file, the model's dtype, the file's
    ("m.onemodel", "x64.npy", "f32", "float64"),      # numpy's float default, within a kind
    ("m.onnx", "x_int.npy", "f32", "int64"),          # integers for a float input
    ("emb.onemodel", "ids_float.npy", "i64", "float64"),
    ("emb.onemodel", "ids_i32.npy", "i64", "int32"),  # a wider int: still a cast
]


@pytest.mark.parametrize("model_file,npy,want,have", REFUSED, ids=lambda v: str(v))
def test_run_refuses_another_dtype_without_cast_as_session_run_does(files, capsys, monkeypatch,
                                                                    model_file, npy, want, have):
    tmp, _, _ = files
    code, out, err = run_cli(capsys, monkeypatch, "run", tmp / model_file, "--input",
                             f"input={tmp / npy}")
    assert code == 1 and out == ""
    line = err.strip()
    assert len(line.splitlines()) == 1, err
    for part in ("input 'input'", f"takes {want}", f"{tmp / npy} holds {have}", "--cast"):
        assert part in line, (part, line)
    load = om.load_onnx if model_file.endswith(".onnx") else om.load
    with load(tmp / model_file).create_session() as session:  # the API refuses it too
        with pytest.raises(om.SessionError, match=f"input 'input': expected dtype {want}"):
            session.run({"input": np.load(tmp / npy)})


def test_run_with_cast_converts_with_a_note_saying_how_much_changed(files, capsys, monkeypatch):
    tmp, model, x = files
    code, out, err = run_cli(capsys, monkeypatch, "run", tmp / "m.onemodel", "--input",
                             f"input={tmp / 'x64.npy'}", "--output-dir", tmp / "out64", "--cast")
    assert code == 0, err
    assert "float64 cast to f32 (lossy: 15 of 15 values changed, by up to" in err
    expected = model(Tensor.from_numpy(x.astype(np.float32))).numpy()
    np.testing.assert_allclose(np.load(tmp / "out64" / "output.npy"), expected, rtol=1e-6)
    code, out, err = run_cli(capsys, monkeypatch, "run", tmp / "m.onnx", "--input",
                             f"input={tmp / 'exact64.npy'}", "--cast")
    assert code == 0 and "float64 cast to f32 (no value changed)" in err
    code, out, err = run_cli(capsys, monkeypatch, "run", tmp / "m.onnx", "--input",
                             f"input={tmp / 'x_int.npy'}", "--cast")
    assert code == 0 and "int64 cast to f32 (no value changed)" in err
    code, out, err = run_cli(capsys, monkeypatch, "run", tmp / "emb.onemodel", "--input",
                             f"input={tmp / 'ids_float.npy'}", "--cast")
    assert code == 0, err
    assert "float64 cast to i64 (lossy: 1 of 4 values changed, by up to 0.5)" in err


def test_run_of_the_models_dtype_needs_no_cast_and_prints_no_note(files, capsys, monkeypatch):
    tmp, model, x = files
    np.save(tmp / "x32.npy", x.astype(np.float32))
    code, out, err = run_cli(capsys, monkeypatch, "run", tmp / "m.onemodel", "--input",
                             f"input={tmp / 'x32.npy'}")
    assert code == 0 and err == "" and "output: f32[5, 2]" in out


# -- info: a file whose plugin is missing ---------------------------------------------------------
def _triple_plugin():
    op = OpDef(name="triple_it_test", inputs=("x",), kernel=lambda x: x * 3,
               infer=lambda t: TensorType(t.dtype, t.shape), vjp=None,
               samples=lambda rng: [Sample(args=(np.ones(2),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    return Plugin()


def test_info_describes_a_file_whose_plugin_is_missing(tmp_path, capsys, monkeypatch):
    om.registry.register(_triple_plugin(), "triple-test")
    try:
        lin = om.nn.Linear(3, 2)
        traced = om.trace(lambda x: om.ops.triple_it_test(lin(x)), Tensor.zeros(DType.F32, 4, 3),
                          "batch", None)
        traced.save(tmp_path / "t.onemodel")
    finally:
        om.registry.unregister("triple-test")
    code, out, err = run_cli(capsys, monkeypatch, "info", tmp_path / "t.onemodel")
    assert code == 0, err
    assert "no installed plugin provides triple_it_test" in " ".join(out.split())
    assert "'triple-test'" in out
    assert "input f32 [batch, 3]" in " ".join(out.split()) and "triple_it_test  1" in out
    assert "parameters: 8 values" in out and widest(out) <= 80
    code, out, _ = run_cli(capsys, monkeypatch, "info", tmp_path / "t.onemodel", "--json")
    d = json.loads(out)
    assert d["loaded"] is False and d["missing_ops"]["triple_it_test"]["plugin"] == "triple-test"
    assert d["ops"] == {"linear": 1, "triple_it_test": 1} and d["parameter_bytes"] == 32
    code, _, err = run_cli(capsys, monkeypatch, "run", tmp_path / "t.onemodel")
    assert code == 1 and "triple_it_test" in err  # run still refuses, naming the op


def test_info_describes_an_onnx_file_with_an_unsupported_op(tmp_path, capsys, monkeypatch):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("NoSuchOnnxOp", ["r"], ["y"], domain="example.custom")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("example.custom", 1)])
    onnx.save(m, tmp_path / "u.onnx")
    code, out, err = run_cli(capsys, monkeypatch, "info", tmp_path / "u.onnx")
    assert code == 0, err
    assert "cannot load it here" in out and "NoSuchOnnxOp" in out
    assert "x f32 [batch, 3]" in " ".join(out.split())


def test_info_still_fails_on_a_broken_file(tmp_path, capsys, monkeypatch):
    (tmp_path / "b.onemodel").write_bytes(b"PK not really")
    code, _, err = run_cli(capsys, monkeypatch, "info", tmp_path / "b.onemodel")
    assert code == 1 and err.startswith("onemodel: error:")


def test_cli_subprocess_at_80_columns():
    """The real entry point, as a shell runs it."""
    proc = subprocess.run([sys.executable, "-m", "onemodel.cli", "ops"], capture_output=True,
                          text=True, timeout=120, env={**__import__("os").environ, "COLUMNS": "80"})
    assert proc.returncode == 0 and widest(proc.stdout) <= 80
