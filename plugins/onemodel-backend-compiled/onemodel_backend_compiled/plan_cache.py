"""The compiled backend's on-disk plan cache: one entry per graph and shape signature holding
the lowered plan (`plan_codec`), and one file per packed weight block it reads (shared by the
signatures whose blocks are laid out alike), so a new process skips lowering and weight packing
(the costs of a first run; see docs/guide/backends.md).

The key is a SHA-256 of everything an entry depends on: the graph (structure, params, types,
guards, outputs, and a SHA-256 of every constant's bytes), the sizes of the symbolic axes, the
outputs asked for, the kernel table in use (`dispatch.signature`: the top copy and a digest of
`_native.kernels()`) and the heuristics the lowering takes for it (``heuristics.current()``,
which a caller may replace at run time), this plugin's sources and native library and the
core's sources (path, size, modification time), numpy's version, and for each op the graph
names (its nodes' ops and the members of its fused chains, whose formulas the plan compiles) its
provider and distribution version, its kernels (by the text of their source files) and its
traits (the pointwise formula). A graph naming an op registered at run time (no installed
distribution, so no version) is not cached.

Loading never fails a run either: any failure to read, decode or check an entry (truncated,
corrupted, foreign, another version, hostile: `entry_file.EntryError`, `plan_codec.BadEntry`,
any other exception) removes it, the plan is lowered anew and `store` replaces the entry
atomically. Entries are read only from regular files, without following links or blocking, into
memory of the session's own (`entry_file`), so a file changed later never reaches a live session.
Saving never fails a run (a read-only or full disk just means no entry). What someone who can
write the folder can and cannot do: docs/reliability.md, "The compiled plan cache's threat
model".
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import threading
from typing import Mapping

import attrs
import numpy as np

from onemodel import cache as disk
from onemodel.core.graph import Graph, format_param

from . import dispatch, entry_file, heuristics, plan_codec
from .plan import NativePlan
from .weights import WeightBlock

NAMESPACE = "compiled"
#: packed weight blocks are files of their own (``w-<key>``), shared by the plans that read them
WEIGHTS_PREFIX = "w-"
#: bump when what an entry means changes in a way the code digest would not show (2: the body
#: is a frozen `lowered.Program`, no longer the fields of a `Lowering`; 3: addresses in bytes,
#: a `Loc` of its dtype's elements, the arena in bytes)
SCHEMA = 3
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_code_digest: str | None = None
_code_lock = threading.Lock()


def code_digest() -> str:
    """This plugin's files (sources and native library) and the core's sources, by path, size
    and modification time, and numpy's version: computed once per process."""
    global _code_digest
    with _code_lock:
        if _code_digest is None:
            import onemodel

            h = hashlib.sha256(f"schema {SCHEMA} numpy {np.__version__} onemodel "
                               f"{onemodel.__version__}".encode())
            for name in sorted(os.listdir(_PKG_DIR)):
                if name.endswith((".py", ".so", ".pyd")):
                    h.update(_stat_line(os.path.join(_PKG_DIR, name)))
            core = os.path.dirname(os.path.abspath(onemodel.__file__))
            for folder, dirs, files in os.walk(core):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(".py"):
                        h.update(_stat_line(os.path.join(folder, name)))
            _code_digest = h.hexdigest()
        return _code_digest


def _stat_line(path: str) -> bytes:
    """A file by path, size and modification time: a rebuilt library or an edited source
    changes it (an installed package's files keep theirs)."""
    try:
        st = os.stat(path)
        return f"{path} {st.st_size} {st.st_mtime_ns}\n".encode()
    except OSError:
        return f"{path} missing\n".encode()


def _canon(v) -> str:
    """Params as text that changes when they do (arrays by digest, not numpy's short repr)."""
    if isinstance(v, np.ndarray):
        order, data = _layout_bytes(v)
        return f"array({v.dtype.str},{v.shape},{order},{hashlib.sha256(data).hexdigest()})"
    if isinstance(v, (tuple, list)):
        inner = ",".join(_canon(x) for x in v)
        return f"({inner})" if isinstance(v, tuple) else f"[{inner}]"
    if isinstance(v, Mapping):  # a dict, or a Graph's frozen mappings (a subgraph param)
        return "{" + ",".join(f"{k!r}:{_canon(x)}" for k, x in v.items()) + "}"
    if attrs.has(type(v)):  # a record (an op's traits): its fields
        return f"{type(v).__qualname__}(" + ",".join(
            f"{f.name}={_canon(getattr(v, f.name))}" for f in attrs.fields(type(v))) + ")"
    if callable(v) and not isinstance(v, type):  # by name and source file, not address
        return _kernel_id(v)
    return f"{type(v).__name__}:{format_param(v)}"


def _layout_bytes(a: np.ndarray) -> tuple[str, object]:
    """An array's memory as bytes without a copy where it is contiguous in either order (the
    order is hashed too; ONNX imports keep transposed weights as Fortran-ordered views)."""
    if not a.flags.c_contiguous and a.flags.f_contiguous:
        return "F", _bytes(a.T)
    return "C", _bytes(a)


