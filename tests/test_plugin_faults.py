"""Broken plugins: faults at import, in a hook, in a record, in `register`, and in a KERNEL at
run time (eager and in a session, on every backend). Each error names the plugin (and, in a
session, the node: op, output, source line); the other plugins keep working; `onemodel
plugins` lists the failure. tests/test_registry.py covers the in-process registry basics."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.core.graph import GraphBuilder, Node, Value
from onemodel.core.interpreter import NodeExecutionError
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType
from onemodel.registry import BackendDef, KernelDef, OpDef, PassDef, Sample, hookimpl

B = Dim.symbol("batch")


def _op(name, kernel, infer=lambda x: x):
    return OpDef(name=name, inputs=("x",), kernel=kernel, infer=infer, vjp=None,
                 samples=lambda rng: [Sample(args=(np.ones(2),))])


def _plugin(**hooks):
    class Plugin:
        pass

    for hook, records in hooks.items():
        def impl(self, _records=records):
            return _records

        impl.__name__ = hook
        setattr(Plugin, hook, hookimpl(impl))
    return Plugin()


def _boom(x):
    raise RuntimeError("kernel exploded")


def _graph_with(op_name, source="model.py:42"):
    """x -> relu -> op_name -> y, the second node recorded at ``source``."""
    gb = GraphBuilder()
    gb.add_input("x", TensorType(DType.F32, (B, 3)))
    r, = gb.add_node("relu", ["x"], [TensorType(DType.F32, (B, 3))])
    gb.nodes.append(Node(op_name, (r.name,), ("faulty_out",), {}, source))
    gb.values["faulty_out"] = Value("faulty_out", TensorType(DType.F32, (B, 3)))
    return gb.finish([("y", "faulty_out")])


# -- kernels that raise at run time ------------------------------------------------------------
def test_eager_kernel_error_names_the_op_and_plugin(registered):
    registered(_plugin(onemodel_ops=[_op("fault_eager", _boom)]), "faulty-eager-plugin")
    with pytest.raises(om.OpError, match=r"ops\.fault_eager.*faulty-eager-plugin.*"
                                         r"RuntimeError: kernel exploded"):
        om.ops.fault_eager(Tensor.zeros(DType.F32, 2))
    assert om.ops.relu(Tensor.ones(DType.F32, 2)).tolist() == [1.0, 1.0]  # others still work


@pytest.mark.parametrize("backend", om.backends())
@pytest.mark.parametrize("level", ["none", "all"])
def test_session_kernel_error_names_node_source_and_plugin(registered, backend, level):
    registered(_plugin(onemodel_ops=[_op("fault_session", _boom)]), "faulty-session-plugin")
    s = om.Session(_graph_with("fault_session"), backend=backend, optimization=level)
    with pytest.raises(NodeExecutionError) as info:
        s.run({"x": np.ones((2, 3), np.float32)})
    msg = str(info.value)
    for part in ("fault_session", "%faulty_out", "model.py:42", "faulty-session-plugin",
                 "RuntimeError: kernel exploded"):
        assert part in msg, (part, msg)
    assert info.value.provider == "faulty-session-plugin"
    # the session and the other plugins' ops still work afterwards
    ok = om.Session(_graph_with("relu"), backend=backend)
    np.testing.assert_array_equal(ok.run({"x": -np.ones((2, 3), np.float32)})["y"].numpy(), 0)


@pytest.mark.parametrize("backend", om.backends())
def test_a_kernel_only_fails_for_some_inputs(registered, backend):
    """The same session keeps serving good feeds after a failing one."""
    def picky(x):
        if x.shape[0] == 3:
            raise ValueError("three is unlucky")
        return x * 2

    registered(_plugin(onemodel_ops=[_op("fault_picky", picky)]), "picky-plugin")
    s = om.Session(_graph_with("fault_picky"), backend=backend)
    with pytest.raises(NodeExecutionError, match="picky-plugin.*three is unlucky"):
        s.run({"x": np.ones((3, 3), np.float32)})
    for n in (1, 2, 4):
        assert s.run({"x": np.ones((n, 3), np.float32)})["y"].numpy().sum() == 6 * n


def test_a_backend_kernel_error_names_the_kernels_plugin(registered):
    """An op from one plugin with a numpy-backend kernel from another: the kernel's plugin is
    the one named."""
    registered(_plugin(onemodel_ops=[_op("fault_split", lambda x: x + 1)]), "op-owner-plugin")
    registered(_plugin(onemodel_kernels=[KernelDef(op="fault_split", backend="numpy",
                                                   kernel=_boom)]), "kernel-owner-plugin")
    np.testing.assert_array_equal(om.ops.fault_split(Tensor.zeros(DType.F32, 2)).numpy(), 1)
    s = om.Session(_graph_with("fault_split"), backend="numpy")
    with pytest.raises(NodeExecutionError, match="kernel-owner-plugin"):
        s.run({"x": np.ones((2, 3), np.float32)})


@pytest.mark.parametrize("kernel,match", [
    (lambda x: None, r"returned shape \(\)"),
    (lambda x: np.zeros(7, np.float32), r"returned shape \(7,\)"),
    (lambda x: "text", "returned str"),
    (lambda x: (x, x), "returned 2 outputs"),
])
def test_kernels_returning_junk_are_named_in_eager_mode(registered, kernel, match):
    registered(_plugin(onemodel_ops=[_op("fault_junk", kernel)]), "junk-kernel-plugin")
    with pytest.raises(om.OpError, match=match) as info:
        om.ops.fault_junk(Tensor.zeros(DType.F32, 2))
    assert "junk-kernel-plugin" in str(info.value)


@pytest.mark.parametrize("infer", [lambda x: "junk", lambda x: None, lambda x: 1 / 0])
def test_inference_returning_junk_or_raising_is_an_op_error(registered, infer):
    registered(_plugin(onemodel_ops=[_op("fault_infer", lambda x: x, infer)]), "infer-plugin")
    with pytest.raises(om.OpError, match="fault_infer"):
        om.ops.fault_infer(Tensor.zeros(DType.F32, 2))


# -- backends and passes that raise ------------------------------------------------------------
def test_a_backend_that_fails_to_start_or_compile_is_named(registered):
    class Broken:
        def compile(self, graph):
            raise KeyError("no such device")

    def create_raises(**options):
        raise RuntimeError("driver missing")

    registered(_plugin(onemodel_backends=[
        BackendDef(name="fault_start", create=create_raises),
        BackendDef(name="fault_compile", create=lambda **o: Broken())]), "broken-backends")
    g = _graph_with("relu")
    with pytest.raises(om.OneModelError, match="'fault_start'.*broken-backends.*driver missing"):
        om.Session(g, backend="fault_start")
    with pytest.raises(om.OneModelError, match="'fault_compile'.*broken-backends.*no such device"):
        om.Session(g, backend="fault_compile")
    assert om.Session(g, backend="numpy").run({"x": np.ones((1, 3), np.float32)})


def test_a_pass_that_raises_names_itself_and_how_to_skip_it(registered):
    def broken(graph):
        raise IndexError("pass bug")

    registered(_plugin(onemodel_passes=[PassDef(name="fault_pass", level="basic", run=broken)]),
               "broken-pass-plugin")
    g = _graph_with("relu")
    with pytest.raises(om.OneModelError, match=r"fault_pass.*broken-pass-plugin.*pass bug.*"
                                               r"disabled=\['fault_pass'\]"):
        om.Session(g, optimization="basic")
    s = om.Session(g, optimization="basic", disabled=["fault_pass"])
    assert s.run({"x": np.ones((1, 3), np.float32)})["y"].shape == (1, 3)


# -- register() of things that are not plugins -----------------------------------------------------
class _NoHooks:
    def onemodel_ops(self):  # not marked @hookimpl
        return []


class _Misspelled:
    @hookimpl
    def onemodel_opz(self):
        return []


class _BadSignature:
    @hookimpl
    def onemodel_ops(self, unexpected):
        return []


@pytest.mark.parametrize("junk,match", [
    (None, "not a plugin"), (42, "not a plugin"), ("ops_nn", "not a plugin"),
    (object(), "not a plugin"), (_NoHooks(), "not a plugin"),
    (_Misspelled(), "unknown hook.*onemodel_opz"), (_BadSignature(), "invalid.*unexpected"),
])
def test_register_refuses_junk(junk, match):
    before = {p.name for p in om.registry.plugins()}
    with pytest.raises(om.PluginError, match=match):
        om.registry.register(junk, "junk-plugin")
    assert {p.name for p in om.registry.plugins()} == before
    assert "relu" in om.registry.ops()


def test_register_refuses_a_taken_name_or_a_second_registration(registered):
    p = _plugin(onemodel_ops=[_op("fault_twice", lambda x: x)])
    registered(p, "twice-plugin")
    with pytest.raises(om.PluginError, match="named 'twice-plugin' is registered already"):
        om.registry.register(_plugin(onemodel_ops=[]), "twice-plugin")
    with pytest.raises(om.PluginError, match="registered already"):
        om.registry.register(p, "twice-plugin-2")
    with pytest.raises(om.PluginError, match="name must be a non-empty str"):
        om.registry.register(_plugin(onemodel_ops=[]), 5)


# -- broken installed plugins, seen by `onemodel plugins` in a subprocess --------------------------
def _fake_dist(root, dist: str, module: str, source: str) -> None:
    """A distribution importlib.metadata finds on PYTHONPATH: ``<dist>-1.0.dist-info`` with an
    ``onemodel`` entry point, and its module (no pip install)."""
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[onemodel]\n{module} = {module}\n")
    (root / f"{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture(scope="module")
def broken_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    _fake_dist(root, "fault-import", "fault_import_mod", """
        raise ImportError("needs libfrobnicate")
    """)
    _fake_dist(root, "fault-hook", "fault_hook_mod", """
        from onemodel.registry import hookimpl

        @hookimpl
        def onemodel_ops():
            raise RuntimeError("hook exploded")
    """)
    _fake_dist(root, "fault-record", "fault_record_mod", """
        from onemodel.registry import hookimpl

        @hookimpl
        def onemodel_passes():
            return ["not a record"]
    """)
    _fake_dist(root, "fault-kernel", "fault_kernel_mod", """
        import numpy as np
        from onemodel.registry import OpDef, Sample, hookimpl

        def _boom(x):
            raise RuntimeError("installed kernel exploded")

        @hookimpl
        def onemodel_ops():
            return [OpDef(name="installed_fault", inputs=("x",), kernel=_boom,
                          infer=lambda x: x, vjp=None,
                          samples=lambda rng: [Sample(args=(np.ones(2),))])]
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    return env


