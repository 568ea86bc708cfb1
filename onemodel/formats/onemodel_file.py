"""The OneModel file format: one zip holding ``manifest.json`` and one raw data entry per
initializer. The format is specified in docs/format.md; this module is its reference reader and
writer.

* ``save_graph(graph, path)`` writes atomically (a temporary file in the same folder, then
  ``os.replace``) and deterministically (fixed timestamps, sorted entries, sorted JSON keys), so
  the same model always gives the same bytes.
* ``load_graph(path)`` runs no code from the file: it parses JSON and reads raw little-endian
  arrays with ``np.frombuffer``. It validates the whole manifest (names, references, dtypes,
  shapes, declared sizes) against the zip directory *before* reading any data, reads each entry
  with a size cap, and raises `FormatError` saying what is wrong and where.
"""
from __future__ import annotations

from .._version import __version__

import io
import json
import math
import os
import re
import zipfile
from typing import Any, Mapping

import numpy as np

from ..core.dtype import DType
from ..core.graph import Graph, Node, Value, as_graph
from ..core.guards import Guard
from ..core.symbolic import MAX_SIZE, Dim, SymbolicError
from ..core.types import TensorType
from ..errors import FormatError, GraphError, OneModelError
from . import _json_scan, params_codec
from ._atomic import atomic_write, check_path

FORMAT = "onemodel"
FORMAT_VERSION = "1.0"
MANIFEST = "manifest.json"
DATA_PREFIX = "data/"

# Limits checked before anything is allocated (documented in docs/format.md, "Limits").
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
#: JSON values and keys in the manifest (about 28 per node: 140,000 nodes). Parsing costs up to
#: ~90 bytes per element (an empty object), so this caps a parse at about 360 MB
MAX_MANIFEST_ELEMENTS = 4_000_000
MAX_MANIFEST_NESTING = 100  # params nest 32 levels (params_codec), 2 JSON levels each at most
MAX_ENTRIES = 1_000_000
MAX_NAME_CHARS = 1024
MAX_RANK = 64
MAX_DIM = MAX_SIZE  # the one size range (onemodel.core.symbolic)
MAX_DIM_TEXT = 1000
DEFAULT_MAX_BYTES = 2 ** 40  # total initializer bytes a load accepts unless told otherwise
MAX_DEFLATE_RATIO = 1100  # deflate cannot expand more than ~1032:1; more is a lying header
_CHUNK = 1 << 18  # bytes per read of a deflated entry

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_OP_NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def _version() -> str:
    return __version__


# ----------------------------------------------------------------------------------------------
# saving
# ----------------------------------------------------------------------------------------------
def _shape_json(shape) -> list:
    return [str(d) if isinstance(d, Dim) else int(d) for d in shape]


def _type_json(name: str, t: TensorType) -> dict:
    return {"name": name, "dtype": t.dtype.value, "shape": _shape_json(t.shape)}


def op_providers(op_names) -> dict[str, dict]:
    """For each op name: the plugin, distribution and version that provides it now."""
    from ..registry import REGISTRY

    tables = REGISTRY.tables()
    owners: dict[str, Any] = {}
    for info in REGISTRY.plugins():
        for name in info.contributes.get("ops", ()):
            owners.setdefault(name, info)
    out = {}
    for name in sorted(set(op_names)):
        info = owners.get(name)
        op = tables.ops.get(name)
        if info is not None:
            out[name] = {"plugin": info.name, "distribution": info.distribution,
                         "version": info.version}
        else:
            out[name] = {"plugin": None, "distribution": None, "version": None}
        if op is not None and op.provider and out[name]["distribution"] is None:
            out[name]["plugin"] = out[name]["plugin"] or op.provider
    return out


