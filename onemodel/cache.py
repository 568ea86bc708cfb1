"""The on-disk cache: where backends keep what is costly to rebuild in a new process, and how to
see and clear it (``onemodel cache``, ``onemodel cache clear``).

The folder is ``$ONEMODEL_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/onemodel``, else
``~/.cache/onemodel``. ``ONEMODEL_CACHE=0`` (or ``off``, ``false``, ``no``) turns it off;
``ONEMODEL_CACHE_MAX_MB`` bounds each backend's part (default 1024): past it the entries used
least recently are removed. Each backend owns one sub-folder (its *namespace*) and decides what
an entry holds; the core only knows files ending in `SUFFIX`, so `clear` never removes anything
else, even when the folder is set to one holding other files. `entries` lists regular files
only, and `clear_entries` never follows a symbolic link (it unlinks the link), leaves
directories, and goes on past what it cannot remove, saying what stayed.

Entries are written whole (a temporary file, then ``os.replace``), so several processes may
write and read at once: a reader sees an old entry or a new one, never half of one.
"""
from __future__ import annotations

import os
import stat
import tempfile
import time
from collections.abc import Iterable

import attrs

from .errors import OneModelError

DIR_ENV = "ONEMODEL_CACHE_DIR"
ENABLE_ENV = "ONEMODEL_CACHE"
MAX_ENV = "ONEMODEL_CACHE_MAX_MB"
DEFAULT_MAX_MB = 1024
#: every entry's file name ends so; temporary files (being written) start with `TMP_PREFIX`
SUFFIX = ".omcache"
TMP_PREFIX = ".tmp-"
#: a temporary file older than this is a writer that died: `evict` and `clear` remove it
STALE_TMP_S = 3600.0
_OFF = ("0", "off", "false", "no")
_ON = ("", "1", "on", "true", "yes")


class CacheSettingError(OneModelError, ValueError):
    """An environment variable of the cache has a value it cannot use (names it)."""


def location() -> str:
    """The cache folder (it may not exist yet)."""
    override = os.environ.get(DIR_ENV, "").strip()
    if override:
        return os.path.abspath(os.path.expanduser(override))
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg and os.path.isabs(xdg):  # the XDG spec: a relative value is to be ignored
        return os.path.join(xdg, "onemodel")
    return os.path.join(os.path.expanduser("~"), ".cache", "onemodel")


def enabled() -> bool:
    """False when ``ONEMODEL_CACHE`` turns the cache off."""
    value = os.environ.get(ENABLE_ENV, "").strip().lower()
    if value in _OFF:
        return False
    if value in _ON:
        return True
    raise CacheSettingError(f"{ENABLE_ENV}={os.environ.get(ENABLE_ENV)!r}: expected 1/on or "
                            f"0/off")


def max_bytes() -> int:
    """The most bytes one namespace keeps (``ONEMODEL_CACHE_MAX_MB``, default 1024 MB)."""
    value = os.environ.get(MAX_ENV, "").strip()
    if not value:
        return DEFAULT_MAX_MB << 20
    try:
        mb = float(value)
    except ValueError:
        mb = -1.0
    if not mb >= 0:  # also refuses NaN
        raise CacheSettingError(f"{MAX_ENV}={value!r}: expected a size in MB, at least 0")
    return int(mb * (1 << 20))


def namespace_dir(namespace: str, create: bool = False) -> str:
    """The folder of one backend's entries (made, private to the user, when ``create``)."""
    if not namespace or os.sep in namespace or namespace.startswith("."):
        raise CacheSettingError(f"cache namespace {namespace!r}: expected a plain folder name")
    path = os.path.join(location(), namespace)
    if create:
        os.makedirs(path, mode=0o700, exist_ok=True)
    return path


@attrs.frozen
class Entry:
    namespace: str
    path: str
    bytes: int
    used: float  # seconds since the epoch: the last write or use (the file's mtime)


def entries(namespace: str | None = None) -> list[Entry]:
    """The entries in the cache (of one namespace or all), most recently used first: regular
    files only (a link, a FIFO or a folder under an entry's name is no entry; `clear` removes
    those it may)."""
    root = location()
    try:
        spaces = [namespace] if namespace else sorted(os.listdir(root))
    except OSError:  # no folder (or not one): no entries
        return []
    found = []
    for space in spaces:
        folder = os.path.join(root, space)
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if not name.endswith(SUFFIX) or name.startswith("."):
                continue
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:  # another process removed it meanwhile
                continue
            if stat.S_ISREG(st.st_mode):
                found.append(Entry(space, path, st.st_size, st.st_mtime))
    found.sort(key=lambda e: -e.used)
    return found


