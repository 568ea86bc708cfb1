"""One clash rule for every registry table, and misspelt hooks reported (issue 13, item 4).

A duplicate op, kernel, backend, pass or module name is an error naming both distributions and the
name is withdrawn, unless the newcomer's record says ``override=True``; ``onemodel plugins`` shows
overrides; a ``@hookimpl`` named after no hook is an error of its plugin.
"""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import onemodel as om
from onemodel.core import TensorType
from onemodel.passes.constant_folding import fold_constants
from onemodel.registry import (BackendDef, KernelDef, ModuleDef, OpDef, PassDef, Sample,
                               hookimpl)
from onemodel.registry.manager import Registry

from .test_plugin_faults import _fake_dist


def _plugin(**hooks):
    """A plugin object whose hooks return the given records."""
    ns = {}
    for hook, records in hooks.items():
        def make(recs):
            return hookimpl(lambda self: recs)
        fn = make(records)
        fn.__name__ = hook
        ns[hook] = fn
    return type("TestPlugin", (), ns)()


def _numpy_backend(**kw):
    real = om.registry.backends()["numpy"]
    return BackendDef(name="numpy", create=real.create, doc="a test copy", **kw)


def _relu_kernel(**kw):
    return KernelDef(op="relu", backend="numpy", kernel=lambda x: np.maximum(x, 0), **kw)


def _constant_folding(**kw):
    return PassDef(name="constant_folding", level="basic", run=fold_constants, order=10, **kw)


CASES = {
    "backend": ("onemodel_backends", _numpy_backend, lambda: om.registry.backends(), "numpy"),
    "pass": ("onemodel_passes", _constant_folding, lambda: om.registry.passes(),
             "constant_folding"),
    "kernel": ("onemodel_kernels", _relu_kernel, lambda: om.registry.kernels(),
               ("numpy", "relu")),
}


@pytest.mark.parametrize("what", CASES)
def test_a_duplicate_without_override_is_an_error_naming_both(registered, what):
    hook, make, table, key = CASES[what]
    owner = table()[key].provider
    registered(_plugin(**{hook: [make()]}), f"test-dup-{what}")
    with pytest.warns(RuntimeWarning, match="defined by 2 plugins"):
        errors = om.registry.errors()
    (err,) = [e for e in errors if f"test-dup-{what}" in str(e)]
    assert owner in str(err) and f"test-dup-{what}" in str(err) and "override=True" in str(err)
    assert key not in table()  # withdrawn: neither copy wins by accident of load order
    assert om.registry.REGISTRY.tables().clash(what + ("es" if what == "pass" else "s"), key) is err


@pytest.mark.parametrize("what", CASES)
def test_a_duplicate_with_override_replaces_and_is_shown(registered, what):
    hook, make, table, key = CASES[what]
    owner = table()[key].provider
    rec = make(override=True)
    registered(_plugin(**{hook: [rec]}), f"test-override-{what}")
    assert not [e for e in om.registry.errors() if f"test-override-{what}" in str(e)]
    got = table()[key]
    assert got.provider == f"test-override-{what}" and got.override
    (info,) = [i for i in om.registry.plugins() if i.name == f"test-override-{what}"]
    (line,) = info.overrides
    assert owner in line and "replaces" in line


def test_overridden_records_are_used(registered):
    calls = []

    def relu(x):
        calls.append(x.shape)
        return np.maximum(x, 0)

    registered(_plugin(onemodel_kernels=[KernelDef(op="relu", backend="numpy", kernel=relu,
                                                   override=True)]), "test-relu-used")
    traced = om.trace(lambda t: om.ops.relu(t), om.Tensor.ones(om.DType.F32, 3, 2), "batch", None,
                      check=False)
    session = traced.create_session(backend="numpy", optimization="none")  # the kernel's backend
    out = session.run({"input": -np.ones((4, 2), np.float32)})
    np.testing.assert_array_equal(out["output"].numpy(), np.zeros((4, 2), np.float32))
    assert (4, 2) in calls


def test_two_overrides_of_one_name_clash(registered):
    registered(_plugin(onemodel_kernels=[_relu_kernel(override=True)]), "test-over-a")
    registered(_plugin(onemodel_kernels=[_relu_kernel(override=True)]), "test-over-b")
    with pytest.warns(RuntimeWarning):
        errors = om.registry.errors()
    (err,) = [e for e in errors if "test-over-a" in str(e)]
    assert "test-over-b" in str(err) and "only one may" in str(err)
    assert ("numpy", "relu") not in om.registry.kernels()


