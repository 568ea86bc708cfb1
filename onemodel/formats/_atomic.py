"""Atomic file writes: write a temporary file in the target's folder, then ``os.replace`` it.

A failed write (an exception from the writer, a full disk) leaves the old file untouched and
removes the temporary file, so a reader never sees half a model.
"""
from __future__ import annotations

import os
import tempfile
import threading
from typing import BinaryIO, Callable


def check_path(path, what: str) -> str:
    """``path`` as a str, or an `ArgumentError` naming ``what`` (not a bare TypeError from
    ``os.fspath``)."""
    if isinstance(path, (str, os.PathLike)):
        p = os.fspath(path)
        if isinstance(p, str) and p:
            return p
    from ..errors import ArgumentError

    raise ArgumentError(f"{what}: the path must be a non-empty str or os.PathLike, got "
                        f"{path!r:.80}")


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write(fileobj)`` on a temporary file next to ``path`` and move it into place."""
    path = check_path(path, "save")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot save {path!r}: the folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot save to {path!r}: it is a folder")
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=folder)
    try:
        try:
            f = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)  # fdopen failed: the descriptor is still ours to close
            raise
        with f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(path):
            try:
                os.chmod(tmp, os.stat(path).st_mode & 0o777)
            except OSError:
                pass
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


_umask_lock = threading.Lock()


def _umask() -> int:
    """The process umask, read without changing it where the OS allows (``os.umask`` can only
    read by setting, which would briefly give files created by other threads mode 0666)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    with _umask_lock:
        mask = os.umask(0o077)  # restrictive while it is set, not permissive
        os.umask(mask)
    return mask
