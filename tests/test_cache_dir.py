"""onemodel.cache: where the on-disk cache lives, its settings, whole writes, eviction, clear,
and the ``onemodel cache`` command."""
import json
import os
import subprocess
import sys
import time

import pytest

import onemodel as om
from onemodel import cache


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("ONEMODEL_CACHE_DIR", str(tmp_path / "c"))
    for var in ("ONEMODEL_CACHE", "ONEMODEL_CACHE_MAX_MB"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "c"


def test_location_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ONEMODEL_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.location() == str(tmp_path / "mine")
    monkeypatch.delenv("ONEMODEL_CACHE_DIR")
    assert cache.location() == str(tmp_path / "xdg" / "onemodel")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.location() == str(tmp_path / "home" / ".cache" / "onemodel")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.location() == str(tmp_path / "home" / ".cache" / "onemodel")


@pytest.mark.parametrize("value, on", [("", True), ("1", True), ("on", True), ("YES", True),
                                       ("0", False), ("off", False), ("False", False),
                                       (" no ", False)])
def test_enabled(monkeypatch, value, on):
    monkeypatch.setenv("ONEMODEL_CACHE", value)
    assert cache.enabled() is on


def test_bad_settings_are_named(monkeypatch):
    monkeypatch.setenv("ONEMODEL_CACHE", "maybe")
    with pytest.raises(cache.CacheSettingError, match="ONEMODEL_CACHE='maybe'"):
        cache.enabled()
    for bad in ("lots", "-1", "nan"):
        monkeypatch.setenv("ONEMODEL_CACHE_MAX_MB", bad)
        with pytest.raises(cache.CacheSettingError, match="ONEMODEL_CACHE_MAX_MB"):
            cache.max_bytes()
    monkeypatch.setenv("ONEMODEL_CACHE_MAX_MB", "1.5")
    assert cache.max_bytes() == 3 << 19
    monkeypatch.delenv("ONEMODEL_CACHE_MAX_MB")
    assert cache.max_bytes() == 1024 << 20
    for name in ("", "a/b", ".hidden"):
        with pytest.raises(cache.CacheSettingError):
            cache.namespace_dir(name)
    with pytest.raises(cache.CacheSettingError):
        cache.write_entry("ns", "not-an-entry.txt", [b""])


def test_write_entry_is_whole_and_private(folder):
    path = cache.write_entry("ns", "a" + cache.SUFFIX, [b"hello ", b"world"])
    with open(path, "rb") as f:
        assert f.read() == b"hello world"
    assert os.stat(folder / "ns").st_mode & 0o777 == 0o700
    assert os.listdir(folder / "ns") == ["a" + cache.SUFFIX]  # no temporary file left

    def failing():
        yield b"partial"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        cache.write_entry("ns", "a" + cache.SUFFIX, failing())
    with open(path, "rb") as f:
        assert f.read() == b"hello world"  # the old entry is untouched
    assert os.listdir(folder / "ns") == ["a" + cache.SUFFIX]


def _entry(name, size, age, space="ns"):
    path = cache.write_entry(space, name + cache.SUFFIX, [bytes(size)])
    t = time.time() - age
    os.utime(path, (t, t))
    return path


def test_entries_evict_and_touch(folder):
    old = _entry("old", 100, 300)
    mid = _entry("mid", 100, 200)
    new = _entry("new", 100, 100)
    assert [e.path for e in cache.entries("ns")] == [new, mid, old]
    cache.touch(old)  # used now: the most recent
    assert cache.entries("ns")[0].path == old
    assert cache.evict("ns", limit=250) == 1
    assert sorted(e.path for e in cache.entries()) == sorted([old, new])
    assert cache.evict("ns", limit=250) == 0


def test_stale_temporary_files_go(folder):
    _entry("e", 10, 0)
    stale = folder / "ns" / (cache.TMP_PREFIX + "dead.part")
    fresh = folder / "ns" / (cache.TMP_PREFIX + "writing.part")
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    t = time.time() - 2 * cache.STALE_TMP_S
    os.utime(stale, (t, t))
    cache.evict("ns")
    assert not stale.exists() and fresh.exists()  # a writer may still be at work


def test_clear_removes_only_entries(folder):
    _entry("a", 10, 0)
    _entry("b", 10, 0, space="other")
    keep = folder / "ns" / "notes.txt"
    keep.write_text("not the cache's")
    assert cache.clear("other") == 1 and not (folder / "other").exists()
    assert cache.clear() == 1
    assert keep.exists() and (folder / "ns").exists()  # a folder holding other files stays
    assert cache.entries() == [] and cache.clear() == 0


def test_missing_folder_is_empty(tmp_path, monkeypatch):
    monkeypatch.setenv("ONEMODEL_CACHE_DIR", str(tmp_path / "never-made"))
    assert cache.entries() == [] and cache.clear() == 0 and cache.evict("ns") == 0


def cli(*args):
    proc = subprocess.run([sys.executable, "-m", "onemodel.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=120, env=os.environ)
    return proc.returncode, proc.stdout, proc.stderr


def test_cli_cache_shows_and_clears(folder):
    code, out, err = cli("cache")
    assert code == 0, err
    assert out.splitlines()[:2] == [f"folder:  {folder}",
                                    "setting: on, at most 1.0 GiB per backend"]
    assert "no entries" in out
    x = om.Tensor.zeros(om.DType.F32, 2, 3)
    traced = om.trace(lambda t: om.ops.relu(t * 2.0), x, "batch", None)
    s = om.Session(traced, backend="compiled")
    s.run({"input": x.numpy()})
    code, out, err = cli("cache")
    assert code == 0, err
    rows = [ln.split() for ln in out.splitlines()]
    assert rows[2] == ["backend", "entries", "size", "last", "used"]
    assert rows[4][:2] == ["compiled", "2"] and all(len(ln) <= 80 for ln in out.splitlines()[2:])
    code, out, err = cli("cache", "--json")
    data = json.loads(out)
    assert data["location"] == str(folder) and data["enabled"] is True
    assert data["namespaces"]["compiled"]["entries"] == 2  # the plan and its weight block
    assert data["namespaces"]["compiled"]["bytes"] == sum(e.bytes for e in cache.entries())
    code, out, err = cli("cache", "clear")
    assert code == 0 and out.strip() == f"removed 2 files from {folder}"
    assert cache.entries() == []
    code, out, err = cli("cache", "clear", "--json")
    assert json.loads(out) == {"location": str(folder), "removed_files": 0}


def test_cli_cache_off_and_bad_setting(folder, monkeypatch):
    monkeypatch.setenv("ONEMODEL_CACHE", "0")
    code, out, _ = cli("cache")
    assert code == 0 and "setting: off (ONEMODEL_CACHE)" in out
    monkeypatch.setenv("ONEMODEL_CACHE", "perhaps")
    code, out, err = cli("cache")
    assert code == 1 and err.startswith("onemodel: error: ONEMODEL_CACHE='perhaps'")