def manifest_of(graph: Graph) -> tuple[dict, list[tuple[str, np.ndarray]]]:
    """The manifest dict and the (entry name, little-endian array) pairs for a graph."""
    from ..core.subgraphs import walk_nodes

    data_entries: list = []
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "producer": f"onemodel {_version()}",
        "graph": _graph_json(graph, data_entries),
        "ops": op_providers(n.op for n in walk_nodes(graph)),
    }
    return manifest, data_entries


def _graph_json(graph: Graph, data_entries: list, where_prefix: str = "") -> dict:
    """The ``graph`` object of the manifest (a subgraph param is one too, ``$graph``); its
    arrays are appended to ``data_entries``, numbered across the whole file."""
    inits = []
    total = 0
    for name in sorted(graph.initializers):
        i = len(data_entries)
        arr = np.asarray(graph.initializers[name])
        try:
            dtype = DType.from_numpy(arr.dtype)
        except OneModelError as exc:
            raise FormatError(f"initializer %{name}: {exc}") from None
        le = np.require(arr.astype(arr.dtype.newbyteorder("<"), copy=False), requirements="C")
        entry = f"{DATA_PREFIX}{i}.bin"
        inits.append({"name": name, "dtype": dtype.value, "shape": [int(d) for d in arr.shape],
                      "data": entry, "byte_length": int(le.nbytes)})
        total += int(le.nbytes)
        data_entries.append((entry, le))
    nodes = []

    def subgraph(g, where):
        return _graph_json(g, data_entries, f"{where}: ")

    for k, n in enumerate(graph.nodes):
        where = f"{where_prefix}node {k} ({n.op})"
        params = {p: params_codec.encode(v, f"{where} param {p!r}", sub=subgraph)
                  for p, v in n.params.items()}
        nodes.append({
            "op": n.op,
            "inputs": list(n.inputs),
            "outputs": [_type_json(o, graph.values[o].type) for o in n.outputs],
            "params": params,
            "source": n.source,
        })
    out = {
        "inputs": [_type_json(v.name, v.type) for v in graph.inputs],
        "initializers": inits,
        "nodes": nodes,
        "outputs": [{"name": o, "value": v} for o, v in graph.outputs],
        "data_bytes": total,
    }
    if graph.guards:  # size conditions sessions check (see core/guards.py)
        out["guards"] = [g.to_json() for g in graph.guards]
    return out


def _zinfo(name: str) -> zipfile.ZipInfo:
    zi = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
    zi.compress_type = zipfile.ZIP_STORED
    zi.create_system = 3
    zi.external_attr = 0o100644 << 16
    return zi


def to_bytes_writer(graph: Graph):
    """A ``write(fileobj)`` function producing the file (the manifest is built eagerly, so an
    unsavable graph fails before any file is touched)."""
    manifest, data_entries = manifest_of(graph)
    text = json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False)
    entries = [(MANIFEST, text.encode("utf-8"))] + [(e, a) for e, a in data_entries]
    entries.sort(key=lambda t: t[0])

    def write(f) -> None:
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, payload in entries:
                zi = _zinfo(name)
                if isinstance(payload, np.ndarray):
                    zi.file_size = payload.nbytes
                    with zf.open(zi, "w", force_zip64=payload.nbytes >= 2 ** 31) as w:
                        if payload.nbytes:
                            w.write(memoryview(payload.reshape(-1)).cast("B"))
                else:
                    zf.writestr(zi, payload)

    return write


def save_graph(graph, path: str | os.PathLike) -> None:
    """Write ``graph`` (a Graph or a TracedModel) to ``path`` in the OneModel format."""
    write = to_bytes_writer(as_graph(graph, "save"))
    atomic_write(path, write)


def dumps(graph) -> bytes:
    """The file's bytes (what `save_graph` writes)."""
    buf = io.BytesIO()
    to_bytes_writer(as_graph(graph, "save"))(buf)
    return buf.getvalue()


