"""Atomic file writes: write a temporary file in the target's folder, then ``os.replace`` it.

A failed write (an exception from the writer, a full disk) leaves the old file untouched and
removes the temporary file, so a reader never sees half a model. The temporary name is short
(a target name may use all 255 bytes a folder entry allows), and only a regular file is ever
replaced: a symlink to one is followed (the link stays, its target gets the new content), while
a FIFO, a device or a socket is refused, since renaming over it would replace ``/dev/null`` itself.
"""
from __future__ import annotations

import os
import stat
import tempfile
import threading
from typing import BinaryIO, Callable


def check_path(path, what: str) -> str:
    """``path`` as a str, or an `ArgumentError` naming ``what`` (not a bare TypeError from
    ``os.fspath``)."""
    from ..errors import ArgumentError

    if isinstance(path, (str, os.PathLike)):
        p = os.fspath(path)
        if isinstance(p, str) and p:
            if "\x00" in p:
                raise ArgumentError(f"{what}: the path {p!r:.120} contains a NUL byte")
            return p

    raise ArgumentError(f"{what}: the path must be a non-empty str or os.PathLike, got "
                        f"{path!r:.80}")


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write(fileobj)`` on a temporary file next to ``path`` and move it into place."""
    path = target = check_path(path, "save")
    if os.path.islink(path):
        target = os.path.realpath(path)  # replace what the link points to, keep the link
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot save {path!r}: the folder {folder!r} does not exist")
    _check_replaceable(path, target)
    fd, tmp = tempfile.mkstemp(prefix=".onemodel-", suffix=".tmp", dir=folder)
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
        if os.path.exists(target):
            try:
                os.chmod(tmp, os.stat(target).st_mode & 0o777)
            except OSError:
                pass
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _check_replaceable(path: str, target: str) -> None:
    """Refuse to replace anything but a regular file (or nothing)."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return
    except OSError:
        return  # unreadable metadata: the write itself will say what is wrong
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"cannot save to {path!r}: it is a folder")
    from ..errors import ArgumentError

    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    via = f" (the symlink points to {target!r})" if target != path else ""
    raise ArgumentError(f"cannot save to {path!r}: it is {kind}, not a regular file{via}; "
                        f"refusing to replace it")


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
