"""The compiled backend's on-disk plan cache: a new session (and a new process) loads the plan
and weights another stored, with results bit-identical to lowering anew; everything the plan
depends on is in the key; bad entries are rebuilt; several processes share one cache."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import threading
import zlib

import attrs
import numpy as np
import pytest
from onemodel_backend_compiled import _native, entry_file, plan_codec
from onemodel_backend_compiled.backend import CompiledOptionError
from onemodel_backend_compiled.lower import Lowering
from onemodel_backend_compiled.weights import WeightBlock

import onemodel as om
from onemodel import Tensor
from onemodel import cache as disk
from onemodel.errors import OneModelError
from onemodel.testing import models

@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("ONEMODEL_CACHE_DIR", str(folder))
    monkeypatch.delenv("ONEMODEL_CACHE", raising=False)
    monkeypatch.delenv("ONEMODEL_CACHE_MAX_MB", raising=False)
    return folder


def _files(folder):
    """The plan entries (one per graph and signature)."""
    return sorted(p for p in (folder / "compiled").glob("*" + disk.SUFFIX)
                  if not p.name.startswith("w-"))


def _weights(folder):
    """The packed weight blocks (shared by the plans laid out alike)."""
    return sorted((folder / "compiled").glob("w-*" + disk.SUFFIX))


def _stats(session):
    return session._compiled.plan_cache.stats


def _where_model():
    """A linear, then `where` (no lowering: a numpy step between native segments)."""
    w = Tensor.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)

    def fn(x):
        h = om.ops.linear(x, w)
        return om.ops.relu(om.ops.where(om.ops.greater(h, 1.0), h, h * 2.0))

    return fn, (4,)


def _folded_model():
    """Position ids over a symbolic length: folded into constants per signature."""
    w = Tensor.from_numpy(np.random.default_rng(3).standard_normal((6, 6)).astype(np.float32))

    def fn(x):
        pos = om.ops.arange(x.shape[1], dtype=om.DType.F32)
        return om.ops.linear(x * om.ops.unsqueeze(om.ops.unsqueeze(pos + 1.0, 0), 2), w)

    return fn, (None, 6)


MODELS = {
    "mlp": lambda: models.mlp(sizes=(20, 16, 8)),
    "cnn": models.cnn,
    "cnn_bn": models.cnn_bn,
    "transformer": lambda: (models.encoder_layer(d=32, heads=4, ffn=64)[0], (8, 32)),
    "deep": lambda: models.deep(n=6, width=16),
    "branches": lambda: models.branches(n=3, width=24),
    "where": _where_model,
    "folded": _folded_model,
}
_TRACED: dict = {}


def _traced(name):
    if name not in _TRACED:
        fn, shape = MODELS[name]()
        if shape[0] is None:
            shape = (5, *shape[1:])
            ex = Tensor.from_numpy(np.ones((3, *shape), np.float32))
            _TRACED[name] = (shape, om.trace(fn, ex, "batch", "seq", None))
        else:
            _TRACED[name] = (shape, models.trace(fn, shape))
    return _TRACED[name]


def _feeds(shape, batch):
    return {"input": models.feed(shape, batch)}


def _run(traced, feeds, **options):
    s = om.Session(traced, backend="compiled", **options)
    return s, {k: v.numpy() for k, v in s.run(feeds).items()}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_new_session_loads_the_plan_with_identical_results(cache_dir, name, isa):
    shape, traced = _traced(name)
    for batch in (1, 3):
        feeds = _feeds(shape, batch)
        _, plain = _run(traced, feeds, cache=False)
        first, got1 = _run(traced, feeds)
        assert _stats(first)["misses"] == 1 and _stats(first)["stored"] == 1, _stats(first)
        second, got2 = _run(traced, feeds)
        assert _stats(second)["hits"] == 1 and _stats(second)["misses"] == 0, _stats(second)
        assert "loaded from the on-disk plan cache" in second.plan_source(feeds)
        for k in plain:
            np.testing.assert_array_equal(got1[k], plain[k])
            np.testing.assert_array_equal(got2[k], plain[k])
        again = second.run({"input": feeds["input"] * 2})
        ref = om.Session(traced, backend="compiled", cache=False).run(
            {"input": feeds["input"] * 2})
        for k in ref:
            np.testing.assert_array_equal(again[k].numpy(), ref[k].numpy())
    assert len(_files(cache_dir)) == 2  # one per batch size
    # one weight block for both, unless a value folded per signature is in it
    assert len(_weights(cache_dir)) == (2 if name == "folded" else 1)


def test_a_new_process_loads_the_plan(cache_dir, tmp_path):
    shape, traced = _traced("cnn")
    traced.save(tmp_path / "cnn.onemodel")
    x = models.feed(shape, 2)
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent("""
        import json, sys
        import numpy as np
        import onemodel as om
        s = om.Session(om.load(sys.argv[1]), backend="compiled")
        out = s.run({"input": np.load(sys.argv[2])})["output"].numpy()
        np.save(sys.argv[3], out)
        print(json.dumps(s._compiled.plan_cache.stats))
    """)
    stats = []
    for i in range(2):
        proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "cnn.onemodel"),
                               str(tmp_path / "x.npy"), str(tmp_path / f"out{i}.npy")],
                              capture_output=True, text=True, timeout=120, env=os.environ)
        assert proc.returncode == 0, proc.stderr
        stats.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert stats[0]["stored"] == 1 and stats[1]["hits"] == 1, stats
    ref = _run(traced, {"input": x}, cache=False)[1]["output"]
    for i in range(2):
        np.testing.assert_array_equal(np.load(tmp_path / f"out{i}.npy"), ref)


def _with_initializer(traced, change):
    g = traced.graph
    name = min(g.initializers)
    inits = dict(g.initializers)
    inits[name] = change(np.array(inits[name]))
    return g.replace(initializers=inits)


def test_a_changed_weight_misses(cache_dir):
    shape, traced = _traced("mlp")
    feeds = _feeds(shape, 2)
    _run(traced, feeds)

    def bump(a):
        a.reshape(-1)[7] += 0.5
        return a

    changed = _with_initializer(traced, bump)
    s, got = _run(changed, feeds)
    assert _stats(s)["misses"] == 1 and _stats(s)["hits"] == 0
    np.testing.assert_array_equal(got["output"], _run(changed, feeds, cache=False)[1]["output"])
    s, _ = _run(changed, feeds)
    assert _stats(s)["hits"] == 1


def test_a_changed_graph_misses(cache_dir):
    w = Tensor.from_numpy(np.eye(4, dtype=np.float32))
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    traced = {act: om.trace(lambda t, act=act: getattr(om.ops, act)(om.ops.linear(t, w)),
                            Tensor.from_numpy(x), "batch", None) for act in ("relu", "tanh")}
    _run(traced["relu"], {"input": x})
    s, got = _run(traced["tanh"], {"input": x})
    assert _stats(s)["misses"] == 1 and _stats(s)["hits"] == 0
    np.testing.assert_allclose(got["output"], np.tanh(x), rtol=1e-6, atol=1e-7)


def test_another_signature_and_other_outputs_miss(cache_dir):
    shape, traced = _traced("folded")
    s = om.Session(traced, backend="compiled")
    s.run(_feeds(shape, 2))
    s.run(_feeds((7, 6), 2))  # another sequence length: another signature
    assert _stats(s)["misses"] == 2 and len(_files(cache_dir)) == 2

    def two(x):
        h = om.ops.relu(x)
        return h, om.ops.tanh(h)

    t2 = om.trace(two, Tensor.from_numpy(np.ones((2, 3), np.float32)), "batch", None)
    x = {"input": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)}
    om.Session(t2, backend="compiled").run(x)
    name = t2.graph.output_names[1]
    s = om.Session(t2, backend="compiled")
    out = s.run(x, [name])
    assert _stats(s)["misses"] == 1 and list(out) == [name]
    np.testing.assert_allclose(out[name].numpy(), np.tanh(np.maximum(x["input"], 0)),
                               rtol=1e-6, atol=1e-7)


def test_another_kernel_copy_misses(cache_dir):
    before = _native.isa()
    if before == "generic":
        pytest.skip("this CPU has only the generic kernel copy")
    shape, traced = _traced("mlp")
    feeds = _feeds(shape, 1)
    _run(traced, feeds)
    try:
        _native.use("generic")
        s, _ = _run(traced, feeds)
        assert _stats(s)["misses"] == 1 and _stats(s)["hits"] == 0
        s, _ = _run(traced, feeds)
        assert _stats(s)["hits"] == 1
    finally:
        _native.use(before)
    assert len(_files(cache_dir)) == 2


def test_another_kernel_table_under_the_same_top_copy_misses(cache_dir):
    """The key holds the whole active table (`dispatch.signature`), not only the top copy: a
    kernel inherited from the copy below is another entry."""
    before = _native.isa()
    if len(_native.copies()) < 2:
        pytest.skip("this CPU has only the generic kernel copy")
    shape, traced = _traced("mlp")
    feeds = _feeds(shape, 1)
    _run(traced, feeds)
    try:
        _native.use(before, drop=("gemm",))
        s, _ = _run(traced, feeds)
        assert _stats(s)["misses"] == 1 and _stats(s)["hits"] == 0
    finally:
        _native.use(before)
    s, _ = _run(traced, feeds)
    assert _stats(s)["hits"] == 1


def _corrupt(path, how, other=None):
    data = bytearray(path.read_bytes())
    if how == "truncated":
        data = data[:len(data) // 2]
    elif how == "header_byte":
        data[40] ^= 0x20
    elif how == "weights_byte":
        data[-100] ^= 0x01  # inside the last array: the packed weights
    elif how == "garbage":
        data = bytearray(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8))
    elif how == "empty":
        data = bytearray()
    elif how == "foreign":  # another entry's bytes under this entry's name
        data = bytearray(other.read_bytes())
    elif how == "magic_only":
        data = bytearray(entry_file.MAGIC + (1 << 62).to_bytes(8, "little"))
    elif how == "weights_missing":
        for w in _weights(path.parent.parent):
            w.unlink()
        return
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "header_byte", "weights_byte", "garbage",
                                 "empty", "foreign", "magic_only", "weights_missing"])
def test_a_bad_entry_is_ignored_and_rewritten(cache_dir, how):
    shape, traced = _traced("mlp")
    feeds = _feeds(shape, 2)
    _, plain = _run(traced, feeds, cache=False)
    _run(traced, _feeds(shape, 5))
    other = _files(cache_dir)[0]
    _run(traced, feeds)
    path = next(p for p in _files(cache_dir) if p != other)
    if how == "weights_byte":
        path, = _weights(cache_dir)  # shared by both signatures
    _corrupt(path, how, other)
    s, got = _run(traced, feeds)
    assert _stats(s)["rejected" if how != "weights_missing" else "misses"] == 1, _stats(s)
    assert _stats(s)["stored"] == 1, _stats(s)
    np.testing.assert_array_equal(got["output"], plain["output"])
    s, got = _run(traced, feeds)
    assert _stats(s)["hits"] == 1
    np.testing.assert_array_equal(got["output"], plain["output"])
    assert len(_weights(cache_dir)) == 1


@pytest.mark.parametrize("how", ["none", "weights_byte", "truncated"])
def test_loaded_weights(cache_dir, how):
    """The weight block a session loads is memory of its own (read, not mapped: the file may
    change after), and a plan that lowers a new signature after loading one still works."""
    shape, traced = _traced("folded")
    feeds = _feeds(shape, 2)
    _, plain = _run(traced, feeds, cache=False)
    _run(traced, feeds)
    if how != "none":
        _corrupt(_weights(cache_dir)[0], how)
    s, got = _run(traced, feeds)
    assert _stats(s)["hits" if how == "none" else "rejected"] == 1, _stats(s)
    assert s._compiled.weights.array.flags.writeable and s._compiled.weights.array.base is None
    np.testing.assert_array_equal(got["output"], plain["output"])
    other = _feeds((9, 6), 2)  # lowered in this session: new constants past the mapped block
    np.testing.assert_array_equal(s.run(other)["output"].numpy(),
                                  _run(traced, other, cache=False)[1]["output"])


def test_mutated_entries_are_refused_or_unchanged(cache_dir):
    """Random byte flips, truncations and insertions in a stored entry: reading it either
    refuses it (EntryError) or, where only padding changed, returns exactly what was stored."""
    shape, traced = _traced("cnn_bn")
    s = om.Session(traced, backend="compiled")
    s.run(_feeds(shape, 2))
    path, = _files(cache_dir)
    key = s._compiled.plan_cache.key(s._compiled, {"batch": 2}, tuple(traced.graph.output_names))
    good = path.read_bytes()
    body, arrays = entry_file.read(str(path), key)
    rng = np.random.default_rng(0)
    refused = 0
    for i in range(300):
        data = bytearray(good)
        kind = i % 3
        at = int(rng.integers(0, len(data)))
        if kind == 0:
            data[at] ^= 1 << int(rng.integers(0, 8))
        elif kind == 1:
            del data[at:]
        else:
            data[at:at] = bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
        path.write_bytes(bytes(data))
        try:
            got_body, got_arrays = entry_file.read(str(path), key)
        except entry_file.EntryError:
            refused += 1
            continue
        assert got_body == body and len(got_arrays) == len(arrays)
        for a, b in zip(got_arrays, arrays):
            np.testing.assert_array_equal(a, b)
    assert refused > 250  # only flips in the zero padding go unnoticed, harmlessly


_WORKER = textwrap.dedent("""
    import sys
    import numpy as np
    import onemodel as om
    model, x, out = om.load(sys.argv[1]), np.load(sys.argv[2]), sys.argv[3]
    results = []
    for i in range(4):  # new sessions: each looks the plan up again
        s = om.Session(model, backend="compiled")
        results.append(s.run({"input": x})["output"].numpy())
    np.save(out, np.stack(results))
