"""The plugin registry: entry points (faked, never installed), run-time plugins, and faults."""
from __future__ import annotations

import importlib.metadata
import types

import numpy as np
import pytest

import onemodel as om
from onemodel.core import TensorType
from onemodel.registry import OpDef, Sample, hookimpl
from onemodel.registry.manager import Registry


def _op(name, **kw):
    return OpDef(name=name, inputs=("x",), kernel=lambda x: x * 3,
                 infer=lambda t: TensorType(t.dtype, t.shape),
                 vjp=lambda ctx, g: (g * 3,), samples=lambda rng: [Sample(args=(np.ones(2),))], **kw)


class _Dist:
    def __init__(self, name):
        self.metadata = {"Name": name}
        self.version = "9.9"


class _EP:
    def __init__(self, name, load, dist):
        self.name, self._load, self.dist = name, load, _Dist(dist)

    def load(self):
        return self._load()


def _module(name, *ops):
    mod = types.ModuleType(name)

    @hookimpl
    def onemodel_ops():
        return ops

    mod.onemodel_ops = onemodel_ops
    return mod


def _fake_registry(monkeypatch, eps):
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: eps if group == "onemodel" else [])
    return Registry()


def _boom():
    raise ImportError("missing dependency frobnicate")


def test_import_failure_names_the_plugin_and_others_work(monkeypatch):
    reg = _fake_registry(monkeypatch, [
        _EP("good", lambda: _module("good", _op("triple")), "good-dist"),
        _EP("bad", _boom, "bad-dist"),
    ])
    with pytest.warns(RuntimeWarning, match="bad"):
        tables = reg.tables()
    assert "triple" in tables.ops
    errors = reg.errors()
    assert len(errors) == 1 and errors[0].plugin == "bad" and errors[0].distribution == "bad-dist"
    assert "frobnicate" in str(errors[0])


def test_hook_that_raises_is_reported(monkeypatch):
    mod = types.ModuleType("raiser")

    @hookimpl
    def onemodel_ops():
        raise RuntimeError("kaboom")

    mod.onemodel_ops = onemodel_ops
    reg = _fake_registry(monkeypatch, [_EP("raiser", lambda: mod, "raiser-dist"),
                                       _EP("good", lambda: _module("good", _op("triple")), "good-dist")])
    with pytest.warns(RuntimeWarning):
        tables = reg.tables()
    assert "triple" in tables.ops
    (err,) = reg.errors()
    assert "raiser-dist" in str(err) and "onemodel_ops" in str(err) and "kaboom" in str(err)


def test_malformed_record_is_reported(monkeypatch):
    reg = _fake_registry(monkeypatch, [_EP("junk", lambda: _module("junk", {"name": "x"}, _op("ok_op")),
                                           "junk-dist")])
    with pytest.warns(RuntimeWarning):
        tables = reg.tables()
    assert "ok_op" in tables.ops
    (err,) = reg.errors()
    assert "malformed" in str(err) and "junk-dist" in str(err)


def test_name_clash_names_both_plugins(monkeypatch):
    reg = _fake_registry(monkeypatch, [_EP("one", lambda: _module("one", _op("dup")), "one-dist"),
                                       _EP("two", lambda: _module("two", _op("dup"), _op("other")),
                                           "two-dist")])
    with pytest.warns(RuntimeWarning):
        tables = reg.tables()
    assert "dup" not in tables.ops and "other" in tables.ops
    msg = str(tables.withdrawn["dup"])
    assert "one-dist" in msg and "two-dist" in msg


def test_entry_points_load_once_and_lazily(monkeypatch):
    calls = []

    def load():
        calls.append(1)
        return _module("lazy", _op("lazy_op"))

    reg = _fake_registry(monkeypatch, [_EP("lazy", load, "lazy-dist")])
    assert calls == []
    reg.tables()
    reg.tables()
    reg.register(_module("late", _op("late_op")), "late")
    assert "late_op" in reg.tables().ops and "lazy_op" in reg.tables().ops
    assert calls == [1]


def test_autoload_can_be_disabled(monkeypatch):
    monkeypatch.setenv("ONEMODEL_DISABLE_PLUGIN_AUTOLOAD", "1")
    reg = _fake_registry(monkeypatch, [_EP("x", lambda: _module("x", _op("x_op")), "x-dist")])
    assert "x_op" not in reg.tables().ops
    assert all(i.distribution != "x-dist" for i in reg.plugins())


def test_malformed_opdef_is_rejected_at_construction():
    with pytest.raises(TypeError):
        OpDef(name="bad", inputs=("x",), kernel=None, infer=lambda t: t, vjp=None, samples=lambda r: [])


def test_runtime_plugin_op_works_everywhere(registered):
    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return [_op("triple_it", methods=("triple_it",))]

    registered(Plugin(), "test-triple")
    x = om.tensor([1.0, 2.0], requires_grad=True)
    y = om.ops.triple_it(x)
    np.testing.assert_array_equal(y.numpy(), [3.0, 6.0])
    z = x.triple_it()
    z.backward(om.tensor([1.0, 1.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    assert "triple_it" in dir(om.ops)
    traced = om.trace(lambda t: om.ops.triple_it(t), om.Tensor.ones(om.DType.F32, 4, 3), "batch", None)
    assert "triple_it" in str(traced.graph)


def test_unknown_op_suggests_close_names():
    with pytest.raises(AttributeError, match="did you mean relu"):
        om.ops.rellu


def test_plugin_info_lists_contributions():
    infos = {i.distribution: i for i in om.registry.plugins()}
    assert "onemodel-ops-basic" in infos
    assert "relu" in infos["onemodel-ops-basic"].contributes["ops"]