def _cli(env, *args, code=None):
    cmd = [sys.executable, "-m", "onemodel.cli", *args] if code is None else \
        [sys.executable, "-c", code]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


def test_onemodel_plugins_lists_each_failure(broken_site):
    r = _cli(broken_site, "plugins")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line.strip()}
    assert "needs libfrobnicate" in rows["fault_import_mod"]
    assert "fault-import" in rows["fault_import_mod"]
    assert "raised in hook onemodel_ops" in rows["fault_hook_mod"]
    assert "hook exploded" in rows["fault_hook_mod"]
    assert "malformed record" in rows["fault_record_mod"]
    for good in ("ops_basic", "ops_nn", "backend_numpy"):
        assert rows[good].rstrip().endswith("-"), rows[good]  # no errors for the others
    assert "RuntimeWarning" in r.stderr  # and a warning per broken plugin


def test_installed_broken_kernel_in_a_subprocess(broken_site):
    """The other plugins still work in a process where four plugins are broken, and the broken
    kernel's errors name the op, the node and the distribution."""
    code = textwrap.dedent("""
        import warnings
        warnings.simplefilter("ignore")
        import numpy as np
        import onemodel as om
        from onemodel import DType, Tensor
        x = Tensor.ones(DType.F32, 2, 3)
        assert om.ops.relu(x).numpy().sum() == 6
        try:
            om.ops.installed_fault(x)
        except om.OpError as e:
            print("EAGER", e)
        tr = om.trace(lambda t: om.ops.relu(t) + 1, x, "batch", None)
        out = om.Session(tr).run({"input": np.ones((2, 3), np.float32)})["output"]
        print("SESSION-OK", out.shape)
    """)
    r = _cli(broken_site, code=code)
    assert r.returncode == 0, r.stderr
    assert "EAGER ops.installed_fault" in r.stdout and "fault-kernel 1.0" in r.stdout
    assert "SESSION-OK (2, 3)" in r.stdout