""")


def test_processes_writing_and_reading_at_once(cache_dir, tmp_path):
    shape, traced = _traced("transformer")
    traced.save(tmp_path / "m.onemodel")
    x = models.feed(shape, 3)
    np.save(tmp_path / "x.npy", x)
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(tmp_path / "m.onemodel"),
                               str(tmp_path / "x.npy"), str(tmp_path / f"r{i}.npy")],
                              stderr=subprocess.PIPE, env=os.environ) for i in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err.decode()
    ref = _run(traced, {"input": x}, cache=False)[1]["output"]
    for i in range(4):
        for r in np.load(tmp_path / f"r{i}.npy"):
            np.testing.assert_array_equal(r, ref)
    assert len(_files(cache_dir)) == 1 and len(_weights(cache_dir)) == 1
    assert not [p for p in (cache_dir / "compiled").iterdir() if p.name.startswith(".")]
    s, got = _run(traced, {"input": x})
    assert _stats(s)["hits"] == 1
    np.testing.assert_array_equal(got["output"], ref)


def test_signatures_laid_out_differently_in_other_sessions(cache_dir):
    """Each stored block was laid out by the session that stored it: loading one signature,
    then another whose constants sit where this session's already are, lowers the second
    anew instead of mixing the two layouts."""
    _, traced = _traced("folded")
    a, b = _feeds((5, 6), 2), _feeds((7, 6), 2)
    _run(traced, b)  # stores b's plan: its folded constant right after the weights
    _run(traced, a)  # stores a's plan: its folded constant at the same offset
    s = om.Session(traced, backend="compiled")
    got_a = s.run(a)["output"].numpy()
    got_b = s.run(b)["output"].numpy()
    assert _stats(s)["hits"] == 1 and _stats(s)["misses"] == 1, _stats(s)
    np.testing.assert_array_equal(got_a, _run(traced, a, cache=False)[1]["output"])
    np.testing.assert_array_equal(got_b, _run(traced, b, cache=False)[1]["output"])


def test_weight_block_adopt():
    mine = WeightBlock()
    mine.plain("w", np.arange(20, dtype=np.float32))
    theirs = WeightBlock()
    theirs.plain("w", np.arange(20, dtype=np.float32))
    theirs.plain("v", np.full(5, 7, np.float32))
    layout, data = theirs.snapshot()
    assert mine.adopt(layout, data)  # ours is a part of theirs: their array is taken
    assert mine.offset(("plain", "v"), lambda: 1 / 0) == theirs.offset(("plain", "v"), None)
    np.testing.assert_array_equal(mine.array[32:37], 7)

    other = WeightBlock()
    other.plain("w", np.arange(20, dtype=np.float32))
    other.plain("u", np.ones(3, np.float32))  # where theirs has "v"
    assert not other.adopt(layout, data)
    assert ("plain", "v") not in dict(other.snapshot()[0])

    merged = WeightBlock()
    merged.plain("w", np.arange(20, dtype=np.float32))
    merged.plain("v", np.full(5, 7, np.float32))
    extra = WeightBlock()
    extra.plain("w", np.arange(20, dtype=np.float32))
    extra.plain("v", np.full(5, 7, np.float32))
    extra.plain("z", np.full(4, 9, np.float32))
    e_layout, e_data = extra.snapshot()
    mine2 = WeightBlock()
    mine2.plain("w", np.arange(20, dtype=np.float32))
    mine2.plain("q", np.zeros(2, np.float32))  # not in theirs: their new keys go past it
    assert not mine2.adopt(e_layout, e_data)  # theirs has "v" where our "q" is
    assert merged.adopt(e_layout, e_data)
    np.testing.assert_array_equal(merged.array[48:52], 9)


def test_the_cache_is_off_by_option_or_environment(cache_dir, monkeypatch):
    shape, traced = _traced("mlp")
    feeds = _feeds(shape, 1)
    s, _ = _run(traced, feeds, cache=False)
    assert s._compiled.plan_cache is None and not _files(cache_dir)
    monkeypatch.setenv("ONEMODEL_CACHE", "off")
    s, _ = _run(traced, feeds)
    assert s._compiled.plan_cache is None and not _files(cache_dir)
    s, _ = _run(traced, feeds, cache=True)  # the option wins over the environment
    assert _stats(s)["stored"] == 1 and len(_files(cache_dir)) == 1
    monkeypatch.setenv("ONEMODEL_CACHE", "sometimes")
    with pytest.raises(disk.CacheSettingError, match="ONEMODEL_CACHE='sometimes'"):
        om.Session(traced, backend="compiled")
    with pytest.raises(CompiledOptionError, match="cache must be True, False or None"):
        om.Session(traced, backend="compiled", cache="yes")
    monkeypatch.setenv("ONEMODEL_CACHE", "1")
    monkeypatch.setenv("ONEMODEL_CACHE_MAX_MB", "a lot")
    with pytest.raises(disk.CacheSettingError, match="ONEMODEL_CACHE_MAX_MB='a lot'"):
        om.Session(traced, backend="compiled")


def test_xdg_cache_home_is_the_default_place(tmp_path, monkeypatch):
    monkeypatch.delenv("ONEMODEL_CACHE_DIR", raising=False)
    monkeypatch.delenv("ONEMODEL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    shape, traced = _traced("mlp")
    _run(traced, _feeds(shape, 1))
    assert len(_files(tmp_path / "xdg" / "onemodel")) == 1


def test_an_unwritable_cache_does_not_fail_the_run(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ONEMODEL_CACHE_DIR", str(blocker / "cache"))
    shape, traced = _traced("mlp")
    s, got = _run(traced, _feeds(shape, 1))
    assert _stats(s)["stored"] == 0 and "NotADirectoryError" in _stats(s)["not_stored"]
    np.testing.assert_array_equal(got["output"],
                                  _run(traced, _feeds(shape, 1), cache=False)[1]["output"])


def test_eviction_keeps_the_most_recent_within_the_bound(cache_dir, monkeypatch):
    shape, traced = _traced("mlp")
    _run(traced, _feeds(shape, 1))
    plan = _files(cache_dir)[0].stat().st_size
    block = _weights(cache_dir)[0].stat().st_size
    monkeypatch.setenv("ONEMODEL_CACHE_MAX_MB", str((block + 2.5 * plan) / (1 << 20)))
    for batch in (2, 3, 4):
        _run(traced, _feeds(shape, batch))
    assert len(_files(cache_dir)) == 2 and len(_weights(cache_dir)) == 1  # used by each store
    s, _ = _run(traced, _feeds(shape, 4))  # the latest is kept
    assert _stats(s)["hits"] == 1
    s, _ = _run(traced, _feeds(shape, 1))  # the oldest went
    assert _stats(s)["misses"] == 1


def test_an_op_registered_at_run_time_is_not_cached(cache_dir):
    from onemodel.registry import OpDef, OpTraits, Pointwise, Sample, hookimpl

    op = OpDef(name="cache_test_twice", inputs=("x",), params={}, kernel=lambda x: x * 2,
               infer=lambda x: x, vjp=None,
               samples=lambda rng: [Sample(args=(rng.standard_normal(3),), grad=False)],
               traits=OpTraits(pointwise=Pointwise(formula="x * 2")))

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    name = om.registry.register(Plugin(), "cache-test-twice")
    try:
        traced = om.trace(lambda x: om.ops.cache_test_twice(x),
                          Tensor.from_numpy(np.ones((2, 3), np.float32)), "batch", None)
        s, got = _run(traced, {"input": np.ones((2, 3), np.float32)})
        np.testing.assert_array_equal(got["output"], 2)
        assert not _files(cache_dir) and "registered at run time" in _stats(s)["not_stored"]
    finally:
        om.registry.unregister(name)


def test_a_value_the_codec_cannot_store_means_no_entry(cache_dir, monkeypatch):
    class Opaque:
        pass

    original = Lowering.program

    def program(self):  # a value folded for the signature that the codec has no form for
        p = original(self)
        return attrs.evolve(p, folded={**p.folded, self.nodes[0].outputs[0]: Opaque()})

    monkeypatch.setattr(Lowering, "program", program)
    shape, traced = _traced("mlp")
    s, got = _run(traced, _feeds(shape, 1))
    assert not _files(cache_dir) and "Opaque" in _stats(s)["not_stored"]
    np.testing.assert_array_equal(got["output"],
                                  _run(traced, _feeds(shape, 1), cache=False)[1]["output"])
    with pytest.raises(plan_codec.NotCacheable):
        plan_codec.encode_value(Opaque())


@attrs.frozen
class _Foreign:
    x: int = 1


def test_the_codec_round_trips_values_and_refuses_others():
    values = [None, True, 3, -0.0, float("inf"), "s", (1, (2,)), [1, [2]], {"a": (1, 2), 3: 4},
              {1, 2}, frozenset({"a"}), slice(1, None, 2), Ellipsis, np.float32(1.5),
              np.dtype(np.int64), om.DType.F32]
    for v in values:
        back = plan_codec.decode_value(json.loads(json.dumps(plan_codec.encode_value(v))))
        assert back == v and type(back) is type(v), (v, back)
    nan = plan_codec.decode_value(json.loads(json.dumps(plan_codec.encode_value(float("nan")))))
    assert np.isnan(nan)
    for bad in (object(), _Foreign(), lambda: 0, np.array([object()])):
        with pytest.raises(plan_codec.NotCacheable):
            plan_codec.encode_value(bad)
    arena = {"O": ["onemodel_backend_compiled.arena", "Arena", [["__class__", 1]]]}
    for bad in ({"O": ["os", "system", []]}, {"O": ["onemodel_backend_compiled.lower", "np", []]},
                arena,
                {"K": ["numpy", "relu"]}, {"X": 1}, {"A": [0, True]}, [1, 2]):
        with pytest.raises(plan_codec.BadEntry):
            plan_codec.decode_value(bad)


# -- what the key covers: the ops inside fused chains, by their records ---------------------------
_OP_SOURCE = '''
import numpy as np
from onemodel.registry import OpDef, OpTraits, Pointwise, Sample, hookimpl


def _kernel(x):
    return {formula}


@hookimpl
def onemodel_ops():
    return [OpDef(name="cachetest_scale", inputs=("x",), kernel=_kernel, infer=lambda x: x,
                  vjp=None, samples=lambda rng: [Sample(args=(rng.standard_normal(3),))],
                  traits=OpTraits(pointwise=Pointwise(formula="{formula}")))]
'''
_OP_RUN = textwrap.dedent("""
    import json, sys
    import numpy as np
    import onemodel as om
    x = np.linspace(-1, 2, 12, dtype=np.float32).reshape(3, 4)
    fn = lambda t: om.ops.relu(om.ops.cachetest_scale(t * 2.0 + 0.5))
    traced = om.trace(fn, om.Tensor.from_numpy(x), "batch", None)
    s = om.Session(traced, backend="compiled")
    assert [n.op for n in s.optimized_graph.nodes] == ["elementwise_chain"]
    out = s.run({"input": x})["output"].numpy()
    print(json.dumps({"out": out.tolist(), "stats": s._compiled.plan_cache.stats}))
