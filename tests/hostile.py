"""Helpers for the reliability tests (fuzzing, malicious files): seed models, a guard that
catches side effects, and small zip/ONNX byte surgery.

`guard()` is the core of it: while active (in this thread) a `sys.addaudithook` hook refuses
and records anything a loader must never do with a file's content: open a file for writing,
create, rename or delete a path, start a process, unpickle, exec code that is not an installed
module being imported (or, with ``allow_exec``, a session's own generated plan), or open a
socket. A SIGALRM timer turns a hang into a failure, and the watched
folders must end up exactly as they started.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import struct
import sys
import threading
import zipfile

import numpy as np

import onemodel as om
from onemodel import DType, Tensor

#: examples per fuzz test: the default keeps `make test` fast; set ONEMODEL_FUZZ_EXAMPLES for a
#: long run (docs/reliability.md)
FUZZ_EXAMPLES = int(os.environ.get("ONEMODEL_FUZZ_EXAMPLES", "0") or 0)


class SideEffect(BaseException):
    """Raised (and recorded) by the audit hook: a BaseException, so no loader can swallow it."""


class Hang(BaseException):
    """Raised by the alarm: the code under test ran past its time limit."""


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_FORBIDDEN = {
    "os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.truncate",
    "os.chmod", "os.chown", "os.utime", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
    "os.fork", "os.forkpty", "os.kill", "subprocess.Popen", "pickle.find_class",
    "ctypes.dlopen", "socket.connect", "socket.bind",
    "socket.getaddrinfo", "urllib.Request", "shutil.rmtree", "shutil.move", "shutil.copyfile",
    "tempfile.mkstemp", "tempfile.mkdtemp",
}
_state = threading.local()


def _hook(event: str, args: tuple) -> None:
    record = getattr(_state, "record", None)
    if record is None:
        return
    bad = None
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, 0))[:3]
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS):
            bad = f"open({path!r}, {mode!r}) for writing"
    elif event == "exec":
        name = getattr(args[0] if args else None, "co_filename", "")
        # importing an installed module (a lazy import) execs its .py file: that is fine;
        # code from anywhere else (a string) is not, unless a session compiles its plan
        if not _state.allow_exec and not (name.endswith(".py") and os.path.isfile(name)):
            bad = f"exec of code from {name!r}"
    elif event == "ctypes.dlopen" and _already_mapped(args[0] if args else None):
        pass  # threadpoolctl re-opening the BLAS numpy already loaded: no new code
    elif event in _FORBIDDEN:
        bad = f"{event}{tuple(args)!r:.200}"
    if bad is not None:
        record.append(bad)
        raise SideEffect(bad)


def _already_mapped(path) -> bool:
    """Whether the shared library ``path`` is already loaded in this process."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return False
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return False
    real = os.path.realpath(path)
    return any(line.endswith((" " + path, " " + real)) for line in maps.splitlines())


sys.addaudithook(_hook)


def _snapshot(folders) -> dict:
    out = {}
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            for name in dirs + files:
                p = os.path.join(root, name)
                try:
                    st = os.lstat(p)
                except FileNotFoundError:
                    continue
                out[p] = (st.st_size, st.st_mtime_ns)
    return out


@contextlib.contextmanager
def guard(*watched, seconds: float = 20.0, allow_exec: bool = False):
    """Fail if the block writes, spawns, unpickles, execs or changes ``watched`` folders, or
    runs longer than ``seconds``. ``allow_exec``: a session compiles its plans (generated from
    the graph, never from text in the file) with ``exec``. The compiled backend's on-disk plan
    cache is off inside: writing it is a legitimate side effect, but the guard allows none."""
    saved_cache = os.environ.get("ONEMODEL_CACHE")
    os.environ["ONEMODEL_CACHE"] = "0"
    before = _snapshot(watched)
    record: list[str] = []
    alarm = threading.current_thread() is threading.main_thread()
    if alarm:
        def on_alarm(signum, frame):
            raise Hang(f"still running after {seconds} s")
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    _state.record, _state.allow_exec = record, allow_exec
    try:
        yield record
    except SideEffect:
        pass
    finally:
        _state.record = None
        if saved_cache is None:
            os.environ.pop("ONEMODEL_CACHE", None)
        else:
            os.environ["ONEMODEL_CACHE"] = saved_cache
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    assert record == [], f"forbidden side effects: {record}"
    after = _snapshot(watched)
    assert after == before, f"files changed: {set(after.items()) ^ set(before.items())}"


