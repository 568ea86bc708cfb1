"""Malicious model files: payloads that would run code if anything unpickled, imported or
evaluated text from the file. Each plants a payload that creates a marker file, then loads the
model, makes a session and runs it under `hostile.guard` (no write, exec, spawn or unpickling);
the marker must not exist afterwards. ONNX external data outside the model's folder is refused.
"""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import onemodel as om
from onemodel import DType
from onemodel.core.graph import GraphBuilder
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType
from onemodel.formats import load as load_any
from onemodel.formats.onemodel_file import dumps

from .hostile import guard, read_zip, write_zip

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402


class _Payload:
    """Unpickling this creates the marker file (what an attacker's pickle would do)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _pickle_bytes(marker) -> bytes:
    return pickle.dumps(_Payload(marker), protocol=2)


def _u8_graph(payload: bytes):
    """input u8[batch, n] + c (an initializer holding ``payload``) -> output."""
    gb = GraphBuilder()
    B = Dim.symbol("batch")
    n = len(payload)
    gb.add_input("input", TensorType(DType.U8, (B, n)))
    gb.add_initializer("c", np.frombuffer(payload, np.uint8).copy())
    y, = gb.add_node("add", ["input", "c"], [TensorType(DType.U8, (B, n))], source="evil.py:1")
    return gb.finish([("output", y.name)]).verify()


def _load_and_run(path, watched):
    """Load, make a session and run it, with the guard on; returns the outputs or the error."""
    with guard(str(watched)):
        try:
            model = load_any(path)  # either format, by extension or content
        except om.OneModelError as exc:
            return exc
    with guard(str(watched), allow_exec=True):  # a session compiles its own generated plan
        try:
            s = om.Session(model)
            feeds = {}
            for v in s.inputs:
                shape = tuple(2 if isinstance(d, str) else d for d in v.shape)
                feeds[v.name] = np.zeros(shape, v.dtype.numpy)
            return s.run(feeds)
        except om.OneModelError as exc:
            return exc


@pytest.fixture
def marker(tmp_path):
    m = tmp_path / "outside" / "PWNED"
    m.parent.mkdir()
    yield m
    assert not m.exists(), "a payload ran"


def test_the_payload_works_when_unpickled(tmp_path):
    """The control: unpickling these bytes does create the marker."""
    m = tmp_path / "control"
    pickle.loads(_pickle_bytes(m))  # noqa: S301 - the point of the control
    assert m.exists()


def test_pickle_in_a_data_entry_is_only_bytes(tmp_path, marker):
    payload = _pickle_bytes(marker)
    path = tmp_path / "evil.onemodel"
    path.write_bytes(dumps(_u8_graph(payload)))
    out = _load_and_run(path, tmp_path)
    assert isinstance(out, om.SessionOutputs)
    np.testing.assert_array_equal(out["output"].numpy()[0], np.frombuffer(payload, np.uint8))


def test_pickle_replacing_the_manifest_is_refused(tmp_path, marker):
    manifest, entries = read_zip(dumps(_u8_graph(b"x")))
    entries["manifest.json"] = _pickle_bytes(marker)
    path = tmp_path / "evil.onemodel"
    path.write_bytes(write_zip(entries))
    out = _load_and_run(path, tmp_path)
    assert isinstance(out, om.FormatError) and "not valid JSON" in str(out)


def test_a_raw_pickle_file_is_not_a_model(tmp_path, marker):
    for name in ("evil.onemodel", "evil.onnx", "evil.pkl"):
        path = tmp_path / name
        path.write_bytes(_pickle_bytes(marker))
        with guard(str(tmp_path)):
            for loader in (load_any, om.load, om.load_onnx):
                with pytest.raises(om.OneModelError):
                    loader(path)
            with pytest.raises(om.OneModelError):
                om.Session(path)


def _edit(m, where, value):
    """Set ``value`` at a path of the manifest given as a list of keys."""
    obj = m
    for k in where[:-1]:
        obj = obj[k]
    obj[where[-1]] = value


_CODE = "__import__('os').system('touch {m}')"
_OBJECT_PATHS = [
    # params naming Python objects, in every spelling an attacker might try
    (["graph", "nodes", 0, "params"], {"fn": "os.system"}),
    (["graph", "nodes", 0, "params"], {"fn": {"$object": "os:system"}}),
    (["graph", "nodes", 0, "params"], {"fn": {"$pickle": "gASV..."}}),
    (["graph", "nodes", 0, "params"], {"fn": {"py/object": "os.system"}}),
    (["graph", "nodes", 0, "params"], {"fn": {"$dtype": "numpy.core.multiarray._reconstruct"}}),
    (["graph", "nodes", 0, "params"], {"fn": {"$dim": _CODE}}),
    (["graph", "nodes", 0, "op"], "os.system"),
    (["graph", "nodes", 0, "op"], "__import__"),
    (["graph", "initializers", 0, "dtype"], "object"),
    (["graph", "initializers", 0, "dtype"], "O"),
    (["graph", "initializers", 0, "dtype"], "numpy.dtype"),
    (["graph", "inputs", 0, "shape", 0], _CODE),
    (["graph", "nodes", 0, "source"], _CODE),
    (["producer"], _CODE),
    (["ops", "add"], {"distribution": _CODE, "version": "0", "plugin": "os.system"}),
]


@pytest.mark.parametrize("where,value", _OBJECT_PATHS,
                         ids=[f"{'.'.join(map(str, w))}={str(v)[:20]}" for w, v in _OBJECT_PATHS])
def test_manifest_fields_naming_python_objects_never_run(tmp_path, marker, where, value):
    manifest, entries = read_zip(dumps(_u8_graph(b"abc")))
    value = json.loads(json.dumps(value).replace("{m}", str(marker)))
    _edit(manifest, where, value)
    path = tmp_path / "evil.onemodel"
    path.write_bytes(write_zip(entries, manifest))
    out = _load_and_run(path, tmp_path)
    # harmless text (source, producer, provider info) loads and runs; everything else is refused
    assert isinstance(out, (om.SessionOutputs, om.FormatError)), out


def test_cli_info_and_run_do_not_run_payloads(tmp_path, marker):
    """`onemodel info` and `onemodel run` on a payload-carrying file, in a subprocess."""
    path = tmp_path / "evil.onemodel"
    path.write_bytes(dumps(_u8_graph(_pickle_bytes(marker))))
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((2, len(_pickle_bytes(marker))), np.uint8))
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    for args in (["info", str(path)], ["run", str(path), "--input", f"input={x}"]):
        r = subprocess.run([sys.executable, "-m", "onemodel.cli", *args], capture_output=True,
                           text=True, env=env, cwd=tmp_path, timeout=120)
        assert r.returncode == 0, r.stderr


# -- ONNX external data ----------------------------------------------------------------------
def _external_model(location: str, in_attribute: bool = False):
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = numpy_helper.from_array(arr, "w")
    onnx.external_data_helper.set_external_data(t, location)
    t.ClearField("raw_data")
    t.data_location = TP.EXTERNAL
    if in_attribute:
        nodes = [helper.make_node("Constant", [], ["w"], value=t),
                 helper.make_node("Add", ["x", "w"], ["y"])]
        inits = []
    else:
        nodes, inits = [helper.make_node("Add", ["x", "w"], ["y"])], [t]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, [3, 4])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [3, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


_OUTSIDE = ["../secret.bin", "sub/../../secret.bin", "/etc/passwd", "\\\\server\\share\\x",
            "C:\\secret.bin", "C:secret.bin", ""]


@pytest.mark.parametrize("in_attribute", [False, True], ids=["initializer", "constant"])
@pytest.mark.parametrize("location", _OUTSIDE)
def test_external_data_outside_the_folder_is_refused(tmp_path, location, in_attribute):
    inner = tmp_path / "model"
    inner.mkdir()
    (tmp_path / "secret.bin").write_bytes(b"\1" * 48)
    path = inner / "m.onnx"
    path.write_bytes(_external_model(location, in_attribute).SerializeToString())
    with guard(str(tmp_path)):
        with pytest.raises(om.FormatError, match="outside|relative path|not found"):
            om.load_onnx(path)


def test_external_data_through_a_symlink_out_of_the_folder_is_refused(tmp_path):
    inner = tmp_path / "model"
    inner.mkdir()
    (tmp_path / "secret.bin").write_bytes(b"\1" * 48)
    (inner / "link.bin").symlink_to(tmp_path / "secret.bin")
    path = inner / "m.onnx"
    path.write_bytes(_external_model("link.bin").SerializeToString())
    with guard(str(tmp_path)):
        with pytest.raises(om.FormatError, match="outside"):
            om.load_onnx(path)


@pytest.mark.parametrize("offset,length", [("-1", "48"), ("0", "4800"), ("x", "48"),
                                           ("0", "-5"), ("99", None)])
def test_external_data_ranges_are_checked(tmp_path, offset, length):
    m = _external_model("w.bin")
    t = m.graph.initializer[0]
    del t.external_data[:]
    for k, v in (("location", "w.bin"), ("offset", offset), ("length", length)):
        if v is not None:
            entry = t.external_data.add()
            entry.key, entry.value = k, v
    (tmp_path / "w.bin").write_bytes(b"\0" * 48)
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    with guard(str(tmp_path)):
        with pytest.raises(om.FormatError):
            om.load_onnx(path)


def test_external_data_inside_the_folder_still_loads(tmp_path):
    (tmp_path / "w.bin").write_bytes(np.arange(12, dtype=np.float32).tobytes())
    path = tmp_path / "m.onnx"
    path.write_bytes(_external_model("w.bin").SerializeToString())
    with guard(str(tmp_path)):
        g = om.load_onnx(path).graph
    np.testing.assert_array_equal(g.initializers["w"].reshape(-1), np.arange(12))


def test_onnx_strings_that_look_like_code_stay_strings(tmp_path, marker):
    code = _CODE.replace("{m}", str(marker))
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name=code, doc_string=code)],
                          code[:20], [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", 3])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, ["batch", 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name=code)
    m.metadata_props.add(key="pickle", value=_pickle_bytes(marker).hex())
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    out = _load_and_run(path, tmp_path)
    assert isinstance(out, om.SessionOutputs), out


def test_the_guard_catches_what_it_must(tmp_path):
    """The guard itself: a write, an unpickling and an exec of text are all caught."""
    m = tmp_path / "m"
    for action in (lambda: open(m, "w"), lambda: pickle.loads(_pickle_bytes(m)),  # noqa: S301
                   lambda: exec("x = 1")):  # noqa: S102
        with pytest.raises(AssertionError, match="forbidden side effects"):
            with guard(str(tmp_path)):
                action()
    assert not m.exists()


@pytest.mark.parametrize("location", ["w\x00.bin", "\x00", "w.bin\x00../../etc/passwd"])
def test_external_data_location_with_a_nul_byte_is_refused(tmp_path, location):
    """Was a raw ValueError ("embedded null byte") from the path functions."""
    (tmp_path / "w.bin").write_bytes(np.arange(12, dtype=np.float32).tobytes())
    path = tmp_path / "m.onnx"
    path.write_bytes(_external_model(location).SerializeToString())
    with guard(str(tmp_path)):
        with pytest.raises(om.FormatError, match="NUL"):
            om.load_onnx(path)


def test_the_guard_lets_only_already_loaded_libraries_be_reopened(tmp_path):
    """threadpoolctl re-opens the BLAS numpy loaded (allowed); any other dlopen is caught."""
    import ctypes

    with guard(str(tmp_path), allow_exec=True):  # a session compiles its plan
        _ = np.ones((64, 64)) @ np.ones((64, 64))
        om.Session(_u8_graph(b"ab")).run({"input": np.zeros((1, 2), np.uint8)})
    with pytest.raises(AssertionError, match="forbidden side effects.*dlopen"):
        with guard(str(tmp_path)):
            ctypes.CDLL("libm.so.6")