""")


def _install_op(site, version, formula, old=None):
    """The distribution ``cachetest-ops`` at ``version``, its op's formula (and kernel) being
    ``formula``: installed into ``site`` as pip would (dist-info with an entry point)."""
    if old is not None:
        (site / f"cachetest_ops-{old}.dist-info").rename(
            site / f"cachetest_ops-{version}.dist-info")
    info = site / f"cachetest_ops-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: cachetest-ops\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[onemodel]\ncachetest_ops = cachetest_ops\n")
    module = site / "cachetest_ops.py"
    stat = module.stat() if module.exists() else None
    module.write_text(_OP_SOURCE.format(formula=formula))
    if stat is not None:  # the same size and time: only the text tells the versions apart
        assert module.stat().st_size == stat.st_size
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _run_op(site):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=os.pathsep.join(
        [str(site)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, "-c", _OP_RUN], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return np.array(got["out"], np.float32), got["stats"]


def test_a_changed_op_inside_a_fused_chain_misses(cache_dir, tmp_path):
    """An installed op package changes its pointwise formula (and its version): a new process
    must not load the plan whose fused chain computed the old formula."""
    site = tmp_path / "site"
    site.mkdir()
    x = np.linspace(-1, 2, 12, dtype=np.float32).reshape(3, 4)
    want = {k: np.maximum((x * np.float32(2.0) + np.float32(0.5)) * np.float32(k), 0)
            for k in (3.0, 5.0, 7.0)}
    _install_op(site, "0.1.0", "x * 3.0")
    out, stats = _run_op(site)
    assert stats["stored"] == 1, stats
    np.testing.assert_allclose(out, want[3.0], rtol=1e-6)
    out, stats = _run_op(site)
    assert stats["hits"] == 1, stats  # a versioned third-party op's chain is cached
    _install_op(site, "0.1.1", "x * 5.0", old="0.1.0")
    out, stats = _run_op(site)
    assert stats["misses"] == 1 and stats["hits"] == 0, stats
    np.testing.assert_allclose(out, want[5.0], rtol=1e-6)
    _install_op(site, "0.1.1", "x * 7.0")  # edited in place: no new version, same file stat
    out, stats = _run_op(site)
    assert stats["misses"] == 1 and stats["hits"] == 0, stats
    np.testing.assert_allclose(out, want[7.0], rtol=1e-6)
    out, stats = _run_op(site)
    assert stats["hits"] == 1, stats
    np.testing.assert_allclose(out, want[7.0], rtol=1e-6)


# -- an entry someone else wrote: healed, never a hang, a crash or a lie to a live session -------
def _entry_key(path):
    """The key an entry's header names (the attacker knows it: it is in the file)."""
    data = path.read_bytes()
    (hlen,) = struct.unpack("<Q", data[8:16])
    return json.loads(data[16:16 + hlen])["key"]