def load_outcome(loader, path, *watched):
    """Run ``loader(path)`` under `guard`: the result, or the `OneModelError` it raised. Any
    other exception propagates (and fails the test)."""
    with guard(os.path.dirname(os.fspath(path)), *watched):
        try:
            return loader(path)
        except om.OneModelError as exc:
            return exc


def try_session(graph, *watched):
    """A loaded graph must also make a session and run on small feeds (or say why not with a
    `OneModelError`)."""
    with guard(*watched, allow_exec=True):
        try:
            session = om.Session(graph)
            feeds = {}
            for v in graph.inputs:
                shape = tuple(2 if isinstance(d, om.core.symbolic.Dim) else d for d in v.shape)
                if int(np.prod(shape, dtype=object)) > 1_000_000:
                    return None
                feeds[v.name] = np.ones(shape, v.dtype.numpy)
            with np.errstate(all="ignore"):
                return session.run(feeds)
        except om.OneModelError as exc:
            return exc


# -- seed models -----------------------------------------------------------------------------
def _params(seed=0):
    rng = np.random.default_rng(seed)

    def p(*shape):
        return Tensor.from_numpy(rng.uniform(-0.5, 0.5, shape).astype(np.float32))

    return p


def seed_traced():
    """Small traced models covering many ops and params: an MLP with softmax, a CNN, and a
    block with layer norm, attention, gelu, concat, transpose and indexing."""
    p = _params()
    w1, b1, w2 = p(8, 4), p(8), p(3, 8)

    def mlp(x):
        h = om.ops.relu(om.ops.linear(x, w1, b1))
        return om.ops.log_softmax(om.ops.linear(h, w2), -1)

    cw, cb, lw = p(4, 1, 3, 3), p(4), p(2, 36)

    def cnn(x):
        y = om.ops.max_pool2d(om.ops.relu(om.ops.conv2d(x, cw, cb, padding=1)), 2)
        y = y.reshape(y.shape[0], -1)
        return om.ops.linear(y, lw)

    g, b = p(6), p(6)
    wq = p(6, 6)

    def block(x):
        h = om.ops.layer_norm(x, (6,), g, b)
        q = om.ops.linear(h, wq)
        a = om.ops.scaled_dot_product_attention(q, h, h)
        y = om.ops.gelu(a + x)
        y = om.ops.concat([y, y[:, :1, :]], 1).transpose(1, 2)
        return om.ops.clip(y, -3.0, 3.0).sum(axis=-1)

    return [
        om.trace(mlp, Tensor.zeros(DType.F32, 3, 4), "batch", None),
        om.trace(cnn, Tensor.zeros(DType.F32, 2, 1, 6, 6), "batch", None, None, None),
        om.trace(block, Tensor.zeros(DType.F32, 2, 5, 6), "batch", "seq", None),
    ]


def onemodel_bytes(traced) -> bytes:
    from onemodel.formats.onemodel_file import dumps

    return dumps(traced)


def onnx_bytes(traced, folder) -> bytes:
    path = os.path.join(folder, "seed.onnx")
    traced.save_onnx(path)
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)
    return data


