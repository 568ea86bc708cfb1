"""Issue 26: native lowerings come from the registry. ``KernelDef(backend="compiled",
lower=...)`` of any plugin lowers its op (a plugin registered at run time here), refuses with a
reason the plan shows, and replaces the project's own with ``override=True``; the project's
lowerings are records too; the rule modules import without a cycle."""
from __future__ import annotations

import contextlib
import subprocess
import sys

import numpy as np
import pytest

import onemodel as om
from onemodel.core.graph import GraphBuilder
from onemodel.core.types import TensorType
from onemodel.registry import KernelDef, OpDef, Param, Sample, hookimpl
from onemodel_backend_compiled import lowering_api as api
from onemodel_backend_compiled.lower import Lowering


def _softmax_last(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


#: a third party's op: a softmax with a name of its own and no traits (nothing tells the
#: backend what it is but its lowering)
MY_SOFTMAX = OpDef(
    name="my_rowsoftmax", inputs=("x",), params={"axis": Param(kind="axis", default=-1)},
    kernel=_softmax_last, infer=lambda x, axis=-1: x, vjp=None,
    samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),), grad=False)])


def lower_my_rowsoftmax(ctx: api.LoweringContext, node, params):
    """The op over the last axis as the executor's softmax instruction; refuses the others."""
    x, out = node.inputs[0], node.outputs[0]
    shape = ctx.shape(x)
    if params["axis"] % len(shape) != len(shape) - 1:
        raise api.Unsupported("my_rowsoftmax: only over the last axis")
    if not ctx.is_f32(x):
        return False
    src = ctx.contiguous(x)
    dst = ctx.dest(out)
    ctx.emit(api.instruction(api.program.I_SOFTMAX, src.addr, dst.addr,
                             src.size // shape[-1], shape[-1]))
    ctx.bind(out, dst)


def lower_twice_plus_one(ctx: api.LoweringContext, node, params):
    """A pointwise op without a formula in its record: the lowering writes the VM program."""
    vm = api.VMBuilder()
    r = vm.op(api.pointwise.MUL, vm.load(node.inputs[0]), vm.const(2.0))
    vm.finish(vm.op(api.pointwise.ADD, r, vm.const(1.0)))
    api.emit_vm(ctx, vm)

TWICE = OpDef(name="my_twice_plus_one", inputs=("x",), kernel=lambda x: x * 2 + 1,
              infer=lambda x: x, vjp=None,
              samples=lambda rng: [Sample(args=(rng.standard_normal(3),), grad=False)])


@contextlib.contextmanager
def _plugin(name, ops=(), kernels=()):
    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return tuple(ops)

        @hookimpl
        def onemodel_kernels(self):
            return tuple(kernels)

    registered = om.registry.register(Plugin(), name)
    try:
        yield
    finally:
        om.registry.unregister(registered)


def _one_node(op, x, **params):
    gb = GraphBuilder()
    gb.add_input("x", TensorType(om.DType.F32, x.shape))
    y, = gb.add_node(op, ["x"], [TensorType(om.DType.F32, x.shape)], params)
    return gb.finish([("y", y.name)])


X = np.random.default_rng(26).standard_normal((4, 5)).astype(np.float32)


def test_a_plugin_registered_at_run_time_ships_a_native_lowering(isa):
    lowering = KernelDef(op="my_rowsoftmax", backend="compiled", lower=lower_my_rowsoftmax)
    with _plugin("compiled-test-lowering", [MY_SOFTMAX], [lowering]):
        graph = _one_node("my_rowsoftmax", X, axis=-1)
        s = om.Session(graph, backend="compiled", optimization="none")
        src = s.plan_source({"x": X})
        assert "1 native node(s), 0 on numpy" in src and "softmax     my_rowsoftmax" in src, src
        np.testing.assert_allclose(s.run({"x": X})["y"].numpy(), _softmax_last(X),
                                   rtol=1e-5, atol=1e-6)
        assert s.run({"x": X * 100})["y"].numpy().sum(axis=-1) == pytest.approx(np.ones(4))


def test_without_its_lowering_the_op_runs_on_numpy():
    with _plugin("compiled-test-no-lowering", [MY_SOFTMAX]):
        s = om.Session(_one_node("my_rowsoftmax", X), backend="compiled", optimization="none")
        src = s.plan_source({"x": X})
        assert "numpy: my_rowsoftmax" in src and "(not native" not in src, src
        np.testing.assert_allclose(s.run({"x": X})["y"].numpy(), _softmax_last(X), rtol=1e-6)


def test_a_lowering_that_refuses_leaves_the_node_on_numpy_with_its_reason():
    lowering = KernelDef(op="my_rowsoftmax", backend="compiled", lower=lower_my_rowsoftmax)
    with _plugin("compiled-test-refusal", [MY_SOFTMAX], [lowering]):
        s = om.Session(_one_node("my_rowsoftmax", X, axis=0), backend="compiled",
                       optimization="none")
        src = s.plan_source({"x": X})
        assert "numpy: my_rowsoftmax -> %" in src, src
        assert "(not native: my_rowsoftmax: only over the last axis)" in src, src
        np.testing.assert_allclose(s.run({"x": X})["y"].numpy(), _softmax_last(X, axis=0),
                                   rtol=1e-6)


def test_a_lowering_may_write_its_own_vm_program(isa):
    lowering = KernelDef(op="my_twice_plus_one", backend="compiled", lower=lower_twice_plus_one)
    with _plugin("compiled-test-vm", [TWICE], [lowering]):
        s = om.Session(_one_node("my_twice_plus_one", X), backend="compiled",
                       optimization="none")
        assert "pointwise   my_twice_plus_one" in s.plan_source({"x": X})
        np.testing.assert_array_equal(s.run({"x": X})["y"].numpy(), X * 2 + 1)


def test_an_override_replaces_the_projects_own_lowering():
    def refuse(ctx, node, params):
        raise api.Unsupported("refused by the override")

    override = KernelDef(op="softmax", backend="compiled", lower=refuse, override=True)
    graph = _one_node("softmax", X, axis=-1)
    assert "softmax     softmax" in om.Session(graph, backend="compiled").plan_source({"x": X})
    with _plugin("compiled-test-override", kernels=[override]):
        s = om.Session(graph, backend="compiled", optimization="none")
        src = s.plan_source({"x": X})
        assert "(not native: refused by the override)" in src, src
        np.testing.assert_allclose(s.run({"x": X})["y"].numpy(), _softmax_last(X), rtol=1e-6)


def test_the_projects_lowerings_are_registry_records():
    kernels = om.registry.kernels()
    for op in ("linear", "conv2d", "softmax", "lstm", "take", "index", "split"):
        rec = kernels[("compiled", op)]
        assert rec.lower is not None and rec.kernel is None and rec.make is None, op
        assert rec.provider.startswith("onemodel-backend-compiled"), rec.provider
    # views and pointwise ops lower through their traits: no record names them
    for op in ("reshape", "transpose", "expand", "relu", "add", "gelu"):
        assert ("compiled", op) not in kernels, op


def test_the_lowering_context_is_what_the_lowering_offers():
    """Every method the documented context lists is one of `Lowering`'s."""
    members = [n for n, v in vars(api.LoweringContext).items()
               if callable(v) and not n.startswith("_")]
    assert {"shape", "loc", "contiguous", "dest", "scratch", "emit", "bind"} <= set(members)
    for name in members:
        assert callable(getattr(Lowering, name, None)), name


@pytest.mark.parametrize("module", ["text_rules", "rnn_rules", "rules", "lowerings", "views"])
def test_each_rule_module_imports_first_without_a_cycle(module):
    r = subprocess.run([sys.executable, "-c",
                        f"import onemodel_backend_compiled.{module}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_a_plugins_instructions_are_checked_before_they_run(monkeypatch):
    """Without the tests' flag too: a lowering that writes past its output is refused, naming
    the instruction, before native code runs it."""
    from onemodel_backend_compiled.plan_check import ENV_FLAG, UnsafePlan

    def overflowing(ctx, node, params):
        x, out = node.inputs[0], node.outputs[0]
        src, dst = ctx.contiguous(x), ctx.dest(out)
        ctx.emit(api.instruction(api.program.I_SOFTMAX, src.addr, dst.addr, 1000, 5))
        ctx.bind(out, dst)

    monkeypatch.delenv(ENV_FLAG, raising=False)
    lowering = KernelDef(op="my_rowsoftmax", backend="compiled", lower=overflowing)
    with _plugin("compiled-test-overflow", [MY_SOFTMAX], [lowering]):
        s = om.Session(_one_node("my_rowsoftmax", X), backend="compiled", optimization="none",
                       cache=False)
        with pytest.raises(UnsafePlan, match="softmax"):
            s.run({"x": X})