def _write_raw(path, key, body_json: str):
    """An entry whose header holds ``body_json`` as is, with sound checksums and no arrays."""
    header = (f'{{"format":{entry_file.FORMAT},"key":{json.dumps(key)},"arrays":[],'
              f'"body":{body_json}}}').encode()
    head = entry_file.MAGIC + struct.pack("<Q", len(header)) + header + struct.pack(
        "<I", zlib.crc32(header))
    path.write_bytes(head + bytes(-len(head) % entry_file.ALIGN))


def _rewrite(path, change):
    """Re-encode the entry at ``path`` with ``change(fields)`` applied to its program's fields."""
    key = _entry_key(path)
    body, arrays = entry_file.read(str(path), key)
    change(body["plan"]["program"]["O"][1])
    path.write_bytes(b"".join(bytes(c) for c in entry_file.encode(key, body, arrays)))


def _old_format(path):
    """The body as the code before the frozen program wrote it (a Lowering's fields) under
    today's key: refused, never misread."""
    key = _entry_key(path)
    body, arrays = entry_file.read(str(path), key)
    fields = body["plan"]["program"]["O"][1]
    body["plan"] = {"fields": {"segments": fields["segments"], "locs": fields["locs"],
                               "feeds": fields["feeds"], "output_names": fields["output_names"]},
                    "folded": {}}
    path.write_bytes(b"".join(bytes(c) for c in entry_file.encode(key, body, arrays)))