# -- zip surgery ---------------------------------------------------------------------------------
def read_zip(data: bytes) -> tuple[dict, dict[str, bytes]]:
    """The manifest (parsed) and every entry's bytes of a OneModel file."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        entries = {zi.filename: zf.read(zi) for zi in zf.infolist()}
    return json.loads(entries["manifest.json"]), entries


def write_zip(entries, manifest=None, compress=()) -> bytes:
    """A zip of ``entries`` (name -> bytes, in order; duplicates allowed as a list of pairs),
    the manifest replaced by ``manifest`` when given; names in ``compress`` are deflated."""
    buf = io.BytesIO()
    items = entries.items() if isinstance(entries, dict) else entries
    with warnings_off(), zipfile.ZipFile(buf, "w") as zf:
        for name, data in items:
            if name == "manifest.json" and manifest is not None:
                data = json.dumps(manifest).encode()
            method = zipfile.ZIP_DEFLATED if name in compress else zipfile.ZIP_STORED
            zf.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data, method)
    return buf.getvalue()


@contextlib.contextmanager
def warnings_off():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about duplicate names
        yield


def patch_sizes(data: bytes, name: str, file_size: int | None = None,
                compress_size: int | None = None) -> bytes:
    """Rewrite the sizes an entry declares, in its local header and the central directory."""
    raw = bytearray(data)
    enc = name.encode()
    i = raw.find(b"PK\x03\x04")
    while i >= 0:
        n = struct.unpack_from("<H", raw, i + 26)[0]
        if raw[i + 30:i + 30 + n] == enc:
            if compress_size is not None:
                struct.pack_into("<I", raw, i + 18, compress_size)
            if file_size is not None:
                struct.pack_into("<I", raw, i + 22, file_size)
        i = raw.find(b"PK\x03\x04", i + 4)
    i = raw.find(b"PK\x01\x02")
    while i >= 0:
        n = struct.unpack_from("<H", raw, i + 28)[0]
        if raw[i + 46:i + 46 + n] == enc:
            if compress_size is not None:
                struct.pack_into("<I", raw, i + 20, compress_size)
            if file_size is not None:
                struct.pack_into("<I", raw, i + 24, file_size)
        i = raw.find(b"PK\x01\x02", i + 4)
    return bytes(raw)


def json_paths(obj, prefix=()):
    """Every path (a tuple of keys and indexes) in a JSON document, the root excluded."""
    out = []
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = enumerate(obj)
    else:
        return out
    for k, v in items:
        out.append(prefix + (k,))
        out.extend(json_paths(v, prefix + (k,)))
    return out


def get_path(obj, path):
    for k in path:
        obj = obj[k]
    return obj


# -- bounded subprocesses --------------------------------------------------------------------------
def run_bounded(code: str, *, mem_mib: int = 768, seconds: float = 60.0, cwd=None):
    """Run ``code`` in a fresh Python with its address space capped at ``mem_mib`` (RLIMIT_AS)
    and a wall-clock limit: a loader that blows up fails the test instead of the machine. The
    child has this checkout on its path and one BLAS thread (OpenBLAS reserves memory per
    thread). Returns the `subprocess.CompletedProcess`; a ``MemoryError`` in the child shows in
    its stderr and return code."""
    import resource
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def cap():
        limit = mem_mib << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(
                   os.pathsep))
    return subprocess.run([sys.executable, "-c", code], preexec_fn=cap, capture_output=True,
                          text=True, timeout=seconds, env=env, cwd=cwd)


#: a child script's last line: ``OUTCOME <kind> <peak KiB>``, written by `outcome_code`
_OUTCOME = """
import resource, sys, tracemalloc
import onemodel as om
import onemodel.formats.onemodel_file, onemodel.formats.onnx_import  # imports are not the load
om.registry.REGISTRY.tables()
def _outcome(fn, *args):
    tracemalloc.start()
    try:
        fn(*args)
        kind = "loaded"
    except om.OneModelError as exc:
        kind = type(exc).__name__ + ":" + str(exc).replace("\\n", " ")[:300]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print("OUTCOME", peak // 1024, kind)
"""


def bounded_load(loader: str, path, *, mem_mib: int = 768, seconds: float = 60.0):
    """``loader(path)`` (``loader`` as importable text, e.g. ``"om.load"``) in a capped child:
    (kind, peak KiB of Python allocations) where kind is ``"loaded"`` or
    ``"ErrorClass:message"``. Any other ending (a raw exception, MemoryError, a kill by the cap,
    a timeout) fails with the child's stderr."""
    code = _OUTCOME + f"\n_outcome(lambda p: {loader}(p), {os.fspath(path)!r})\n"
    r = run_bounded(code, mem_mib=mem_mib, seconds=seconds)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("OUTCOME ")]
    assert r.returncode == 0 and lines, f"child ended with {r.returncode}: {r.stderr[-2000:]}"
    _, peak, kind = lines[-1].split(" ", 2)
    return kind, int(peak)


def overlapping_zip(shared_names, block: bytes, others: dict) -> bytes:
    """A zip whose ``shared_names`` entries all read the same stored ``block`` (each local header's
    extra field spans the headers after it, so every entry's data starts at one offset: the
    overlapping-entries bomb), followed by ordinary stored ``others`` (name -> bytes)."""
    import zlib

    crc = zlib.crc32(block)
    names = [n.encode() for n in shared_names]
    offsets, pos = [], 0
    for n in names:
        offsets.append(pos)
        pos += 30 + len(n)
    data_at = pos
    out = bytearray()
    for off, n in zip(offsets, names):
        extra = data_at - (off + 30 + len(n))  # everything up to the shared block
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0x21, crc, len(block),
                           len(block), len(n), extra) + n
    out += block
    central = []
    for off, n in zip(offsets, names):
        central.append((n, off, crc, len(block)))
    for name, payload in others.items():
        n = name.encode()
        c = zlib.crc32(payload)
        central.append((n, len(out), c, len(payload)))
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0x21, c, len(payload),
                           len(payload), len(n), 0) + n + payload
    cd_at = len(out)
    for n, off, c, size in central:
        out += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0x21, c, size,
                           size, len(n), 0, 0, 0, 0, 0, off) + n
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central),
                       len(out) - cd_at, cd_at, 0)
    return bytes(out)