def loads(data: bytes) -> Graph:
    """A Graph from a OneModel file's bytes (what `dumps` returns), checked as `load_graph`
    checks a file."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise FormatError(f"loads: expected the bytes of a OneModel file, got "
                          f"{type(data).__name__}")
    return load_graph(io.BytesIO(bytes(data)))


save = save_graph


# ----------------------------------------------------------------------------------------------
# loading
# ----------------------------------------------------------------------------------------------
class _Reader:
    def __init__(self, label: str):
        self.label = label
        self.used_entries: set[str] = set()  # data entries, each read by one initializer
        self.read = None  # (entry name, size) -> bytes, while the archive is open
        self.max_bytes = DEFAULT_MAX_BYTES
        self.depth = 0  # subgraphs being read (a $graph inside a $graph...)

    def fail(self, where: str, what: str) -> FormatError:
        return FormatError(f"{self.label}: {where}: {what}")

    # -- small validators --------------------------------------------------------------------
    def obj(self, x, where: str, keys: tuple, optional: tuple = ()) -> dict:
        if not isinstance(x, dict):
            raise self.fail(where, f"expected an object, got {type(x).__name__}")
        missing = [k for k in keys if k not in x]
        if missing:
            raise self.fail(where, f"missing key(s) {', '.join(map(repr, missing))}")
        return x

    def lst(self, x, where: str) -> list:
        if not isinstance(x, list):
            raise self.fail(where, f"expected a list, got {type(x).__name__}")
        return x

    def name(self, x, where: str) -> str:
        if not isinstance(x, str) or not x:
            raise self.fail(where, f"a name must be a non-empty string, got {x!r:.80}")
        if len(x) > MAX_NAME_CHARS:
            raise self.fail(where, f"name longer than {MAX_NAME_CHARS} characters")
        if _BAD_CHARS.search(x):
            raise self.fail(where, f"name {x!r:.80} contains control characters")
        return x

    def dtype(self, x, where: str) -> DType:
        if isinstance(x, str):
            for d in DType:
                if d.value == x:
                    return d
        known = ", ".join(d.value for d in DType)
        raise self.fail(where, f"unknown dtype {x!r:.40}; known: {known}")

    def dim(self, x, where: str, symbolic: bool):
        if isinstance(x, bool) or not isinstance(x, (int, str)):
            raise self.fail(where, f"a size must be an int or a string, got {x!r:.40}")
        if isinstance(x, int):
            if x < 0 or x > MAX_DIM:
                raise self.fail(where, f"size {x} is out of range (0..{MAX_DIM})")
            return x
        if not symbolic:
            raise self.fail(where, f"size {x!r:.40} must be a number here")
        if len(x) > MAX_DIM_TEXT:
            raise self.fail(where, f"symbolic size longer than {MAX_DIM_TEXT} characters")
        try:
            d = Dim.parse(x)
        except SymbolicError as exc:
            raise self.fail(where, str(exc)) from None
        if isinstance(d, int) and not 0 <= d <= MAX_DIM:
            raise self.fail(where, f"size {x!r} is out of range")
        return d

    def shape(self, x, where: str, symbolic: bool = True) -> tuple:
        x = self.lst(x, where)
        if len(x) > MAX_RANK:
            raise self.fail(where, f"rank {len(x)} exceeds the limit of {MAX_RANK}")
        return tuple(self.dim(d, f"{where}[{i}]", symbolic) for i, d in enumerate(x))

    def typed(self, x, where: str, symbolic: bool = True) -> tuple[str, TensorType]:
        x = self.obj(x, where, ("name", "dtype", "shape"))
        name = self.name(x["name"], f"{where}.name")
        return name, TensorType(self.dtype(x["dtype"], f"{where} (%{name}).dtype"),
                                self.shape(x["shape"], f"{where} (%{name}).shape", symbolic))


def _check_version(r: _Reader, manifest: dict) -> None:
    fmt = manifest.get("format")
    if fmt != FORMAT:
        raise r.fail("manifest.json", f"format is {fmt!r:.40}, expected {FORMAT!r}")
    ver = manifest.get("format_version")
    m = re.fullmatch(r"(\d{1,6})\.(\d{1,6})", ver) if isinstance(ver, str) else None
    if m is None:
        raise r.fail("manifest.json", f"format_version {ver!r:.40} is not MAJOR.MINOR")
    major = int(m.group(1))
    ours = int(FORMAT_VERSION.split(".")[0])
    if major > ours:
        producer = manifest.get("producer")
        by = f" (written by {producer})" if isinstance(producer, str) else ""
        raise r.fail("format_version", f"the file is format version {ver}{by}, but this onemodel "
                     f"{_version()} reads format version {FORMAT_VERSION} (major {ours}) and "
                     f"older; upgrade onemodel to load it")
    if major < 1:
        raise r.fail("format_version", f"format version {ver} is not supported (this onemodel "
                     f"reads {FORMAT_VERSION})")


def _check_entry_names(r: _Reader, zf: zipfile.ZipFile,
                       archive_size: int | None = None) -> dict[str, zipfile.ZipInfo]:
    infos = zf.infolist()
    if len(infos) > MAX_ENTRIES:
        raise r.fail("zip", f"{len(infos)} entries exceed the limit of {MAX_ENTRIES}")
    out: dict[str, zipfile.ZipInfo] = {}
    for zi in infos:
        name = zi.filename
        parts = name.replace("\\", "/").split("/")
        if (name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name) or ".." in parts
                or "\\" in name or _BAD_CHARS.search(name)):
            raise r.fail(f"zip entry {name!r:.100}", "absolute or '..' paths are not allowed in "
                         "a OneModel file")
        if name in out:
            raise r.fail(f"zip entry {name!r:.100}", "appears twice")
        if zi.flag_bits & 0x1:
            raise r.fail(f"zip entry {name!r:.100}", "is encrypted")
        if zi.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise r.fail(f"zip entry {name!r:.100}", f"uses compression method "
                         f"{zi.compress_type}; only stored (0) and deflated (8) are allowed")
        if zi.compress_type == zipfile.ZIP_STORED and zi.file_size != zi.compress_size:
            raise r.fail(f"zip entry {name!r:.100}", "stored entry sizes disagree")
        if archive_size is not None and zi.header_offset + zi.compress_size > archive_size:
            # reading it would ask for more bytes than the file has (a lying header)
            raise r.fail(f"zip entry {name!r:.100}", f"declares {zi.compress_size} bytes at "
                         f"offset {zi.header_offset}, past the end of the {archive_size}-byte "
                         f"file")
        if (zi.compress_type == zipfile.ZIP_DEFLATED
                and zi.file_size > MAX_DEFLATE_RATIO * max(zi.compress_size, 1) + 1024):
            raise r.fail(f"zip entry {name!r:.100}", f"declares {zi.file_size} bytes from "
                         f"{zi.compress_size} compressed bytes (a compression bomb)")
        out[name] = zi
    _check_overlaps(r, zf, out.values())
    return out


def _check_overlaps(r: _Reader, zf: zipfile.ZipFile, infos) -> None:
    """Each entry's local header and data must lie before the central directory and apart from
    every other entry's: entries sharing bytes (each local header's extra field spanning the
    next, so all data starts at one offset) would let a 1 MB file load as N times its size.
    Hence the declared compressed sizes sum to at most the file's size."""
    extents = []
    for zi in infos:
        try:
            zf.fp.seek(zi.header_offset)
            header = zf.fp.read(30)
        except (OSError, ValueError) as exc:
            raise r.fail(f"zip entry {zi.filename!r:.100}", f"cannot be read: {exc}") from None
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise r.fail(f"zip entry {zi.filename!r:.100}", f"has no local header at offset "
                         f"{zi.header_offset}")
        name_len, extra_len = int.from_bytes(header[26:28], "little"), int.from_bytes(
            header[28:30], "little")
        end = zi.header_offset + 30 + name_len + extra_len + zi.compress_size
        extents.append((zi.header_offset, end, zi.filename))
    extents.sort()
    limit = getattr(zf, "start_dir", None)
    for (start, end, name), nxt in zip(extents, extents[1:] + [None]):
        if nxt is not None and end > nxt[0]:
            raise r.fail(f"zip entry {name!r:.100}", f"overlaps entry {nxt[2]!r:.100} (bytes "
                         f"{start}..{end} and {nxt[0]}..{nxt[1]}); entries may not share data")
        if nxt is None and limit is not None and end > limit:
            raise r.fail(f"zip entry {name!r:.100}", f"overlaps the zip's central directory "
                         f"(ends at {end}, the directory starts at {limit})")


