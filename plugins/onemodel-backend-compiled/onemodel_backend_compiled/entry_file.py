"""The file format of one plan-cache entry: a JSON header and raw arrays, each with a CRC-32.

::

    MAGIC (8 bytes) | header length (uint64 LE) | header (UTF-8 JSON) | CRC-32 of the header
    (uint32 LE) | zero padding to 64 | the arrays, each at a 64-byte aligned offset

The header is ``{"format": FORMAT, "key": ..., "arrays": [{"dtype", "shape", "offset",
"nbytes", "crc"}, ...], "body": ...}``. Reading checks everything it can before an array is
handed out: the magic, sizes against the file's, both checksums, the key asked for, the dtypes
(plain numeric ones only: nothing is unpickled or executed). Any mismatch is `EntryError`.

Only a regular file is read, opened without following a symbolic link and without blocking (a
FIFO under an entry's name would otherwise hold the process in ``open`` forever), and every
array is read into memory of its own: nothing a later change of the file does (truncated, or
rewritten in place) reaches a session that loaded it, where a shared mapping would give SIGBUS
or changed numbers.
"""
from __future__ import annotations

import json
import math
import os
import stat
import struct
import zlib

import numpy as np

from onemodel.errors import OneModelError

MAGIC = b"OMPLAN\x00\x01"
FORMAT = 1
ALIGN = 64
#: a header larger than this is not one of ours
MAX_HEADER = 64 << 20
#: open for reading: never through a symbolic link, never waiting for a writer (FIFOs)
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
DTYPES = frozenset(np.dtype(t).str for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64))


class EntryError(OneModelError):
    """A cache entry that cannot be trusted (truncated, corrupted, foreign or stale)."""


def _pad(n: int) -> int:
    return -n % ALIGN


def _bytes(a: np.ndarray):
    """A contiguous array's memory as bytes (no copy)."""
    return memoryview(a.reshape(-1)).cast("B") if a.nbytes else b""


def encode(key: str, body, arrays: list[np.ndarray]) -> list[bytes]:
    """The entry's bytes, as chunks (large arrays are not copied into one buffer)."""
    specs, datas, offset = [], [], 0
    for a in arrays:
        a = np.ascontiguousarray(a)
        if a.dtype.str not in DTYPES:
            raise EntryError(f"cannot store an array of dtype {a.dtype}")
        data = _bytes(a)
        specs.append({"dtype": a.dtype.str, "shape": list(a.shape), "offset": offset,
                      "nbytes": a.nbytes, "crc": zlib.crc32(data)})
        datas.append(data)
        offset += a.nbytes + _pad(a.nbytes)
    header = json.dumps({"format": FORMAT, "key": key, "arrays": specs, "body": body},
                        separators=(",", ":")).encode()
    head = MAGIC + struct.pack("<Q", len(header)) + header + struct.pack("<I",
                                                                          zlib.crc32(header))
    chunks = [head + bytes(_pad(len(head)))]
    for data in datas:
        chunks.append(data)
        chunks.append(bytes(_pad(len(data))))
    return chunks


def read(path: str, key: str):
    """``(body, arrays)`` of the entry at ``path`` if it is a sound entry for ``key``, else
    `EntryError` (`FileNotFoundError` when there is none)."""
    with os.fdopen(open_regular(path), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        start = f.read(len(MAGIC) + 8)
        if len(start) < len(MAGIC) + 8 or start[:len(MAGIC)] != MAGIC:
            raise EntryError("not a plan-cache entry of this format")
        (hlen,) = struct.unpack("<Q", start[len(MAGIC):])
        if hlen > min(MAX_HEADER, size):
            raise EntryError(f"header length {hlen} past the file's {size} bytes")
        header = f.read(hlen)
        crc = f.read(4)
        if len(header) != hlen or len(crc) != 4:
            raise EntryError("truncated header")
        if struct.unpack("<I", crc)[0] != zlib.crc32(header):
            raise EntryError("header checksum mismatch")
        try:
            head = json.loads(header)
        except (ValueError, RecursionError) as exc:  # RecursionError: a nesting bomb
            raise EntryError(f"header is not JSON: {type(exc).__name__}: {exc}") from None
        if not isinstance(head, dict) or head.get("format") != FORMAT:
            raise EntryError("another format version")
        if head.get("key") != key:
            raise EntryError("entry of another key")
        base = len(MAGIC) + 8 + hlen + 4
        base += _pad(base)
        specs = head.get("arrays")
        if not isinstance(specs, list):
            raise EntryError("no array table")
        arrays, end = [], base
        for spec in specs:
            a = _read_array(f, spec, base, size)
            arrays.append(a)
            end = max(end, base + spec["offset"] + spec["nbytes"])
        if size != end + _pad(end) and size != end:
            raise EntryError(f"{size - end} stray bytes after the arrays")
    return head.get("body"), arrays


def open_regular(path: str) -> int:
    """A descriptor of the regular file at ``path`` (`FileNotFoundError` when there is none);
    `EntryError` for a symbolic link, a FIFO, a directory or a device, found without blocking."""
    if not getattr(os, "O_NOFOLLOW", 0) and os.path.islink(path):
        raise EntryError("a symbolic link, not an entry")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP: a symbolic link (O_NOFOLLOW); EACCES, ...
        raise EntryError(f"cannot open it: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise EntryError(f"not a regular file (mode {stat.filemode(mode)})")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_array(f, spec, base: int, size: int) -> np.ndarray:
    try:
        dtype, shape = spec["dtype"], spec["shape"]
        offset, nbytes, crc = spec["offset"], spec["nbytes"], spec["crc"]
    except (TypeError, KeyError):
        raise EntryError("malformed array record") from None
    ints = [offset, nbytes, crc, *shape] if isinstance(shape, list) else None
    if dtype not in DTYPES or ints is None or not all(
            type(i) is int and i >= 0 for i in ints):
        raise EntryError("malformed array record")
    dt = np.dtype(dtype)
    if math.prod(shape) * dt.itemsize != nbytes or offset % ALIGN \
            or base + offset + nbytes > size:
        raise EntryError("array record does not fit the file")
    a = np.empty(shape, dt)  # read, not mapped: the file may change after (module doc)
    f.seek(base + offset)
    if nbytes and f.readinto(_bytes(a)) != nbytes:
        raise EntryError("truncated array")
    if zlib.crc32(_bytes(a)) != crc:
        raise EntryError("array checksum mismatch")
    return a


__all__ = ["encode", "read", "open_regular", "EntryError", "MAGIC", "FORMAT"]