def _bytes(a: np.ndarray):
    a = np.ascontiguousarray(a)
    return memoryview(a.reshape(-1)).cast("B") if a.nbytes else b""


def _kernel_id(fn) -> str:
    """A function by name and by its module's file: path, size, time and a SHA-256 of the text
    (an edit that keeps the size and time, or a reinstall that keeps the time, still shows)."""
    if fn is None:
        return "-"
    mod = sys.modules.get(getattr(fn, "__module__", None) or "")
    path = getattr(mod, "__file__", None)
    where = f"{_stat_line(path).decode().strip()} {_file_sha(path)}" if path else "?"
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))} [{where}]"


_file_shas: dict = {}


def _file_sha(path: str) -> str:
    """SHA-256 of a source file's bytes, once per process and file state."""
    line = _stat_line(path)
    sha = _file_shas.get(line)
    if sha is None:
        try:
            with open(path, "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            sha = "unreadable"
        _file_shas[line] = sha
    return sha


def _named_ops(graph, ops) -> set:
    """The ops a lowering of ``graph`` may consult: those of its nodes and those its nodes'
    params name (a fused ``elementwise_chain`` keeps its members as ``(op, args, params)`` in
    its ``steps`` param; the backend compiles their formulas into the plan)."""
    found = {n.op for n in graph.nodes}
    stack = [v for n in graph.nodes for v in n.params.values()]
    while stack:
        v = stack.pop()
        if isinstance(v, Graph):  # a subgraph param: its ops run too
            found |= _named_ops(v, ops)
        elif isinstance(v, str):
            if v in ops:
                found.add(v)
        elif isinstance(v, (tuple, list, set, frozenset)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
    return found


def graph_digest(graph, ops, numpy_kernels, lowerings=None) -> str | None:
    """SHA-256 of the graph and of the records of the ops it names (`_named_ops`: fused
    chains' members too), each by provider and distribution version, kernels and native
    lowerings (``lowerings``: op -> KernelDef; their source text and provider) and traits (the
    pointwise formula); None when one has no version (registered at run time: its code may
    change with no trace)."""
    from onemodel import registry

    versioned = {i.label: f"{i.distribution} {i.version}" for i in registry.plugins()
                 if i.distribution}
    h = hashlib.sha256()
    for op in sorted(_named_ops(graph, ops)):
        rec = ops.get(op)
        if rec is None or rec.provider not in versioned:
            return None
        kdef = numpy_kernels.get(op)
        ldef = (lowerings or {}).get(op)
        if ldef is not None:
            if ldef.provider not in versioned:
                return None
            h.update(f"lower {op} {ldef.provider} {versioned[ldef.provider]} "
                     f"{_kernel_id(ldef.lower)}\n".encode())
        h.update(f"op {op} {rec.provider} {versioned[rec.provider]} {_kernel_id(rec.kernel)} "
                 f"{_kernel_id(getattr(kdef, 'kernel', None))} {getattr(kdef, 'provider', None)} "
                 f"{_canon(getattr(rec, 'traits', None))}\n".encode())
    for v in graph.inputs:
        h.update(f"in {v}\n".encode())
    for name in sorted(graph.values):
        h.update(f"value {graph.values[name]}\n".encode())
    for g in graph.guards:
        h.update(f"guard {g.text}\n".encode())
    for n in graph.nodes:
        h.update(f"node {n.op} {n.inputs!r} {n.outputs!r} {_canon(dict(n.params))}\n"
                 .encode())
    h.update(f"out {graph.outputs!r}\n".encode())
    for name in sorted(graph.initializers):
        a = np.asarray(graph.initializers[name])
        order, data = _layout_bytes(a)
        h.update(f"const {name} {a.dtype.str} {a.shape} {order} ".encode())
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


class PlanCache:
    """The plan cache of one session's graph (`NativeGraph.plan_cache`). ``stats`` counts
    hits, misses, entries stored, entries rejected, and says why a plan was not stored."""

    def __init__(self, graph) -> None:
        self.graph = graph
        self._digest: str | None = None
        self._digested = False
        self.stats = {"hits": 0, "misses": 0, "stored": 0, "rejected": 0, "not_stored": None}

    def digest(self, ng) -> str | None:
        if not self._digested:
            self._digest = graph_digest(self.graph, ng.ops, ng.numpy_kernels,
                                        ng.lowering_records)
            self._digested = True
            if self._digest is None:
                self.stats["not_stored"] = ("an op of the graph, or its native lowering, was "
                                            "registered at run time")
        return self._digest

    def key(self, ng, env, output_names) -> str | None:
        digest = self.digest(ng)
        if digest is None:
            return None
        text = json.dumps([code_digest(), digest, sorted((k, int(v)) for k, v in env.items()),
                           list(output_names), dispatch.signature(), repr(heuristics.current())])
        return hashlib.sha256(text.encode()).hexdigest()

    @staticmethod
    def path(key: str, prefix: str = "") -> str:
        return os.path.join(disk.namespace_dir(NAMESPACE), prefix + key[:40] + disk.SUFFIX)

    def weights_key(self, ng, layout_json: str) -> str:
        """The key of a packed weight block: what it was packed from (the graph, the code) and
        its layout, so the signatures of a session that share one share its file."""
        text = json.dumps([code_digest(), self.digest(ng), layout_json])
        return hashlib.sha256(text.encode()).hexdigest()

    def load(self, ng, env, output_names) -> NativePlan | None:
        """The stored plan of this signature, bound to ``ng``'s weight block, or None. Any
        failure to read, decode or check a stored entry (`entry_file.EntryError`,
        `plan_codec.BadEntry`, another `OneModelError`, RecursionError, ValueError, ...) is no
        error of the run: the entry is removed and the plan lowered anew, and `store` writes
        it again."""
        key = self.key(ng, env, output_names)
        if key is None:
            return None
        path, wpath = self.path(key), None
        try:
            body, arrays = entry_file.read(path, key)
            if not isinstance(body, dict) or set(body) != {"plan", "layout"}:
                raise plan_codec.BadEntry("malformed body")
            wkey = self.weights_key(ng, json.dumps(body["layout"]))
            wpath = self.path(wkey, WEIGHTS_PREFIX)
            try:
                _, (data,) = entry_file.read(wpath, wkey)
            except FileNotFoundError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bad block: the next store writes it
                _remove(wpath)
                raise entry_file.EntryError(f"weights: {type(exc).__name__}: {exc}") from None
            plan = self._restore(ng, env, body, arrays, data)
        except FileNotFoundError:
            plan = None
        except Exception as exc:  # noqa: BLE001 - whatever the entry holds: lower anew
            self.stats["rejected"] += 1
            self.stats["last_rejection"] = f"{type(exc).__name__}: {exc}"
            _remove(path)  # a symbolic link or a FIFO goes itself; a directory stays
            plan = None
        if plan is None:
            self.stats["misses"] += 1
            return None
        self.stats["hits"] += 1
        disk.touch(path)
        disk.touch(wpath)
        return plan

    def _restore(self, ng, env, body, arrays, data) -> NativePlan | None:
        """The plan, decoded and checked against the stored weight block alone (a block of its
        own), before this session's block adopts the stored one: a failure leaves the
        session's block as it was, for the lowering that follows."""
        layout = plan_codec.decode_value(body["layout"])
        if data.dtype != np.float32 or data.ndim != 1 or not isinstance(layout, list) or any(
                not isinstance(p, tuple) or len(p) != 2 or type(p[1]) is not int
                or not 0 <= p[1] <= data.size for p in layout):
            raise plan_codec.BadEntry("malformed weight layout")
        stored = WeightBlock()
        if not stored.adopt(layout, data):
            raise plan_codec.BadEntry("a weight layout naming a key twice")
        program = plan_codec.decode(body["plan"], arrays, self.graph, env, stored, ng.ops,
                                    ng.numpy_kernels)
        plan = NativePlan(program, self.graph, ng.ops, ng.weights, ng.pool)
        plan.ready_arena()  # a size no memory holds fails here, not at the first run
        if not ng.weights.adopt(layout, data):
            return None  # this session's block was laid out otherwise: lower anew
        head, _, rest = plan.source.partition("\n")
        plan.source = f"{head}; loaded from the on-disk plan cache\n{rest}"
        return plan

    def store(self, ng, env, output_names, program) -> None:
        """Save the plan just lowered, and the weight block unless a file holds it already;
        never raises for a reason of the cache's own."""
        key = self.key(ng, env, output_names)
        if key is None:
            return
        try:
            body, arrays = plan_codec.encode(program, self.graph, ng.ops, ng.numpy_kernels)
            layout, data = ng.weights.snapshot()
            layout_value = plan_codec.encode_value(layout)
            wkey = self.weights_key(ng, json.dumps(layout_value))
            chunks = entry_file.encode(key, {"plan": body, "layout": layout_value}, arrays)
        except (plan_codec.NotCacheable, entry_file.EntryError) as exc:
            self.stats["not_stored"] = str(exc)
            return
        try:
            wpath = self.path(wkey, WEIGHTS_PREFIX)
            if _is_regular(wpath):
                disk.touch(wpath)  # used again: eviction keeps it past the plans it serves
            else:
                disk.write_entry(NAMESPACE, os.path.basename(wpath),
                                 entry_file.encode(wkey, {"floats": int(data.size)}, [data]))
            disk.write_entry(NAMESPACE, os.path.basename(self.path(key)), chunks)
            disk.evict(NAMESPACE)
        except OSError as exc:  # read-only, full, removed meanwhile: no entry this time
            self.stats["not_stored"] = f"{type(exc).__name__}: {exc}"
            return
        self.stats["stored"] += 1


def _is_regular(path: str) -> bool:
    """A regular file itself (not a link to one, not a FIFO): an entry `load` would read."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


__all__ = ["PlanCache", "code_digest", "graph_digest", "NAMESPACE"]
