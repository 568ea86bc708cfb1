"""The pipeline: levels, order, fixed point, disabled passes, plugin passes, errors."""
import pytest

import onemodel as om
from onemodel.passes import PassError, builtin, optimize, passes_for
from onemodel.registry import PassDef, hookimpl

from .helpers import const, counts, ops, traced

W, B = const(4, 4), const(4, seed=1)


def _model(x):
    h = ops.relu(ops.matmul(x, W.transpose(0, 1)) + B)  # folding, then matmul+add, then relu
    return ops.dropout(h, 0.5, training=False) * 1.0


def test_builtin_passes_are_registered_records():
    hooked = builtin.onemodel_passes()
    assert all(isinstance(p, PassDef) for p in hooked)
    installed = om.registry.passes()
    for p in hooked:
        assert installed[p.name].provider is not None
    fused = {op.name for op in builtin.onemodel_ops()}
    assert fused <= set(om.registry.ops())
    names = [p.name for p in passes_for("basic")]
    assert set(names) == {"constant_folding", "noop_elimination",
                          "common_subexpression_elimination", "dead_code_elimination"}
    assert set(names) < {p.name for p in passes_for("all")}
    assert passes_for("none") == []


def test_levels():
    g = traced(_model, 4)
    assert optimize(g, "none") is g
    basic = optimize(g, "basic", verify=True)
    assert counts(basic) == {"add": 1, "matmul": 1, "relu": 1}
    assert counts(optimize(g, "all", verify=True)) == {"fused_linear": 1}


def test_disabled():
    g = traced(_model, 4)
    out = optimize(g, "all", disabled=["fuse_activation"], verify=True)
    assert counts(out) == {"linear": 1, "relu": 1}
    with pytest.raises(om.OneModelError, match="no_such_pass"):
        optimize(g, "all", disabled=["no_such_pass"])
    with pytest.raises(om.OneModelError, match="'fast'"):
        optimize(g, "fast")


def test_fixed_point_and_plugin_passes(registered):
    seen = []

    def spy(graph):
        seen.append(len(graph.nodes))
        return graph

    class Plugin:
        @hookimpl
        def onemodel_passes(self):
            return (PassDef(name="spy_pass", level="basic", run=spy, order=1000),)

    registered(Plugin(), "pass-spy")
    optimize(traced(_model, 4), "basic")
    assert len(seen) >= 2 and seen[-1] == seen[-2]  # rounds repeat until nothing changes


def test_a_broken_pass_is_named(registered):
    class Plugin:
        @hookimpl
        def onemodel_passes(self):
            return (PassDef(name="broken_pass", level="basic", run=lambda g: g.replace(
                nodes=g.nodes[1:])),)

    registered(Plugin(), "pass-broken")
    with pytest.raises(PassError, match="broken_pass"):
        optimize(traced(_model, 4), "basic", verify=True)