def _float_offsets(fields):
    """The program as schema 2 wrote it (an arena in floats, locations without a dtype) under
    today's key: refused, never run with its addresses read as bytes."""
    def strip(v):
        if isinstance(v, dict):
            if "O" in v and isinstance(v["O"], list) and v["O"][0] == "Loc":
                v["O"][1].pop("dtype", None)
            for x in v.values():
                strip(x)
        elif isinstance(v, list):
            for x in v:
                strip(x)
    fields["arena_floats"] = fields.pop("arena_bytes") // 4
    strip(fields)


def _deep(fields, depth=400):
    v = 0
    for _ in range(depth):
        v = {"T": [v, 1]}
    fields["segments"] = v


def _infinite_arena(fields):
    fields["arena_bytes"] = float("inf")


def _huge_arena(fields):
    fields["arena_bytes"] = 1 << 62


CRAFTED = {
    "json_bomb": lambda path: _write_raw(path, _entry_key(path), "[" * 200000 + "]" * 200000),
    "deep_body": lambda path: _rewrite(path, _deep),
    "infinite_arena": lambda path: _rewrite(path, _infinite_arena),
    "huge_arena": lambda path: _rewrite(path, _huge_arena),
    "locs_a_list": lambda path: _rewrite(path, lambda f: f.__setitem__("locs", {"L": []})),
    "segments_a_number": lambda path: _rewrite(path, lambda f: f.__setitem__("segments", 5)),
    "no_body": lambda path: _write_raw(path, _entry_key(path), "null"),
    "old_format": _old_format,
    "float_offsets": lambda path: _rewrite(path, _float_offsets),
    "another_record": lambda path: _rewrite(path, lambda f: f.__setitem__(
        "segments", {"O": ["Arena", {"free": {"L": []}, "top": 0, "peak": 0}]})),
}