def test_module_and_op_tables_follow_the_same_rule(registered):
    class Double(om.nn.NnModule):
        def forward(self, x):
            return x * 2

    def op(**kw):
        return OpDef(name="relu", inputs=("x",), kernel=lambda x: np.maximum(x, 0) * 1,
                     infer=lambda t: TensorType(t.dtype, t.shape), vjp=None,
                     samples=lambda rng: [Sample(args=(np.ones(2),))], **kw)

    registered(_plugin(onemodel_modules=[ModuleDef(name="ReLU", cls=Double, override=True)],
                       onemodel_ops=[op(override=True)]), "test-override-both")
    assert om.nn.ReLU is Double
    assert om.registry.get_op("relu").provider == "test-override-both"
    np.testing.assert_array_equal(om.ops.relu(om.tensor([-1.0, 2.0])).numpy(), [0.0, 2.0])
    om.registry.unregister("test-override-both")
    registered(_plugin(onemodel_modules=[ModuleDef(name="ReLU", cls=Double)]), "test-dup-module")
    with pytest.warns(RuntimeWarning):
        errors = om.registry.errors()
    assert any("module 'ReLU'" in str(e) and "onemodel-ops-nn" in str(e) for e in errors)
    assert "ReLU" not in om.registry.modules()


def test_the_tables_come_back_when_the_newcomer_goes(registered):
    registered(_plugin(onemodel_backends=[_numpy_backend()]), "test-dup-gone")
    with pytest.warns(RuntimeWarning):
        assert "numpy" not in om.registry.backends()
    traced = om.trace(lambda t: t * 2.0, om.Tensor.ones(om.DType.F32, 3, 2), "batch", None)
    with pytest.raises(om.OneModelError, match="'numpy' is unavailable: backend 'numpy' is "
                                               "defined by 2 plugins"):
        traced.create_session(backend="numpy")
    om.registry.unregister("test-dup-gone")
    assert "numpy" in om.registry.backends()
    assert not [e for e in om.registry.errors() if "test-dup-gone" in str(e)]


# -- misspelt hooks ------------------------------------------------------------------------------
class _Dist:
    def __init__(self, name):
        self.metadata = {"Name": name}
        self.version = "1.2"


class _EP:
    def __init__(self, name, module, dist):
        self.name, self._module, self.dist = name, module, _Dist(dist)

    def load(self):
        return self._module


def test_a_misspelt_hook_in_an_installed_plugin_is_reported(monkeypatch):
    mod = types.ModuleType("typo_plugin")

    @hookimpl
    def onemodel_opps():  # the hook is onemodel_ops
        return []

    @hookimpl
    def onemodel_passes():
        return [PassDef(name="typo_pass", level="basic", run=lambda g: g)]

    mod.onemodel_opps, mod.onemodel_passes = onemodel_opps, onemodel_passes
    eps = [_EP("typo", mod, "typo-dist")]
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: eps if group == "onemodel" else [])
    reg = Registry()
    with pytest.warns(RuntimeWarning, match="unknown hook 'onemodel_opps'"):
        tables = reg.tables()
    (err,) = reg.errors()
    assert err.plugin == "typo" and err.distribution == "typo-dist"
    assert "typo-dist" in str(err) and "did you mean onemodel_ops?" in str(err)
    assert "typo_pass" in tables.passes  # its other hooks still work


def test_check_pending_is_quiet_for_good_plugins(monkeypatch):
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: [])
    reg = Registry()
    reg.tables()
    assert reg.errors() == []


# -- installed plugins, seen by `onemodel plugins` -------------------------------------------------
@pytest.fixture(scope="module")
def clash_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("clash-site")
    _fake_dist(root, "typo-hooks", "typo_hooks_mod", """
        from onemodel.registry import hookimpl

        @hookimpl
        def onemodel_kernel():
            return []
    """)
    _fake_dist(root, "better-folding", "better_folding_mod", """
        from onemodel.passes.constant_folding import fold_constants
        from onemodel.registry import PassDef, hookimpl

        @hookimpl
        def onemodel_passes():
            return [PassDef(name="constant_folding", level="basic", run=fold_constants,
                            order=10, override=True)]
    """)
    return dict(os.environ, COLUMNS="1000", PYTHONPATH=os.pathsep.join(
        [str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


def test_onemodel_plugins_shows_overrides_and_misspelt_hooks(clash_site):
    r = subprocess.run([sys.executable, "-m", "onemodel.cli", "plugins"], capture_output=True,
                       text=True, env=clash_site, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "overrides" in r.stdout.splitlines()[0]
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line.strip()}
    assert "pass 'constant_folding' (replaces onemodel" in rows["better_folding_mod"]
    assert "unknown hook 'onemodel_kernel'" in rows["typo_hooks_mod"]
    assert "did you mean onemodel_kernels?" in rows["typo_hooks_mod"]
    assert rows["backend_numpy"].rstrip().endswith("-")
