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
    assert json.loads(out) == {"location": str(folder), "removed_files": 0, "not_removed": []}


def test_cli_cache_off_and_bad_setting(folder, monkeypatch):
    monkeypatch.setenv("ONEMODEL_CACHE", "0")
    code, out, _ = cli("cache")
    assert code == 0 and "setting: off (ONEMODEL_CACHE)" in out
    monkeypatch.setenv("ONEMODEL_CACHE", "perhaps")
    code, out, err = cli("cache")
    assert code == 1 and err.startswith("onemodel: error: ONEMODEL_CACHE='perhaps'")


def _hostile_folder(folder, outside):
    """Entries among symbolic-link loops, a directory named like an entry, links out of the
    folder, a FIFO: returns the paths clear must remove, and those it must leave."""
    ns = folder / "ns"
    _entry("a", 10, 0)
    gone = [ns / ("a" + cache.SUFFIX)]
    loop = ns / ("loop" + cache.SUFFIX)
    os.symlink(loop, loop)
    l1, l2 = ns / ("l1" + cache.SUFFIX), ns / ("l2" + cache.SUFFIX)
    os.symlink(l2, l1)
    os.symlink(l1, l2)
    (ns / ("dir" + cache.SUFFIX)).mkdir()
    (ns / ("dir" + cache.SUFFIX) / ("inner" + cache.SUFFIX)).write_bytes(b"x")
    outside.mkdir()
    (outside / "precious").write_text("not the cache's")
    (outside / ("e" + cache.SUFFIX)).write_bytes(b"x")
    os.symlink(outside / "precious", ns / ("out" + cache.SUFFIX))
    os.symlink(outside, ns / ("outdir" + cache.SUFFIX))
    os.mkfifo(ns / ("fifo" + cache.SUFFIX))
    (ns / (cache.TMP_PREFIX + "x.part")).mkdir()
    stale = ns / (cache.TMP_PREFIX + "loop.part")
    os.symlink(stale, stale)
    _entry("z", 10, 0)
    os.symlink(outside, folder / "linked")  # a namespace that is a link: not followed
    gone += [loop, l1, l2, ns / ("out" + cache.SUFFIX), ns / ("outdir" + cache.SUFFIX),
             ns / ("fifo" + cache.SUFFIX), stale, ns / ("z" + cache.SUFFIX)]
    kept = [ns / ("dir" + cache.SUFFIX), ns / (cache.TMP_PREFIX + "x.part"), folder / "linked"]
    return gone, kept


def test_clear_removes_what_it_can_and_names_the_rest(folder, tmp_path):
    gone, kept = _hostile_folder(folder, tmp_path / "outside")
    report = cache.clear_entries()
    assert sorted(report.removed) == sorted(str(p) for p in gone)
    assert sorted(p for p, _ in report.left) == sorted(str(p) for p in kept)
    reasons = dict(report.left)
    assert "directory" in reasons[str(folder / "ns" / ("dir" + cache.SUFFIX))]
    assert "symbolic link" in reasons[str(folder / "linked")]
    for p in gone:
        assert not os.path.lexists(p), p
    for p in kept:
        assert os.path.lexists(p), p
    assert (tmp_path / "outside" / "precious").read_text() == "not the cache's"
    assert (tmp_path / "outside" / ("e" + cache.SUFFIX)).exists()  # behind the linked folder
    assert (folder / "ns" / ("dir" + cache.SUFFIX) / ("inner" + cache.SUFFIX)).exists()
    # the linked namespace is listed (the backend writes through it) but not cleared
    assert [e.path for e in cache.entries()] == [str(folder / "linked" / ("e" + cache.SUFFIX))]
    assert cache.clear() == 0  # what stayed is what stays


def test_entries_and_evict_step_over_links_and_folders(folder, tmp_path):
    _hostile_folder(folder, tmp_path / "outside")
    assert sorted(os.path.basename(e.path) for e in cache.entries("ns")) == [
        "a" + cache.SUFFIX, "z" + cache.SUFFIX]  # regular files only
    assert cache.evict("ns", limit=0) == 2  # the two entries; the rest is not theirs to judge
    assert (tmp_path / "outside" / "precious").exists()


def test_cli_cache_clear_reports_what_stayed(folder, tmp_path):
    gone, kept = _hostile_folder(folder, tmp_path / "outside")
    code, out, err = cli("cache", "clear")
    assert code == 1, (out, err)
    assert out.splitlines()[0] == f"removed {len(gone)} files from {folder}"
    for p in kept:
        assert str(p) in err
    code, out, err = cli("cache", "clear", "--json")
    data = json.loads(out)
    assert code == 1 and data["removed_files"] == 0
    assert sorted(x["path"] for x in data["not_removed"]) == sorted(str(p) for p in kept)