@pytest.mark.parametrize("old", [1, 2])
def test_the_schema_is_in_the_key(cache_dir, monkeypatch, old):
    """Entries of the code before the frozen program (schema 1) and before byte addresses
    (schema 2) are under other keys."""
    from onemodel_backend_compiled import plan_cache

    shape, traced = _traced("mlp")
    s, _ = _run(traced, _feeds(shape, 1))
    ng = s._compiled
    key = ng.plan_cache.key(ng, {"batch": 1}, tuple(ng.graph.output_names))
    assert plan_cache.SCHEMA >= 3
    monkeypatch.setattr(plan_cache, "SCHEMA", old)
    monkeypatch.setattr(plan_cache, "_code_digest", None)
    assert ng.plan_cache.key(ng, {"batch": 1}, tuple(ng.graph.output_names)) != key


def _bad_then_healed(cache_dir, traced, feeds, plain, before=None):
    """A session over the bad entry lowers anew with the right numbers and replaces the entry;
    the next one loads the new entry."""
    s, got = _run(traced, feeds)
    assert _stats(s)["rejected"] == 1 and _stats(s)["stored"] == 1, _stats(s)
    np.testing.assert_array_equal(got["output"], plain["output"])
    if before is not None:
        before()
    s, got = _run(traced, feeds)
    assert _stats(s)["hits"] == 1, _stats(s)
    np.testing.assert_array_equal(got["output"], plain["output"])


