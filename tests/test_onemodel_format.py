"""The OneModel file format: round trip, determinism, atomic writes, and a loader that refuses
malformed, too-new or hostile files with a FormatError saying what and where."""
from __future__ import annotations

import io
import json
import math
import os
import zipfile

import numpy as np
import pytest

import onemodel as om
from onemodel import DType
from onemodel.core.graph import GraphBuilder
from onemodel.core.interpreter import run_graph
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType
from onemodel.formats import onemodel_file, params_codec
from onemodel.formats.onemodel_file import dumps, load_graph, save_graph
from onemodel.registry import OnnxSpec, OpDef, Sample, hookimpl


def _graph():
    """input[batch,3] -> add w -> reshape(batch, 3) -> index [:, 1:] -> relu, with a bool and an
    int initializer kept alive by a where node."""
    b = GraphBuilder()
    B = Dim.symbol("batch")
    b.add_input("input", TensorType(DType.F32, (B, 3)))
    b.add_initializer("w", np.arange(3, dtype=np.float32) - 1.0)
    b.add_initializer("mask", np.array([True, False, True]))
    b.add_initializer("alt", np.array([7.5, -2.0, 0.25], dtype=np.float32))
    (a,) = b.add_node("add", ["input", "w"], [TensorType(DType.F32, (B, 3))], source="m.py:3")
    (r,) = b.add_node("reshape", [a.name], [TensorType(DType.F32, (B, 3))],
                      params={"shape": (B, -1)})
    (s,) = b.add_node("index", [r.name], [TensorType(DType.F32, (B, 1, 3))],
                      params={"index": (("slice", 0, None, None), None, "...")})
    (s2,) = b.add_node("reshape", [s.name], [TensorType(DType.F32, (B, 3))],
                       params={"shape": (B * 3 // 3, 3)})
    (c,) = b.add_node("clip", [s2.name], [TensorType(DType.F32, (B, 3))],
                      params={"min": -math.inf, "max": 1e30})
    (w,) = b.add_node("where", ["mask", c.name, "alt"], [TensorType(DType.F32, (B, 3))])
    (y,) = b.add_node("relu", [w.name], [TensorType(DType.F32, (B, 3))])
    return b.finish([("output", y.name)]).verify()


def _run(g, x):
    return run_graph(g, {"input": x})["output"]


def test_round_trip_keeps_the_graph(tmp_path):
    g = _graph()
    path = tmp_path / "m.onemodel"
    save_graph(g, path)
    g2 = load_graph(path)
    assert str(g2) == str(g)
    assert g2.format(sources=True) == g.format(sources=True)
    for n in (2, 5):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        np.testing.assert_array_equal(_run(g2, x), _run(g, x))
    assert g2.initializers["mask"].dtype == np.bool_
    assert isinstance(g2.inputs[0].shape[0], Dim)


def test_same_model_same_bytes(tmp_path):
    g = _graph()
    save_graph(g, tmp_path / "a.onemodel")
    save_graph(load_graph(tmp_path / "a.onemodel"), tmp_path / "b.onemodel")
    a = (tmp_path / "a.onemodel").read_bytes()
    assert a == (tmp_path / "b.onemodel").read_bytes() == dumps(g)
    with zipfile.ZipFile(tmp_path / "a.onemodel") as zf:
        names = zf.namelist()
        assert names == sorted(names)
        assert all(zi.date_time == (1980, 1, 1, 0, 0, 0) for zi in zf.infolist())
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["format"] == "onemodel" and manifest["format_version"] == "1.0"
    assert manifest["producer"] == f"onemodel {om.__version__}"
    assert manifest["ops"]["add"]["distribution"] == "onemodel-ops-basic"
    init = {i["name"]: i for i in manifest["graph"]["initializers"]}
    assert init["w"]["byte_length"] == 12 and init["w"]["dtype"] == "f32"
    assert manifest["graph"]["inputs"][0]["shape"] == ["batch", 3]


def test_traced_model_saves(tmp_path):
    w = om.Tensor.from_numpy(np.ones((2, 3), np.float32))

    def f(x):
        return om.ops.linear(x, w).relu()

    traced = om.trace(f, om.Tensor.zeros(DType.F32, 4, 3), "batch", None)
    onemodel_file.save(traced, tmp_path / "t.onemodel")
    g = onemodel_file.load(tmp_path / "t.onemodel")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(_run(g, x), _run(traced.graph, x))


def test_failed_save_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    g = _graph()
    path = tmp_path / "m.onemodel"
    save_graph(g, path)
    before = path.read_bytes()
    real = zipfile.ZipFile.writestr
    calls = {"n": 0}

    def boom(self, *a, **k):
        calls["n"] += 1
        raise OSError("disk full")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", boom)
    with pytest.raises(OSError, match="disk full"):
        save_graph(g, path)
    monkeypatch.setattr(zipfile.ZipFile, "writestr", real)
    assert calls["n"] == 1
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.onemodel"]


def test_unsavable_param_fails_before_touching_the_file(tmp_path):
    g = _graph()
    bad = g.replace(nodes=tuple(n if n.op != "relu" else type(n)(n.op, n.inputs, n.outputs,
                                                                 {"x": object()})
                                for n in g.nodes))
    path = tmp_path / "m.onemodel"
    with pytest.raises(om.FormatError, match="relu.*cannot be saved"):
        save_graph(bad, path)
    assert not path.exists() and os.listdir(tmp_path) == []


@pytest.mark.parametrize("value", [None, True, 3, -1.5, 1e-300, math.inf, -math.inf, "x", (1, 2),
                                   [1, (2, None)], DType.I64, Dim.symbol("batch") * 2 + 1,
                                   (0, ("slice", 1, None, None), None, "..."),
                                   {"a": (1,)}, slice(1, None, 2), Ellipsis])
def test_param_codec_round_trip(value):
    text = json.dumps(params_codec.encode(value), allow_nan=False)
    back = params_codec.decode(json.loads(text))
    assert back == value and type(back) is type(value)


def test_param_codec_nan():
    assert math.isnan(params_codec.decode(json.loads(json.dumps(params_codec.encode(math.nan)))))


# -- hostile and malformed files -------------------------------------------------------------------
def _rewrite(src, dst, manifest_fn=None, extra=(), drop=(), replace=None):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for zi in zin.infolist():
            if zi.filename in drop:
                continue
            data = zin.read(zi)
            if zi.filename == "manifest.json" and manifest_fn is not None:
                m = json.loads(data)
                manifest_fn(m)
                data = json.dumps(m).encode()
            if replace and zi.filename in replace:
                data = replace[zi.filename]
            zout.writestr(zi.filename, data)
        for name, data in extra:
            zout.writestr(name, data)


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "m.onemodel"
    save_graph(_graph(), path)
    return path


def test_newer_major_version_is_refused_naming_both(saved, tmp_path):
    bad = tmp_path / "new.onemodel"
    _rewrite(saved, bad, lambda m: m.update(format_version="2.3"))
    with pytest.raises(om.FormatError) as e:
        load_graph(bad)
    assert "2.3" in str(e.value) and "1.0" in str(e.value)


def test_newer_minor_version_loads(saved, tmp_path):
    ok = tmp_path / "minor.onemodel"
    _rewrite(saved, ok, lambda m: m.update(format_version="1.7"))
    assert str(load_graph(ok)) == str(_graph())


def test_unknown_op_names_the_distribution(saved, tmp_path):
    def change(m):
        for n in m["graph"]["nodes"]:
            if n["op"] == "relu":
                n["op"] = "fancy_act"
            if n["op"] == "clip":
                n["op"] = "other_op"
        m["ops"]["fancy_act"] = {"distribution": "onemodel-fancy", "version": "2.1.0",
                                 "plugin": "fancy"}
        m["ops"]["other_op"] = {"distribution": "other-dist", "version": "0.3", "plugin": "o"}

    bad = tmp_path / "unknown.onemodel"
    _rewrite(saved, bad, change)
    with pytest.raises(om.FormatError) as e:
        load_graph(bad)
    msg = str(e.value)
    assert "fancy_act" in msg and "onemodel-fancy 2.1.0" in msg
    assert "other_op" in msg and "other-dist 0.3" in msg


def test_plugin_op_records_its_distribution(tmp_path, registered):
    class Plugin:
        @staticmethod
        @hookimpl
        def onemodel_ops():
            return [OpDef(name="double_it", inputs=("x",), kernel=lambda x: x * 2,
                          infer=lambda x: x, vjp=None, samples=lambda rng: [Sample(args=())],
                          onnx=OnnxSpec())]

    registered(Plugin, "my_test_plugin")
    b = GraphBuilder()
    b.add_input("input", TensorType(DType.F32, (2,)))
    (y,) = b.add_node("double_it", ["input"], [TensorType(DType.F32, (2,))])
    g = b.finish([("output", y.name)])
    save_graph(g, tmp_path / "p.onemodel")
    with zipfile.ZipFile(tmp_path / "p.onemodel") as zf:
        assert json.loads(zf.read("manifest.json"))["ops"]["double_it"]["plugin"] == \
            "my_test_plugin"
    om.registry.unregister("my_test_plugin")
    with pytest.raises(om.FormatError, match="double_it.*my_test_plugin"):
        load_graph(tmp_path / "p.onemodel")


@pytest.mark.parametrize("entry", ["../evil.bin", "/abs/evil.bin", "data/../../x", "C:/x",
                                   "data\\..\\x"])
def test_path_traversal_entries_are_rejected(saved, tmp_path, entry):
    bad = tmp_path / "trav.onemodel"
    _rewrite(saved, bad, extra=[(entry, b"x")])
    with pytest.raises(om.FormatError, match="absolute or '..' paths"):
        load_graph(bad)


def test_declared_size_must_match(saved, tmp_path):
    def change(m):
        m["graph"]["initializers"][0]["byte_length"] += 4
    bad = tmp_path / "size.onemodel"
    _rewrite(saved, bad, change)
    with pytest.raises(om.FormatError, match="byte_length"):
        load_graph(bad)


def test_entry_size_must_match_declaration(saved, tmp_path):
    with zipfile.ZipFile(saved) as zf:
        m = json.loads(zf.read("manifest.json"))
    entry = next(i for i in m["graph"]["initializers"] if i["name"] == "w")["data"]
    bad = tmp_path / "short.onemodel"
    _rewrite(saved, bad, replace={entry: b"\0" * 8})
    with pytest.raises(om.FormatError, match="holds 8 bytes"):
        load_graph(bad)


def test_huge_dims_are_refused_before_allocating(saved, tmp_path):
    def change(m):
        init = m["graph"]["initializers"][0]
        init["shape"] = [2 ** 40, 2 ** 40]
        init["byte_length"] = 2 ** 80
    bad = tmp_path / "huge.onemodel"
    _rewrite(saved, bad, change)
    with pytest.raises(om.FormatError, match="more than the limit"):
        load_graph(bad)

    def change2(m):
        init = m["graph"]["initializers"][0]
        init["shape"] = [2 ** 20, 2 ** 19]
        init["byte_length"] = 2 ** 39 * 4
        m["graph"]["data_bytes"] = 2 ** 41
    bad2 = tmp_path / "huge2.onemodel"
    _rewrite(saved, bad2, change2)
    with pytest.raises(om.FormatError, match="more than the limit"):
        load_graph(bad2, max_bytes=2 ** 30)


def test_compression_bomb_is_refused(tmp_path):
    """A deflated entry whose header claims the declared size but that inflates to more."""
    g = _graph()
    path = tmp_path / "m.onemodel"
    save_graph(g, path)
    with zipfile.ZipFile(path) as zf:
        m = json.loads(zf.read("manifest.json"))
    init = next(i for i in m["graph"]["initializers"] if i["name"] == "w")
    bomb = tmp_path / "bomb.onemodel"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bomb, "w") as zout:
        for zi in zin.infolist():
            data = zin.read(zi)
            if zi.filename == init["data"]:
                data = b"\0" * (10 * 1024 * 1024)  # far more than the 12 declared bytes
                zout.writestr(zipfile.ZipInfo(zi.filename), data, zipfile.ZIP_DEFLATED)
            else:
                zout.writestr(zi.filename, data)
    # lie in the central directory: claim the declared size
    raw = bytearray(bomb.read_bytes())
    with zipfile.ZipFile(bomb) as zf:
        zi = zf.getinfo(init["data"])
        real = zi.file_size
    needle = real.to_bytes(4, "little")
    idx = raw.rfind(needle)
    raw[idx:idx + 4] = (12).to_bytes(4, "little")
    lhdr = raw.find(needle)
    raw[lhdr:lhdr + 4] = (12).to_bytes(4, "little")
    bomb.write_bytes(bytes(raw))
    with pytest.raises(om.FormatError):
        load_graph(bomb)


def test_ratio_bomb_header_is_refused(saved, tmp_path):
    data = b"\0" * (4 * 1024 * 1024)
    bad = tmp_path / "ratio.onemodel"
    with zipfile.ZipFile(saved) as zin, zipfile.ZipFile(bad, "w") as zout:
        for zi in zin.infolist():
            zout.writestr(zi.filename, zin.read(zi))
        zout.writestr(zipfile.ZipInfo("data/extra.bin"), data, zipfile.ZIP_DEFLATED)
    raw = bytearray(bad.read_bytes())
    needle = len(data).to_bytes(4, "little")
    for _ in range(2):  # local header and central directory: claim 2 GiB
        i = raw.find(needle)
        raw[i:i + 4] = (2 ** 31 - 1).to_bytes(4, "little")
    bad.write_bytes(bytes(raw))
    with zipfile.ZipFile(bad) as zf:
        zi = zf.getinfo("data/extra.bin")
        assert zi.file_size > 1100 * zi.compress_size
    with pytest.raises(om.FormatError, match="compression bomb"):
        load_graph(bad)


@pytest.mark.parametrize("change,match", [
    (lambda m: m["graph"]["nodes"][1].update(inputs=["nowhere"]), "not defined"),
    (lambda m: m["graph"]["nodes"][0]["outputs"][0].update(dtype="f128"), "unknown dtype"),
    (lambda m: m["graph"]["inputs"][0].update(shape=["batch", -3]), "out of range"),
    (lambda m: m["graph"]["inputs"][0].update(shape=["__import__('os')", 3]), "malformed"),
    (lambda m: m["graph"]["outputs"][0].update(value="ghost"), "undefined value"),
    (lambda m: m["graph"]["nodes"][0].update(op="Bad-Op"), "malformed"),
    (lambda m: m["graph"]["nodes"][1]["params"].update(shape={"$pickle": "x"}),
     "unknown param tag"),
    (lambda m: m["graph"]["nodes"][1]["outputs"][0].update(name="input"), "already defined"),
    (lambda m: m["graph"]["nodes"][1]["outputs"][0].update(shape=["batch", 4]), "not valid"),
    (lambda m: m.update(format="other"), "format"),
    (lambda m: m.update(format_version="one"), "MAJOR.MINOR"),
    (lambda m: m["graph"].update(data_bytes=1), "data_bytes"),
])
def test_malformed_manifests_are_reported(saved, tmp_path, change, match):
    bad = tmp_path / "bad.onemodel"
    _rewrite(saved, bad, change)
    with pytest.raises(om.FormatError, match=match):
        load_graph(bad)


def test_not_a_zip_and_missing_manifest(tmp_path, saved):
    p = tmp_path / "junk.onemodel"
    p.write_bytes(b"hello")
    with pytest.raises(om.FormatError, match="not a zip"):
        load_graph(p)
    q = tmp_path / "nomanifest.onemodel"
    _rewrite(saved, q, drop=("manifest.json",))
    with pytest.raises(om.FormatError, match="no manifest.json"):
        load_graph(q)
    with pytest.raises(FileNotFoundError):
        load_graph(tmp_path / "absent.onemodel")


def test_loading_runs_no_code(saved, tmp_path):
    """Params are data: a pickle-looking or code-looking value stays a string."""
    def change(m):
        m["graph"]["nodes"][0]["source"] = "__import__('os').system('echo hi')"
    p = tmp_path / "src.onemodel"
    _rewrite(saved, p, change)
    g = load_graph(p)
    assert g.nodes[0].source.startswith("__import__")


def test_file_object_loading(saved):
    g = load_graph(io.BytesIO(saved.read_bytes()))
    assert str(g) == str(_graph())
