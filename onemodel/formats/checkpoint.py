"""Checkpoints: ``om.save(obj, path)`` and ``om.load_checkpoint(path)`` for nested dicts, lists
and tuples of Tensors, numpy arrays, numbers, strings, bools and None (the state_dicts of
modules, optimizers and schedulers, an epoch counter, ...).

One file, no pickle, so loading runs no code from it (the layout is specified in
docs/checkpoint-format.md)::

    8 bytes   magic b"\\x89OMCKPT\\n"
    8 bytes   header length n, unsigned little-endian
    n bytes   header: UTF-8 JSON {"format", "version", "root", "arrays", "data_bytes"}
    padding   zeros up to a multiple of 64
    data      the arrays' raw little-endian bytes, each at a multiple of 64 from here

In ``root`` plain JSON is kept for None, bools, ints, finite floats, strings and lists; the rest
are one-key objects: ``{"$dict": [[key, value], ...]}`` (keys are str or int, order kept),
``{"$tuple": [...]}``, ``{"$float": "inf" | "-inf" | "nan"}``, and ``{"$tensor": i}``,
``{"$array": i}``, ``{"$scalar": i}`` pointing into ``arrays`` (``{"dtype", "shape",
"offset"}``). The writer is atomic; the reader checks the whole header against the file's size
before it reads any data and raises `CheckpointError` naming what is wrong and where.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import struct
from typing import Any, BinaryIO, Mapping

import numpy as np

from ..core import foreign
from ..core.dtype import DType
from ..core.tensor import Tensor
from ..errors import FormatError
from . import _json_scan
from ._atomic import atomic_write, check_path

MAGIC = b"\x89OMCKPT\n"
FORMAT = "onemodel-checkpoint"
VERSION = 1
ALIGN = 64
MAX_HEADER_BYTES = 256 * 1024 * 1024
MAX_HEADER_ELEMENTS = 16_000_000
MAX_DEPTH = 64  # Python nesting of the saved object; JSON nests at most 3 levels per level
MAX_RANK = 64
MAX_DIM = 2 ** 40
DEFAULT_MAX_BYTES = 2 ** 40

_PREFIX = struct.Struct("<8sQ")
_TAGS = ("$dict", "$tuple", "$float", "$tensor", "$array", "$scalar")
_SCALAR_KINDS = {"$tensor": "a Tensor", "$array": "a numpy array", "$scalar": "a numpy scalar"}


class CheckpointError(FormatError):
    """A checkpoint cannot be written (a value of an unsupported type, named by its path in the
    object) or read (a malformed, truncated or hostile file: the message says what and where)."""


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


# ----------------------------------------------------------------------------------------------
# saving
# ----------------------------------------------------------------------------------------------
class _Encoder:
    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.table: list[dict] = []
        self.offset = 0

    def array(self, tag: str, arr: np.ndarray, where: str) -> dict:
        try:
            dt = DType.from_numpy(arr.dtype.newbyteorder("="))
        except Exception:  # noqa: BLE001
            raise CheckpointError(f"save: {where} has dtype {arr.dtype}, which a checkpoint "
                                  f"cannot hold (bool, int8-64, uint8-64, float16/32/64)") from None
        arr = np.asarray(arr, dtype=arr.dtype.newbyteorder("<"), order="C")  # keeps 0-d
        self.table.append({"dtype": dt.value, "shape": [int(d) for d in arr.shape],
                           "offset": self.offset})
        self.arrays.append(arr)
        self.offset = _align(self.offset + arr.nbytes)
        return {tag: len(self.table) - 1}

    def encode(self, value: Any, where: str, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise CheckpointError(f"save: {where} is nested more than {MAX_DEPTH} levels deep "
                                  f"(a cycle?)")
        if isinstance(value, Tensor):
            return self.array("$tensor", np.asarray(value.numpy()), where)
        if foreign.is_torch_tensor(value):
            return self.array("$tensor", foreign.as_array(value, f"save: {where}"), where)
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise CheckpointError(f"save: {where} is a numpy array of Python objects, which "
                                      f"a checkpoint cannot hold")
            return self.array("$array", value, where)
        if isinstance(value, np.generic):
            return self.array("$scalar", np.asarray(value), where)
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, float):
            if math.isfinite(value):
                return value
            return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
        if isinstance(value, list):
            return [self.encode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
        if isinstance(value, tuple):
            return {"$tuple": [self.encode(v, f"{where}[{i}]", depth + 1)
                               for i, v in enumerate(value)]}
        if isinstance(value, Mapping):
            items = []
            for k, v in value.items():
                if isinstance(k, bool) or not isinstance(k, (str, numbers.Integral)):
                    raise CheckpointError(f"save: {where} has the key {k!r:.60}; checkpoint "
                                          f"dict keys must be str or int")
                items.append([k if isinstance(k, str) else int(k),
                              self.encode(v, f"{where}[{k!r}]", depth + 1)])
            return {"$dict": items}
        raise CheckpointError(f"save: {where} is a {type(value).__name__} ({value!r:.60}); a "
                              f"checkpoint holds dicts, lists, tuples, Tensors, numpy arrays, "
                              f"numbers, strings, bools and None")


def save(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` (nested dicts/lists/tuples of Tensors, numpy arrays, numbers, strings,
    bools, None) to ``path`` atomically: a reader never sees half a file, and a failed save
    leaves an older file as it was. Tensors load back as Tensors (not Parameters)."""
    path = check_path(path, "save")
    enc = _Encoder()
    root = enc.encode(obj, "obj")
    header = json.dumps({"format": FORMAT, "version": VERSION, "root": root,
                         "arrays": enc.table, "data_bytes": enc.offset},
                        allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode()

    def write(f: BinaryIO) -> None:
        f.write(_PREFIX.pack(MAGIC, len(header)))
        f.write(header)
        start = _PREFIX.size + len(header)
        f.write(b"\0" * (_align(start) - start))
        pos = 0
        for entry, arr in zip(enc.table, enc.arrays):
            f.write(b"\0" * (entry["offset"] - pos))
            f.write(memoryview(arr).cast("B") if arr.nbytes else b"")
            pos = entry["offset"] + arr.nbytes
        f.write(b"\0" * (enc.offset - pos))

    atomic_write(path, write)


# ----------------------------------------------------------------------------------------------
# loading
# ----------------------------------------------------------------------------------------------
def _fail(label: str, what: str) -> CheckpointError:
    return CheckpointError(f"load_checkpoint({label}): {what}")


def _check_table(label: str, arrays: Any, data_bytes: Any) -> list[tuple[np.dtype, tuple, int]]:
    if isinstance(data_bytes, bool) or not isinstance(data_bytes, int) or data_bytes < 0:
        raise _fail(label, f"'data_bytes' must be a whole number >= 0, got {data_bytes!r:.60}")
    if not isinstance(arrays, list):
        raise _fail(label, f"'arrays' must be a list, got {type(arrays).__name__}")
    out = []
    end = 0
    for i, a in enumerate(arrays):
        where = f"arrays[{i}]"
        if not isinstance(a, dict) or set(a) != {"dtype", "shape", "offset"}:
            raise _fail(label, f"{where} must be an object with exactly 'dtype', 'shape' and "
                               f"'offset'")
        try:
            dt = DType(a["dtype"]).numpy.newbyteorder("<")
        except (ValueError, TypeError, AttributeError):
            raise _fail(label, f"{where}['dtype'] is {a['dtype']!r:.40}, not a known dtype") \
                from None
        shape = a["shape"]
        if not isinstance(shape, list) or len(shape) > MAX_RANK:
            raise _fail(label, f"{where}['shape'] must be a list of at most {MAX_RANK} sizes")
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d <= MAX_DIM:
                raise _fail(label, f"{where}['shape'] holds {d!r:.40}; sizes are whole numbers "
                                   f"in [0, 2**40]")
        offset = a["offset"]
        if isinstance(offset, bool) or not isinstance(offset, int) or offset % ALIGN:
            raise _fail(label, f"{where}['offset'] must be a whole multiple of {ALIGN}, got "
                               f"{offset!r:.40}")
        if offset < end:
            raise _fail(label, f"{where} starts at {offset}, inside the previous array (which "
                               f"ends at {end})")
        nbytes = math.prod(shape) * dt.itemsize
        end = offset + nbytes
        if end > data_bytes:
            raise _fail(label, f"{where} ends at byte {end} of the data, past its declared "
                               f"length {data_bytes}")
        out.append((dt, tuple(shape), offset))
    return out


def _open_header(label: str, f: BinaryIO, size: int, max_bytes: int) -> tuple[dict, int]:
    prefix = f.read(_PREFIX.size)
    if len(prefix) < _PREFIX.size or prefix[:8] != MAGIC:
        raise _fail(label, "not a OneModel checkpoint (the file does not start with the "
                           "checkpoint magic bytes)" if len(prefix) >= 8 or size >= 8 else
                    f"the file is {size} bytes long, too short for a checkpoint")
    _, n = _PREFIX.unpack(prefix)
    if n > MAX_HEADER_BYTES:
        raise _fail(label, f"the header claims {n} bytes, more than the limit of "
                           f"{MAX_HEADER_BYTES}")
    if _PREFIX.size + n > size:
        raise _fail(label, f"the file is truncated: the header claims {n} bytes but only "
                           f"{size - _PREFIX.size} follow")
    raw = f.read(n)
    problem = _json_scan.check(raw, max_elements=MAX_HEADER_ELEMENTS,
                               max_nesting=3 * MAX_DEPTH + 8)
    if problem:
        raise _fail(label, f"the header {problem}")
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _fail(label, f"the header is not valid JSON ({exc})") from None
    if not isinstance(header, dict):
        raise _fail(label, "the header is not a JSON object")
    if header.get("format") != FORMAT:
        raise _fail(label, f"the header's format is {header.get('format')!r:.60}, not "
                           f"{FORMAT!r}")
    version = header.get("version")
    if version != VERSION or isinstance(version, bool):
        raise _fail(label, f"checkpoint version {version!r:.40} is not supported (this "
                           f"OneModel reads version {VERSION}; a newer release may read it)")
    missing = [k for k in ("root", "arrays", "data_bytes") if k not in header]
    if missing:
        raise _fail(label, f"the header lacks {', '.join(map(repr, missing))}")
    start = _align(_PREFIX.size + n)
    data_bytes = header["data_bytes"]
    if isinstance(data_bytes, int) and not isinstance(data_bytes, bool):
        if data_bytes > max_bytes:
            raise _fail(label, f"the arrays take {data_bytes} bytes, more than max_bytes="
                               f"{max_bytes}")
        if start + data_bytes != size:
            state = "truncated" if start + data_bytes > size else "longer than its header says"
            raise _fail(label, f"the file is {state}: {size} bytes, the header accounts for "
                               f"{start + data_bytes}")
    return header, start


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON (non-finite floats are written as {{'$float': ...}})")


class _Decoder:
    def __init__(self, label: str, table: list, buf: memoryview) -> None:
        self.label, self.table, self.buf = label, table, buf

    def decode(self, x: Any, where: str, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise _fail(self.label, f"{where} is nested more than {MAX_DEPTH} levels deep")
        if x is None or isinstance(x, (bool, str, int, float)):
            return x
        if isinstance(x, list):
            return [self.decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(x)]
        if not isinstance(x, dict) or len(x) != 1 or next(iter(x)) not in _TAGS:
            raise _fail(self.label, f"{where} is an object other than a one-key "
                                    f"{'/'.join(_TAGS)} tag")
        tag, body = next(iter(x.items()))
        if tag == "$dict":
            if not isinstance(body, list):
                raise _fail(self.label, f"{where}: '$dict' must hold a list of [key, value]")
            out = {}
            for i, pair in enumerate(body):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise _fail(self.label, f"{where}: '$dict' entry {i} is not a [key, value] "
                                            f"pair")
                k, v = pair
                if isinstance(k, bool) or not isinstance(k, (str, int)):
                    raise _fail(self.label, f"{where}: '$dict' entry {i} has the key {k!r:.40};"
                                            f" keys are strings or integers")
                if k in out:
                    raise _fail(self.label, f"{where}: the key {k!r:.40} appears twice")
                out[k] = self.decode(v, f"{where}[{k!r}]", depth + 1)
            return out
        if tag == "$tuple":
            if not isinstance(body, list):
                raise _fail(self.label, f"{where}: '$tuple' must hold a list")
            return tuple(self.decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(body))
        if tag == "$float":
            if body not in ("inf", "-inf", "nan"):
                raise _fail(self.label, f"{where}: '$float' must be 'inf', '-inf' or 'nan', got "
                                        f"{body!r:.40}")
            return float(body)
        if isinstance(body, bool) or not isinstance(body, int) or not 0 <= body < len(self.table):
            raise _fail(self.label, f"{where}: {tag!r} names array {body!r:.40}, but the file "
                                    f"has {len(self.table)}")
        dt, shape, offset = self.table[body]
        count = math.prod(shape)
        arr = np.frombuffer(self.buf, dtype=dt, count=count, offset=offset).reshape(shape)
        arr = arr.astype(dt.newbyteorder("="), copy=False)
        if tag == "$scalar":
            if shape != ():
                raise _fail(self.label, f"{where}: a '$scalar' must have shape [], got "
                                        f"{list(shape)}")
            return arr[()]
        return Tensor._wrap(arr) if tag == "$tensor" else arr


def load_checkpoint(path: str | os.PathLike, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Read what `save` wrote. Runs no code from the file; checks the header against the file
    size before reading any data; refuses files whose arrays exceed ``max_bytes``. Arrays come
    back writable; Tensors as Tensors, numpy arrays and scalars as numpy's."""
    path = check_path(path, "load_checkpoint")
    label = repr(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        header, start = _open_header(label, f, size, max_bytes)
        table = _check_table(label, header["arrays"], header["data_bytes"])
        f.seek(start)
        buf = bytearray(header["data_bytes"])
        got = f.readinto(buf)
        if got != len(buf):
            raise _fail(label, f"the file is truncated: {got} of {len(buf)} data bytes read")
    return _Decoder(label, table, memoryview(buf)).decode(header["root"], "root")


__all__ = ["save", "load_checkpoint", "CheckpointError"]