@pytest.mark.parametrize("how", sorted(CRAFTED))
def test_a_crafted_entry_is_rebuilt(cache_dir, how):
    """Entries with sound checksums and the right key whose body is hostile: each session
    that meets one lowers anew and replaces it, instead of failing until `cache clear`."""
    shape, traced = _traced("mlp")
    feeds = _feeds(shape, 2)
    _, plain = _run(traced, feeds, cache=False)
    _run(traced, feeds)
    path, = _files(cache_dir)
    CRAFTED[how](path)
    _bad_then_healed(cache_dir, traced, feeds, plain)


@pytest.mark.parametrize("error", [plan_codec.BadEntry("an instruction the validator refuses"),
                                   entry_file.EntryError("stale"),
                                   OneModelError("does not decode"), RecursionError("deep"),
                                   ValueError("bad value"), MemoryError("too big"),
                                   KeyError("field"), AttributeError("field")])
def test_any_failure_to_decode_rebuilds(cache_dir, monkeypatch, error):
    """Whatever decoding raises (the per-instruction validator raises BadEntry) means:
    discard the entry, lower anew, store the new plan."""
    shape, traced = _traced("mlp")
    feeds = _feeds(shape, 2)
    _, plain = _run(traced, feeds, cache=False)
    _run(traced, feeds)

    def refuse(*args, **kwargs):
        raise error

    original = plan_codec.decode
    monkeypatch.setattr(plan_codec, "decode", refuse)
    _bad_then_healed(cache_dir, traced, feeds, plain,
                     before=lambda: monkeypatch.setattr(plan_codec, "decode", original))


def _special(path, kind, outside):
    """Put a special file where the entry ``path`` was (its sound bytes kept in ``outside``)."""
    os.replace(path, outside / "good")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link_to_fifo":
        os.mkfifo(outside / "fifo")
        os.symlink(outside / "fifo", path)
    elif kind == "link_to_entry":  # sound bytes, but not a file of the cache's own
        os.symlink(outside / "good", path)
    elif kind == "link_loop":
        os.symlink(path, path)
    elif kind == "dangling_link":
        os.symlink(outside / "nothing", path)


def _unblock(outside, path):
    """Open the FIFOs for writing, so a reader stuck in open() gets an end of file."""
    for fifo in (path, outside / "fifo"):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


@pytest.mark.parametrize("which", ["plan", "weights"])
@pytest.mark.parametrize("kind", ["fifo", "link_to_fifo", "link_to_entry", "link_loop",
                                  "dangling_link"])
