"""Saves interrupted at every stage: creating the temporary file, opening it, each write, the
flush, fsync, setting its mode, the rename; with an OSError and with a KeyboardInterrupt. Every
time the old file is intact, no temporary file is left behind and no descriptor leaks; for
`traced.save` (OneModel) and `traced.save_onnx`."""
from __future__ import annotations

import os

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.formats import _atomic

FORMATS = {"onemodel": lambda t, p: t.save(p), "onnx": lambda t, p: t.save_onnx(p)}


@pytest.fixture(scope="module")
def models():
    """Two different models: the old file is one, the failed save writes the other."""
    w = Tensor.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))

    def old(x):
        return om.ops.linear(x, w).relu()

    def new(x):
        return om.ops.softmax(om.ops.linear(x, w * 2.0), -1)

    ex = Tensor.zeros(DType.F32, 2, 4)
    return om.trace(old, ex, "batch", None), om.trace(new, ex, "batch", None)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class _FailingFile:
    """Wraps the temporary file: the ``fail_at``-th write raises ``exc``."""

    def __init__(self, f, fail_at, exc, counter):
        self._f, self._fail_at, self._exc, self._counter = f, fail_at, exc, counter

    def write(self, data):
        self._counter[0] += 1
        if self._counter[0] == self._fail_at:
            self._f.write(bytes(data)[: len(data) // 2])  # half of it reaches the disk
            raise self._exc
        return self._f.write(data)

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._f.__exit__(*exc)


def _count_writes(monkeypatch, fmt, traced, path) -> int:
    counter = [0]
    real = os.fdopen
    monkeypatch.setattr(_atomic.os, "fdopen",
                        lambda fd, mode: _FailingFile(real(fd, mode), -1, None, counter))
    FORMATS[fmt](traced, path)
    monkeypatch.setattr(_atomic.os, "fdopen", real)
    return counter[0]


def _stages(n_writes, exc):
    """(name, install(monkeypatch)) for every point of failure."""
    real_fdopen = os.fdopen

    def raise_(*a, **k):
        raise exc

    def at_write(k):
        def install(mp):
            counter = [0]
            mp.setattr(_atomic.os, "fdopen",
                       lambda fd, mode: _FailingFile(real_fdopen(fd, mode), k, exc, counter))
        return install

    stages = [
        ("mkstemp", lambda mp: mp.setattr(_atomic.tempfile, "mkstemp", raise_)),
        ("fdopen", lambda mp: mp.setattr(_atomic.os, "fdopen", raise_)),
        ("fsync", lambda mp: mp.setattr(_atomic.os, "fsync", raise_)),
        ("replace", lambda mp: mp.setattr(_atomic.os, "replace", raise_)),
    ]
    if not isinstance(exc, OSError):  # copying the old file's mode ignores an OSError (a
        # filesystem without modes) and goes on; an interrupt there must still roll back
        stages.append(("chmod", lambda mp: mp.setattr(_atomic.os, "chmod", raise_)))
    stages += [(f"write {k} of {n_writes}", at_write(k)) for k in range(1, n_writes + 1)]
    return stages


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()],
                         ids=["disk-full", "interrupt"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_an_interrupted_save_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, models,
                                                                  fmt, exc):
    old, new = models
    path = tmp_path / f"model.{fmt}"
    FORMATS[fmt](old, path)
    before = path.read_bytes()
    n_writes = _count_writes(monkeypatch, fmt, new, tmp_path / f"probe.{fmt}")
    os.unlink(tmp_path / f"probe.{fmt}")
    assert n_writes >= 1
    fds = _open_fds()
    for name, install in _stages(n_writes, exc):
        with monkeypatch.context() as mp:
            install(mp)
            with pytest.raises(type(exc)):
                FORMATS[fmt](new, path)
                pytest.fail(f"{name}: the save did not fail")
        assert path.read_bytes() == before, f"{name}: the old file changed"
        assert sorted(os.listdir(tmp_path)) == [path.name], f"{name}: {os.listdir(tmp_path)}"
        assert _open_fds() == fds, f"{name}: a file descriptor leaked"
    loaded = om.load(path) if fmt == "onemodel" else om.load_onnx(path)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(loaded(Tensor.from_numpy(x)).numpy(),
                               old(Tensor.from_numpy(x)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_save_over_a_missing_file_leaves_nothing(tmp_path, monkeypatch, models, fmt):
    _, new = models
    path = tmp_path / f"fresh.{fmt}"
    monkeypatch.setattr(_atomic.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("EIO")))
    with pytest.raises(OSError, match="EIO"):
        FORMATS[fmt](new, path)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_successful_save_keeps_the_old_mode_and_honours_the_umask(tmp_path, models, fmt):
    old, new = models
    path = tmp_path / f"m.{fmt}"
    FORMATS[fmt](old, path)
    umask = os.umask(0o022)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask
    os.chmod(path, 0o640)
    FORMATS[fmt](new, path)
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert sorted(os.listdir(tmp_path)) == [path.name]


@pytest.mark.parametrize("bad,err", [(None, om.ArgumentError), (5, om.ArgumentError),
                                     ("", om.ArgumentError)])
def test_save_paths_of_the_wrong_type(tmp_path, models, bad, err):
    for fmt in FORMATS:
        with pytest.raises(err, match="path"):
            FORMATS[fmt](models[0], bad)


def test_save_into_a_missing_folder_or_over_a_folder(tmp_path, models):
    for fmt in FORMATS:
        with pytest.raises(FileNotFoundError, match="folder .*does not exist"):
            FORMATS[fmt](models[0], tmp_path / "nowhere" / f"m.{fmt}")
        with pytest.raises(IsADirectoryError, match="it is a folder"):
            FORMATS[fmt](models[0], tmp_path)
    assert os.listdir(tmp_path) == []


# -- second round (issue 18): names, NUL, and what a save may replace ----------------------------
@pytest.mark.parametrize("nbytes", [242, 250, 255])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_names_up_to_the_filesystem_limit_save(tmp_path, models, fmt, nbytes):
    """The temporary name used to be the target's name plus 14 characters: names of 242-255
    bytes could not be saved."""
    suffix = f".{fmt}"
    name = "é" * ((nbytes - len(suffix)) // 2) + "m" * ((nbytes - len(suffix)) % 2) + suffix
    assert len(os.fsencode(name)) == nbytes
    path = tmp_path / name
    FORMATS[fmt](models[0], path)
    assert os.listdir(tmp_path) == [name]
    loaded = om.load(path) if fmt == "onemodel" else om.load_onnx(path)
    assert loaded.graph.op_counts() == models[0].graph.op_counts()


def test_a_nul_in_the_path_is_an_argument_error(tmp_path, models):
    for fmt in FORMATS:
        with pytest.raises(om.ArgumentError, match="NUL"):
            FORMATS[fmt](models[0], str(tmp_path / "a\x00b"))
    for loader in (om.load, om.load_onnx, om.formats.load):
        with pytest.raises(om.ArgumentError, match="NUL"):
            loader(str(tmp_path / "a\x00b"))
    assert os.listdir(tmp_path) == []


def _fifo(tmp_path):
    p = tmp_path / "pipe"
    os.mkfifo(p)
    return p


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_save_does_not_replace_a_fifo_or_a_device(tmp_path, models, fmt, monkeypatch):
    """A FIFO was silently replaced by a regular file (and as root, /dev/null would be)."""
    import stat

    def never(*args, **kwargs):  # so that a regression cannot touch /dev, even as root
        pytest.fail(f"the save went on to write: {args}")

    monkeypatch.setattr(_atomic.tempfile, "mkstemp", never)
    monkeypatch.setattr(_atomic.os, "replace", never)

    fifo = _fifo(tmp_path)
    link = tmp_path / "link-to-pipe"
    link.symlink_to(fifo)
    for target in (fifo, link):
        with pytest.raises(om.ArgumentError, match="FIFO.*not a regular file"):
            FORMATS[fmt](models[0], target)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and link.is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["link-to-pipe", "pipe"]
    with pytest.raises(om.ArgumentError, match="character device.*not a regular file"):
        FORMATS[fmt](models[0], os.devnull)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_symlink_to_a_regular_file_is_followed(tmp_path, models, fmt):
    old, new = models
    real = tmp_path / "sub" / f"real.{fmt}"
    real.parent.mkdir()
    FORMATS[fmt](old, real)
    link = tmp_path / f"link.{fmt}"
    link.symlink_to(real)
    FORMATS[fmt](new, link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    loaded = om.load(real) if fmt == "onemodel" else om.load_onnx(real)
    x = Tensor.from_numpy(np.ones((2, 4), np.float32))
    np.testing.assert_allclose(loaded(x).numpy(), new(x).numpy(), rtol=1e-6)
    assert sorted(os.listdir(real.parent)) == [real.name]