def _read_capped(r: _Reader, zf: zipfile.ZipFile, zi: zipfile.ZipInfo, size: int) -> bytes:
    """Read exactly ``size`` bytes of an entry, refusing one that would give more.

    Read in chunks into one growing buffer: ``ZipExtFile.read(size)`` of a deflated entry joins
    its pieces at the end and so peaks at twice the data."""
    try:
        with zf.open(zi) as f:
            if zi.compress_type == zipfile.ZIP_STORED:
                data = f.read(size)  # one read straight into one buffer
            else:
                data = bytearray()
                while len(data) < size:
                    chunk = f.read(min(_CHUNK, size - len(data)))
                    if not chunk:
                        break
                    data += chunk
            extra = f.read(1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise r.fail(f"zip entry {zi.filename!r}", f"cannot be read: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - zlib.error and friends
        raise r.fail(f"zip entry {zi.filename!r}", f"cannot be read: {type(exc).__name__}: "
                     f"{exc}") from None
    if len(data) != size or extra:
        raise r.fail(f"zip entry {zi.filename!r}", f"holds {'more' if extra else len(data)} "
                     f"bytes, but {size} are declared")
    return data


def _parse_graph(r: _Reader, manifest: dict, entries: Mapping[str, zipfile.ZipInfo],
                 max_bytes: int):
    """Validate the graph part of the manifest; returns everything needed to build the Graph
    plus the (name, dtype, shape, entry, size) of each initializer, without reading data."""
    g = r.obj(manifest.get("graph"), "graph", ("inputs", "initializers", "nodes", "outputs"))
    values: dict[str, Value] = {}
    defined_by: dict[str, str] = {}

    def define(name: str, t: TensorType, what: str) -> Value:
        if name in values:
            raise r.fail(what, f"value %{name} is already defined by {defined_by[name]}")
        v = Value(name, t)
        values[name] = v
        defined_by[name] = what
        return v

    inputs = []
    for i, x in enumerate(r.lst(g["inputs"], "graph.inputs")):
        name, t = r.typed(x, f"graph.inputs[{i}]")
        inputs.append(define(name, t, f"graph.inputs[{i}]"))

    inits = []
    total = 0
    used_entries: set[str] = r.used_entries
    for i, x in enumerate(r.lst(g["initializers"], "graph.initializers")):
        where = f"graph.initializers[{i}]"
        x = r.obj(x, where, ("name", "dtype", "shape", "data", "byte_length"))
        name, t = r.typed(x, where, symbolic=False)
        where = f"{where} (%{name})"
        entry, size = x["data"], x["byte_length"]
        if not isinstance(entry, str) or entry not in entries:
            raise r.fail(where, f"data entry {entry!r:.100} is not in the archive")
        if not entry.startswith(DATA_PREFIX) or entry in used_entries:
            raise r.fail(where, f"data entry {entry!r:.100} must be a distinct "
                         f"{DATA_PREFIX}* entry")
        used_entries.add(entry)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise r.fail(where, f"byte_length must be a non-negative int, got {size!r:.40}")
        count = math.prod(t.shape)
        if count * t.dtype.itemsize > max_bytes or size > max_bytes:
            raise r.fail(where, f"declares {count * t.dtype.itemsize} bytes ({t}), more than the "
                         f"limit of {max_bytes} (pass a larger max_bytes to load it)")
        if count * t.dtype.itemsize != size:
            raise r.fail(where, f"byte_length {size} does not match {t} "
                         f"({count} x {t.dtype.itemsize} bytes)")
        if entries[entry].file_size != size:
            raise r.fail(where, f"entry {entry} holds {entries[entry].file_size} bytes, but "
                         f"byte_length is {size}")
        total += size
        if total > max_bytes:
            raise r.fail(where, f"initializers declare more than {max_bytes} bytes in total "
                         f"(pass a larger max_bytes to load a model this large)")
        define(name, t, where)
        inits.append((name, t, entry, size))
    declared = g.get("data_bytes", total)
    if isinstance(declared, bool) or not isinstance(declared, int) or declared != total:
        raise r.fail("graph.data_bytes", f"declares {declared!r:.40} bytes, but the initializers' "
                     f"byte_lengths sum to {total}")

    nodes = []
    for k, x in enumerate(r.lst(g["nodes"], "graph.nodes")):
        where = f"graph.nodes[{k}]"
        x = r.obj(x, where, ("op", "inputs", "outputs"))
        op = x["op"]
        if not isinstance(op, str) or not _OP_NAME.match(op):
            raise r.fail(where, f"op name {op!r:.60} is malformed")
        where = f"graph.nodes[{k}] ({op})"
        ins: list[Any] = []
        for j, name in enumerate(r.lst(x["inputs"], f"{where}.inputs")):
            if name is None:
                ins.append(None)
                continue
            name = r.name(name, f"{where}.inputs[{j}]")
            if name not in values:
                raise r.fail(f"{where}.inputs[{j}]", f"uses %{name}, which is not defined before "
                             f"this node")
            ins.append(name)
        params_json = x.get("params", {})
        if not isinstance(params_json, dict):
            raise r.fail(f"{where}.params", "expected an object")
        params = {}
        for p, pv in params_json.items():
            if not isinstance(p, str) or not p.isidentifier():
                raise r.fail(f"{where}.params", f"param name {p!r:.60} is not an identifier")
            params[p] = params_codec.decode(pv, f"{r.label}: {where} param {p!r}",
                                            sub=lambda body, w: _subgraph(r, body, w))
        source = x.get("source")
        if source is not None and (not isinstance(source, str) or len(source) > 10000):
            raise r.fail(f"{where}.source", "must be a string or null")
        outs = []
        for j, o in enumerate(r.lst(x["outputs"], f"{where}.outputs")):
            name, t = r.typed(o, f"{where}.outputs[{j}]")
            define(name, t, f"{where}.outputs[{j}]")
            outs.append(name)
        nodes.append(Node(op, tuple(ins), tuple(outs), params, source))

    outputs = []
    seen = set()
    for i, x in enumerate(r.lst(g["outputs"], "graph.outputs")):
        x = r.obj(x, f"graph.outputs[{i}]", ("name", "value"))
        name = r.name(x["name"], f"graph.outputs[{i}].name")
        v = r.name(x["value"], f"graph.outputs[{i}].value")
        if v not in values:
            raise r.fail(f"graph.outputs[{i}] ({name})", f"refers to undefined value %{v}")
        if name in seen:
            raise r.fail(f"graph.outputs[{i}]", f"output name {name!r} appears twice")
        seen.add(name)
        outputs.append((name, v))
    return inputs, inits, nodes, outputs, values


def _read_arrays(r: _Reader, inits) -> dict:
    arrays = {}
    for name, t, entry, size in inits:
        data = r.read(entry, size)
        arr = np.frombuffer(data, dtype=t.dtype.numpy.newbyteorder("<"))
        if t.dtype == DType.BOOL and arr.size and np.frombuffer(data, np.uint8).max() > 1:
            raise r.fail(f"initializer %{name}", "bool data must hold only 0 and 1 bytes")
        arrays[name] = arr.astype(t.dtype.numpy, copy=False).reshape(t.shape)
    return arrays


#: subgraphs nest at most this deep (an If in a Loop in a Loop...)
MAX_SUBGRAPH_DEPTH = 8


def _subgraph(r: _Reader, body, where: str) -> Graph:
    """A ``$graph`` param: validated like the file's graph, its data read, verified. Data only:
    nothing in it runs while loading."""
    if r.read is None:
        raise FormatError(f"{where}: a $graph param is only read from a OneModel file")
    if r.depth >= MAX_SUBGRAPH_DEPTH:
        raise FormatError(f"{where}: subgraphs nest more than {MAX_SUBGRAPH_DEPTH} deep")
    sub = _Reader(f"{where}: subgraph")
    sub.used_entries, sub.read, sub.max_bytes = r.used_entries, r.read, r.max_bytes
    sub.entries, sub.manifest, sub.depth = r.entries, r.manifest, r.depth + 1
    inputs, inits, nodes, outputs, values = _parse_graph(sub, {"graph": body}, r.entries,
                                                         r.max_bytes)
    _unknown_ops(sub, r.manifest, nodes)
    g = body if isinstance(body, dict) else {}
    graph = Graph(inputs=tuple(inputs), nodes=tuple(_reorder_params(nodes)),
                  outputs=tuple(outputs), values=values, initializers=_read_arrays(sub, inits),
                  guards=_parse_guards(sub, g))
    try:
        graph.verify()
    except OneModelError as exc:
        raise sub.fail("graph", f"is not valid: {exc}") from exc
    return graph


def _parse_guards(r: _Reader, g: dict) -> tuple:
    """The graph's size conditions (optional key ``guards``; see docs/format.md)."""
    out = []
    for i, x in enumerate(r.lst(g.get("guards", []), "graph.guards")):
        where = f"graph.guards[{i}]"
        x = r.obj(x, where, ("left", "right"))
        left = r.dim(x["left"], f"{where}.left", True)
        right = r.dim(x["right"], f"{where}.right", True)
        reason, source = x.get("reason", ""), x.get("source")
        if not isinstance(reason, str) or len(reason) > 1000:
            raise r.fail(f"{where}.reason", "expected a string of at most 1000 characters")
        if source is not None and (not isinstance(source, str) or len(source) > 1000):
            raise r.fail(f"{where}.source", "expected null or a string of at most 1000 characters")
        out.append(Guard(left, right, reason, source))
    return tuple(out)


def _unknown_ops(r: _Reader, manifest: dict, nodes) -> None:
    from ..registry import REGISTRY

    ops = REGISTRY.tables().ops
    providers = manifest.get("ops", {})
    if not isinstance(providers, dict):
        raise r.fail("ops", "expected an object mapping op names to providers")
    missing: dict[str, int] = {}
    for n in nodes:
        if n.op not in ops:
            missing[n.op] = missing.get(n.op, 0) + 1
    if not missing:
        return
    parts = []
    for name, count in sorted(missing.items()):
        info = providers.get(name)
        dist = ver = plugin = None
        if isinstance(info, dict):
            dist, ver, plugin = info.get("distribution"), info.get("version"), info.get("plugin")
        if isinstance(dist, str):
            by = f"distribution {dist}" + (f" {ver}" if isinstance(ver, str) else "")
        elif isinstance(plugin, str):
            by = f"plugin {plugin!r} (no distribution recorded)"
        else:
            by = "an unrecorded provider"
        nodes = f"{count} node{'s' if count != 1 else ''}"
        parts.append(f"{name} ({nodes}; provided by {by} when saved)")
    raise r.fail("ops", "the model uses op(s) that no installed plugin provides: "
                 + "; ".join(parts) + ". Install the distribution(s) named to load it.")


def _reorder_params(nodes) -> list[Node]:
    """Params in the op's declared order (JSON keys are sorted), so printing is stable."""
    from ..registry import REGISTRY

    ops = REGISTRY.tables().ops
    out = []
    for n in nodes:
        op = ops.get(n.op)
        if op is not None and n.params:
            order = {p: i for i, p in enumerate(op.params)}
            params = dict(sorted(n.params.items(), key=lambda kv: (order.get(kv[0], len(order)),
                                                                   kv[0])))
            n = Node(n.op, n.inputs, n.outputs, params, n.source)
        out.append(n)
    return out


def load_graph(path: str | os.PathLike, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Graph:
    """Read a OneModel file. Runs no code from the file; every problem is a `FormatError`."""
    label = check_path(path, "load_graph") if not hasattr(path, "read") else "<file>"
    r = _Reader(str(label))
    if not hasattr(path, "read"):
        if not os.path.exists(label):
            raise FileNotFoundError(f"no such file: {label!r}")
        if os.path.isdir(label):
            raise FormatError(f"{label}: is a folder, not a OneModel file")
    try:
        if hasattr(path, "read"):
            archive_size = path.seek(0, os.SEEK_END)
            path.seek(0)
        else:
            archive_size = os.path.getsize(label)
        zf = zipfile.ZipFile(path, "r")
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError,
            NotImplementedError) as exc:  # NotImplementedError: "zip file version 11.3"
        raise r.fail("file", f"not a OneModel file (not a zip archive: {exc})") from None
    with zf:
        entries = _check_entry_names(r, zf, archive_size)
        mi = entries.get(MANIFEST)
        if mi is None:
            raise r.fail("file", f"not a OneModel file: no {MANIFEST} entry")
        if mi.file_size > MAX_MANIFEST_BYTES:
            raise r.fail(MANIFEST, f"{mi.file_size} bytes exceed the limit of "
                         f"{MAX_MANIFEST_BYTES}")
        raw = _read_capped(r, zf, mi, mi.file_size)
        too_big = _json_scan.check(raw, max_elements=MAX_MANIFEST_ELEMENTS,
                                   max_nesting=MAX_MANIFEST_NESTING)
        if too_big:
            raise r.fail(MANIFEST, too_big)
        try:
            manifest = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as exc:
            raise r.fail(MANIFEST, f"is not valid JSON: {exc}") from None
        if not isinstance(manifest, dict):
            raise r.fail(MANIFEST, "must hold a JSON object")
        _check_version(r, manifest)
        r.read = lambda entry, size: _read_capped(r, zf, entries[entry], size)
        r.entries, r.max_bytes, r.manifest = entries, max_bytes, manifest
        inputs, inits, nodes, outputs, values = _parse_graph(r, manifest, entries, max_bytes)
        _unknown_ops(r, manifest, nodes)
        arrays = _read_arrays(r, inits)
    graph = Graph(inputs=tuple(inputs), nodes=tuple(_reorder_params(nodes)), outputs=tuple(outputs),
                  values=values, initializers=arrays, guards=_parse_guards(r, manifest["graph"]))
    try:
        graph.verify()
    except GraphError as exc:
        raise r.fail("graph", f"is not valid: {exc}") from exc
    except OneModelError as exc:
        raise r.fail("graph", f"is not valid: {type(exc).__name__}: {exc}") from exc
    return graph


def _no_constant(name: str):
    raise ValueError(f"{name} is not valid JSON (write non-finite floats as {{\"$float\": ...}})")


load = load_graph

__all__ = ["save_graph", "load_graph", "save", "load", "dumps", "loads", "FORMAT_VERSION", "manifest_of"]