def test_special_files_are_refused_without_blocking(cache_dir, tmp_path, which, kind):
    shape, traced = _traced("mlp")
    feeds = _feeds(shape, 2)
    _, plain = _run(traced, feeds, cache=False)
    _run(traced, feeds)
    path = _files(cache_dir)[0] if which == "plan" else _weights(cache_dir)[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    _special(path, kind, outside)
    result: dict = {}

    def session():
        try:
            result["run"] = _run(traced, feeds)
        except BaseException as exc:  # noqa: BLE001 - reported below
            result["error"] = exc

    worker = threading.Thread(target=session, daemon=True)
    worker.start()
    worker.join(30)
    blocked = worker.is_alive()
    if blocked:
        _unblock(outside, path)
        worker.join(30)
    assert not blocked, f"a {kind} as the {which} entry blocked the session"
    assert "error" not in result, result.get("error")
    s, got = result["run"]
    np.testing.assert_array_equal(got["output"], plain["output"])
    assert _stats(s)["rejected"] == 1 and _stats(s)["stored"] == 1, _stats(s)
    assert path.is_file() and not path.is_symlink()  # replaced by a plain entry
    assert (outside / "good").exists()  # what a link pointed at is not touched
    s, got = _run(traced, feeds)
    assert _stats(s)["hits"] == 1, _stats(s)
    np.testing.assert_array_equal(got["output"], plain["output"])


def test_a_directory_named_like_an_entry(cache_dir):
    shape, traced = _traced("mlp")
    feeds = _feeds(shape, 2)
    _, plain = _run(traced, feeds, cache=False)
    _run(traced, feeds)
    path, = _files(cache_dir)
    path.unlink()
    path.mkdir()
    s, got = _run(traced, feeds)
    np.testing.assert_array_equal(got["output"], plain["output"])
    assert _stats(s)["rejected"] == 1 and _stats(s)["stored"] == 0, _stats(s)
    assert "IsADirectoryError" in _stats(s)["not_stored"], _stats(s)


_LIVE = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import onemodel as om
    model, x, how, folder = om.load(sys.argv[1]), np.load(sys.argv[2]), sys.argv[3], sys.argv[4]
    s = om.Session(model, backend="compiled")
    first = s.run({"input": x})["output"].numpy()
    assert s._compiled.plan_cache.stats["hits"] == 1, s._compiled.plan_cache.stats
    for name in os.listdir(folder):  # every entry, the weight block too
        path = os.path.join(folder, name)
        if how == "truncate":
            os.truncate(path, 0)
        else:  # overwritten in place, same size: NaN where the weights were
            size = os.path.getsize(path)
            with open(path, "r+b") as f:
                f.write(np.full(size // 4, np.nan, np.float32).tobytes())
    again = s.run({"input": x})["output"].numpy()
    print(json.dumps(bool(np.array_equal(first, again))))
""")


@pytest.mark.parametrize("how", ["truncate", "overwrite"])
def test_an_entry_changed_under_a_live_session(cache_dir, tmp_path, how):
    """A session that loaded an entry keeps what it loaded: truncating the file (SIGBUS with a
    shared mapping) or overwriting it in place (the mapping's pages change) reach it not."""
    w = Tensor.from_numpy(np.random.default_rng(1).standard_normal((512, 1024))
                          .astype(np.float32) / 30)
    traced = om.trace(lambda t: om.ops.relu(om.ops.linear(t, w)),
                      Tensor.from_numpy(np.ones((2, 1024), np.float32)), "batch", None)
    traced.save(tmp_path / "m.onemodel")
    x = np.random.default_rng(2).standard_normal((2, 1024)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    _run(traced, {"input": x})
    assert _weights(cache_dir)[0].stat().st_size > 1 << 21  # large: the one that was mapped
    proc = subprocess.run([sys.executable, "-c", _LIVE, str(tmp_path / "m.onemodel"),
                           str(tmp_path / "x.npy"), how, str(cache_dir / "compiled")],
                          capture_output=True, text=True, timeout=120, env=os.environ)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert json.loads(proc.stdout.strip().splitlines()[-1]) is True


def test_a_lowering_registered_at_run_time_is_not_cached(cache_dir):
    """An installed op (softmax) whose native lowering another plugin replaces at run time:
    that lowering has no version, so the plan is not stored (nor an old one used)."""
    from onemodel.registry import KernelDef, hookimpl
    from onemodel_backend_compiled.rules import softmax_rule

    calls = []

    def lower(ctx, node, params):
        calls.append(node.op)
        return softmax_rule(ctx, node, params)

    class Plugin:
        @hookimpl
        def onemodel_kernels(self):
            return (KernelDef(op="softmax", backend="compiled", lower=lower, override=True),)

    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    traced = om.trace(lambda t: om.ops.softmax(t * 3.0, axis=-1), Tensor.from_numpy(x),
                      "batch", None)
    _, want = _run(traced, {"input": x})  # the backend's own lowering: stored
    assert len(_files(cache_dir)) == 1
    name = om.registry.register(Plugin(), "cache-test-lowering")
    try:
        s, got = _run(traced, {"input": x})
        np.testing.assert_array_equal(got["output"], want["output"])
        assert calls == ["softmax"], "the stored plan of the backend's own lowering was used"
        assert "registered at run time" in _stats(s)["not_stored"]
        assert len(_files(cache_dir)) == 1
    finally:
        om.registry.unregister(name)
