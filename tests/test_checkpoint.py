"""om.save / om.load_checkpoint: every supported value round-trips exactly; unsupported values are
refused naming their path; writes are atomic; hostile and truncated files raise CheckpointError
naming what is wrong, and loading runs no code."""
from __future__ import annotations

import json
import math
import os
import struct
from collections import OrderedDict

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.formats.checkpoint import MAGIC, CheckpointError


def sample():
    return {
        "epoch": 7,
        "big": 2 ** 70,
        "lr": 0.1,
        "inf": math.inf, "ninf": -math.inf,
        "name": "run-α",
        "flag": True,
        "none": None,
        "betas": (0.9, 0.999),
        "list": [1, [2.5, "x"], ()],
        "ints": {0: "zero", 5: "five"},
        "tensor": Tensor.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3)),
        "f16": np.array([1.5, -2], np.float16),
        "bool": np.array([[True, False]]),
        "u64": np.array([2 ** 64 - 1], np.uint64),
        "empty": np.zeros((0, 3), np.int8),
        "scalar": np.float64(0.25),
        "i32scalar": np.int32(-3),
        "module": OrderedDict([("w", Tensor.from_numpy(np.ones(3)))]),
        "big_endian": np.array([1, 2], dtype=">i4"),
    }


def same(a, b):
    assert type(a) is type(b) or (isinstance(a, dict) and isinstance(b, dict)), (a, b)
    if isinstance(a, Tensor):
        assert a.numpy().dtype == b.numpy().dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(a, np.ndarray):
        assert a.dtype.newbyteorder("=") == b.dtype.newbyteorder("=") and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, np.generic):
        assert a.dtype == b.dtype and a == b
    else:
        assert a == b or (a != a and b != b)


def test_round_trip(tmp_path):
    path = tmp_path / "ckpt.om"
    obj = sample()
    obj["nan"] = math.nan
    om.save(obj, path)
    back = om.load_checkpoint(path)
    same(obj, back)
    assert math.isnan(back["nan"])
    t = back["tensor"]
    t.numpy()[0, 0] = 42  # loaded arrays are writable
    assert om.load_checkpoint(path)["tensor"].numpy()[0, 0] == 0