def write_entry(namespace: str, name: str, chunks: Iterable[bytes]) -> str:
    """Write an entry whole: a temporary file in its folder, then ``os.replace``. Returns its
    path. Two processes writing the same entry at once both succeed; the last rename wins."""
    if not name.endswith(SUFFIX) or os.sep in name or name.startswith("."):
        raise CacheSettingError(f"cache entry name {name!r}: expected a plain name ending in "
                                f"{SUFFIX}")
    folder = namespace_dir(namespace, create=True)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".part", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
        path = os.path.join(folder, name)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def touch(path: str) -> None:
    """Mark an entry as used now (eviction removes the least recently used first)."""
    try:  # the entry itself: a symbolic link under its name is not followed
        if os.utime in os.supports_follow_symlinks:
            os.utime(path, follow_symlinks=False)
        else:
            os.utime(path)
    except OSError:  # removed meanwhile, or a read-only cache: nothing to mark
        pass


def evict(namespace: str, limit: int | None = None) -> int:
    """Remove the least recently used entries of ``namespace`` until it holds at most ``limit``
    bytes (default `max_bytes`), and temporary files of writers that died; returns the number
    of files removed."""
    limit = max_bytes() if limit is None else int(limit)
    removed = _remove_stale_tmp(namespace_dir(namespace))
    total = 0
    for e in entries(namespace):  # newest first: keep while they fit
        total += e.bytes
        if total > limit:
            removed += _unlink(e.path)
    return removed


@attrs.frozen
class Cleared:
    """What `clear_entries` did: the paths it removed, and ``(path, reason)`` for each it left."""

    removed: tuple[str, ...]
    left: tuple[tuple[str, str], ...]


def clear(namespace: str | None = None) -> int:
    """Remove every entry (of one namespace or all) and temporary files; returns how many
    files went (`clear_entries` also says what stayed)."""
    return len(clear_entries(namespace).removed)


def clear_entries(namespace: str | None = None) -> Cleared:
    """Remove every entry (of one namespace or all) and temporary file, going on past any that
    cannot go. Only names ending in `SUFFIX` (and temporary files) are touched: a symbolic
    link or a FIFO under such a name is unlinked itself, never followed; a directory under
    such a name, and a namespace folder that is a symbolic link, are left and named; so is
    anything the system refuses to remove. An emptied namespace folder goes too."""
    root = location()
    removed: list[str] = []
    left: list[tuple[str, str]] = []
    try:
        spaces = [namespace] if namespace else sorted(os.listdir(root))
    except (FileNotFoundError, NotADirectoryError):
        return Cleared((), ())
    except OSError as exc:
        return Cleared((), ((root, _reason(exc)),))
    for space in spaces:
        folder = os.path.join(root, space)
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            continue
        except OSError as exc:
            left.append((folder, _reason(exc)))
            continue
        if stat.S_ISLNK(st.st_mode):
            if os.path.isdir(folder):
                left.append((folder, "a symbolic link to a folder: not followed"))
            continue
        if not stat.S_ISDIR(st.st_mode):
            continue
        _clear_folder(folder, removed, left)
        try:
            os.rmdir(folder)  # only when empty
        except OSError:
            pass
    return Cleared(tuple(removed), tuple(left))


def _clear_folder(folder: str, removed: list, left: list) -> None:
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        left.append((folder, _reason(exc)))
        return
    for name in names:
        if not (name.endswith(SUFFIX) and not name.startswith(".")
                or name.startswith(TMP_PREFIX) and name.endswith(".part")):
            continue
        path = os.path.join(folder, name)
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                left.append((path, "a directory: not removed"))
                continue
            os.unlink(path)  # a link itself, never what it points at
        except FileNotFoundError:  # another process removed it first
            continue
        except OSError as exc:
            left.append((path, _reason(exc)))
            continue
        removed.append(path)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _remove_stale_tmp(folder: str, age: float = STALE_TMP_S) -> int:
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    now = time.time()
    for name in names:
        if name.startswith(TMP_PREFIX) and name.endswith(".part"):
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISDIR(st.st_mode) and now - st.st_mtime >= age:
                removed += _unlink(path)
    return removed


def _unlink(path: str) -> int:
    try:
        os.unlink(path)
        return 1
    except OSError:  # another process removed it first, or it may not go: left in place
        return 0


__all__ = ["location", "enabled", "max_bytes", "namespace_dir", "entries", "write_entry",
           "touch", "evict", "clear", "clear_entries", "Cleared", "Entry", "CacheSettingError",
           "SUFFIX"]
