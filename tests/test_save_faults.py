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