def test_deterministic_bytes(tmp_path):
    om.save(sample(), tmp_path / "a")
    om.save(sample(), tmp_path / "b")
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_optimizer_and_scheduler_state_round_trip(tmp_path):
    p = om.nn.Parameter(Tensor.from_numpy(np.ones(3)))
    opt = om.optim.Adam([p], lr=0.1)
    sched = om.optim.lr_scheduler.MultiStepLR(opt, [2, 4])
    p.grad = Tensor.from_numpy(np.ones(3))
    opt.step()
    sched.step()
    om.save({"opt": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "c")
    back = om.load_checkpoint(tmp_path / "c")
    same(opt.state_dict(), back["opt"])
    opt.load_state_dict(back["opt"])
    sched.load_state_dict(back["sched"])


@pytest.mark.parametrize("value, where", [
    ({"f": lambda: 0}, r"obj\['f'\] is a function"),
    ({"a": [1, {2}]}, r"obj\['a'\]\[1\] is a set"),
    ({(1, 2): 3}, "key"),
    ({"c": np.array([1j])}, "dtype complex"),
    ({"o": np.array([None])}, "Python objects"),
])
def test_unsupported_values_are_refused_naming_the_path(tmp_path, value, where):
    path = tmp_path / "x"
    path.write_bytes(b"old")
    with pytest.raises(CheckpointError, match=where):
        om.save(value, path)
    assert path.read_bytes() == b"old"  # atomic: the old file is untouched
    assert os.listdir(tmp_path) == ["x"]


def test_cycles_are_refused(tmp_path):
    a = []
    a.append(a)
    with pytest.raises(CheckpointError, match="nested"):
        om.save(a, tmp_path / "x")


# -- hostile files --------------------------------------------------------------------------------
def build(header, data=b"", raw_header=None):
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    start = -(-(16 + len(h)) // 64) * 64
    return struct.pack("<8sQ", MAGIC, len(h)) + h + b"\0" * (start - 16 - len(h)) + data


def header(root, arrays=(), data_bytes=0):
    return {"format": "onemodel-checkpoint", "version": 1, "root": root,
            "arrays": list(arrays), "data_bytes": data_bytes}


ARR = {"dtype": "f32", "shape": [2], "offset": 0}
HOSTILE = {
    "not a checkpoint": (b"PK\x03\x04" + b"\0" * 40, "magic"),
    "empty": (b"", "too short"),
    "huge header length": (struct.pack("<8sQ", MAGIC, 2 ** 62), "more than the limit"),
    "truncated header": (struct.pack("<8sQ", MAGIC, 100) + b"{}", "truncated"),
    "bad json": (build(None, raw_header=b"{nope"), "not valid JSON"),
    "NaN constant": (build(None, raw_header=b'{"root": NaN}'), "not valid JSON"),
    "deep nesting": (build(None, raw_header=b"[" * 5000 + b"]" * 5000), "nested"),
    "not an object": (build([1]), "not a JSON object"),
    "wrong format": (build({**header(1), "format": "pickle"}), "format"),
    "newer version": (build({**header(1), "version": 2}), "version 2"),
    "missing root": (build({k: v for k, v in header(1).items() if k != "root"}), "'root'"),
    "unknown tag": (build(header({"$code": "import os"})), "one-key"),
    "two-key object": (build(header({"$tuple": [], "x": 1})), "one-key"),
    "bad float tag": (build(header({"$float": "1e999"})), "'inf'"),
    "array index out of range": (build(header({"$tensor": 3})), "names array 3"),
    "array index bool": (build(header({"$tensor": True}, [ARR], 64), b"\0" * 64), "names array"),
    "bad dtype": (build(header(1, [{**ARR, "dtype": "object"}], 64), b"\0" * 64), "dtype"),
    "negative size": (build(header(1, [{**ARR, "shape": [-1]}], 64), b"\0" * 64), "sizes"),
    "array past the data": (build(header(1, [{**ARR, "shape": [100]}], 64), b"\0" * 64),
                            "past its declared length"),
    "overlapping arrays": (build(header(1, [ARR, ARR], 128), b"\0" * 128), "inside the previous"),
    "misaligned offset": (build(header(1, [{**ARR, "offset": 3}], 64), b"\0" * 64), "multiple"),
    "extra array key": (build(header(1, [{**ARR, "code": 1}], 64), b"\0" * 64), "exactly"),
    "truncated data": (build(header({"$array": 0}, [ARR], 64), b"\0" * 10), "truncated"),
    "trailing bytes": (build(header(1), b"\0" * 64), "longer than its header"),
    "bad dict": (build(header({"$dict": [[1.5, 2]]})), "keys are strings or integers"),
    "duplicate key": (build(header({"$dict": [["a", 1], ["a", 2]]})), "twice"),
    "scalar with a shape": (build(header({"$scalar": 0}, [ARR], 64), b"\0" * 64), "shape"),
    "huge data_bytes": (build(header(1, [], 2 ** 50)), "max_bytes"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files_raise_checkpoint_error(tmp_path, name):
    blob, match = HOSTILE[name]
    path = tmp_path / "bad.ckpt"
    path.write_bytes(blob)
    with pytest.raises(CheckpointError, match=match):
        om.load_checkpoint(path)


def test_every_truncation_of_a_real_file_is_caught(tmp_path):
    good = tmp_path / "good"
    om.save(sample(), good)
    blob = good.read_bytes()
    bad = tmp_path / "bad"
    for cut in sorted({0, 1, 8, 15, 16, 17, 100, len(blob) // 2, len(blob) - 1}):
        bad.write_bytes(blob[:cut])
        with pytest.raises(CheckpointError):
            om.load_checkpoint(bad)


def test_checkpoint_error_is_a_format_error_and_paths_are_checked(tmp_path):
    assert issubclass(CheckpointError, om.FormatError)
    with pytest.raises(om.ArgumentError, match="path"):
        om.save({}, "")
    with pytest.raises(om.ArgumentError, match="path"):
        om.load_checkpoint(3)
    with pytest.raises(FileNotFoundError):
        om.load_checkpoint(tmp_path / "missing")


def test_max_bytes(tmp_path):
    om.save({"a": np.zeros(1000)}, tmp_path / "x")
    with pytest.raises(CheckpointError, match="max_bytes"):
        om.load_checkpoint(tmp_path / "x", max_bytes=100)
