"""The Session contract (docs/guide/sessions.md): construction, feeds checked before anything
runs, read-only outputs that own their memory, threads, context managers, errors."""
from __future__ import annotations

import threading
from collections.abc import Mapping

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.core.graph import GraphBuilder, Node
from onemodel.core.interpreter import NodeExecutionError, run_graph
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType
from onemodel.registry import OpDef, Sample, hookimpl

from .session_models import feed, mlp, trace

B = Dim.symbol("batch")
S = Dim.symbol("seq")


@pytest.fixture(scope="module")
def traced():
    fn, shape = mlp((4, 8, 3))
    return trace(fn, shape)


def two_input_graph():
    """inputs a: f32[batch, seq], b: f32[batch, 2]; outputs sum, a_copy (the input itself),
    view (a reshape of a buffer) and twin (the same value as sum)."""
    gb = GraphBuilder()
    gb.add_input("a", TensorType(DType.F32, (B, S)))
    gb.add_input("b", TensorType(DType.F32, (B, 2)))
    s, = gb.add_node("sum", ["a"], [TensorType(DType.F32, (B, 1))], {"axis": -1, "keepdims": True})
    t, = gb.add_node("mul", [s.name, "b"], [TensorType(DType.F32, (B, 2))])
    r, = gb.add_node("relu", [t.name], [TensorType(DType.F32, (B, 2))])
    v, = gb.add_node("reshape", [r.name], [TensorType(DType.F32, (B * 2,))], {"shape": (B * 2,)})
    return gb.finish([("sum", r.name), ("a_copy", "a"), ("view", v.name), ("twin", r.name)])


def test_construct_from_graph_traced_and_path_errors(traced, tmp_path):
    x = feed((4,), 5)
    ref = run_graph(traced.graph, {"input": x})["output"]
    for model in (traced, traced.graph):
        out = om.Session(model).run({"input": x})
        np.testing.assert_allclose(out["output"].numpy(), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        om.Session(tmp_path / "nothing-here.onemodel")
    with pytest.raises(om.OneModelError, match="int"):
        om.Session(42)


def test_value_infos(traced):
    s = om.Session(traced)
    assert s.inputs == [om.ValueInfo("input", DType.F32, ("batch", 4))]
    assert s.outputs == [om.ValueInfo("output", DType.F32, ("batch", 3))]
    info = s.inputs[0]
    assert isinstance(info.dtype, DType) and info.shape == ("batch", 4)
    with pytest.raises(AttributeError):
        info.name = "other"  # frozen


def test_unknown_backend_and_level_name_the_installed_ones(traced):
    assert "numpy" in om.backends()
    with pytest.raises(om.OneModelError, match=r"'cuda'.*numpy"):
        om.Session(traced, backend="cuda")
    with pytest.raises(om.OneModelError, match=r"'max'.*'none', 'basic', 'all'"):
        om.Session(traced, optimization="max")
    with pytest.raises(om.OneModelError, match="unknown_pass"):
        om.Session(traced, disabled=["unknown_pass"])


@pytest.mark.parametrize("feeds,match", [
    ({}, r"missing input 'input'"),
    ({"input": feed((4,), 2), "extra": feed((4,), 2)}, r"unknown input 'extra'"),
    ({"input": feed((4,), 2).astype(np.float64)}, r"input 'input': expected dtype f32, got f64"),
    ({"input": feed((4, 1), 2)}, r"input 'input': expected rank 2 \[batch, 4\], got shape"),
    ({"input": feed((5,), 2)}, r"input 'input' axis 1: expected size 4"),
    ({"input": [[1.0] * 4]}, r"input 'input' must be a Tensor or a numpy array"),
])
def test_wrong_feeds(traced, feeds, match):
    s = om.Session(traced)
    with pytest.raises(om.SessionError, match=match) as info:
        s.run(feeds)
    assert isinstance(info.value, ValueError) and isinstance(info.value, om.OneModelError)


def test_symbolic_name_bound_to_two_sizes():
    s = om.Session(two_input_graph())
    with pytest.raises(om.SessionError, match=r"input 'b' axis 0: symbolic size 'batch' is 4 "
                                              r"here but 3 at input 'a' axis 0"):
        s.run({"a": feed((5,), 3), "b": feed((2,), 4)})


def test_feeds_are_checked_before_anything_runs(registered):
    calls = []

    def kernel(x):
        calls.append(1)
        return x

    op = OpDef(name="session_test_spy", inputs=("x",), kernel=kernel,
               infer=lambda x: x, vjp=None, samples=lambda rng: [Sample(args=(np.ones(2),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered(Plugin(), "session-test-spy")
    gb = GraphBuilder()
    gb.add_input("a", TensorType(DType.F32, (B, 2)))
    gb.add_input("b", TensorType(DType.F32, (B,)))
    y, = gb.add_node("session_test_spy", ["a"], [TensorType(DType.F32, (B, 2))])
    s = om.Session(gb.finish([("y", y.name), ("b", "b")]))
    with pytest.raises(om.SessionError, match="input 'b'"):
        s.run({"a": feed((2,), 3), "b": feed((), 3).astype(np.int64)})
    assert calls == []


def test_outputs_are_a_read_only_mapping_of_tensors(traced):
    s = om.Session(traced)
    out = s.run({"input": Tensor.from_numpy(feed((4,), 2))})
    assert isinstance(out, Mapping) and isinstance(out, om.SessionOutputs)
    assert list(out) == ["output"] and len(out) == 1
    assert isinstance(out["output"], Tensor) and out["output"].shape == (2, 3)
    with pytest.raises(TypeError):
        out["output"] = out["output"]  # type: ignore[index]
    with pytest.raises(KeyError, match="no output 'nope'"):
        out["nope"]


def test_output_names_subset_and_unknown_output():
    s = om.Session(two_input_graph())
    feeds = {"a": feed((5,), 3), "b": feed((2,), 3)}
    ref = run_graph(s.optimized_graph, feeds)
    out = s.run(feeds, output_names=["view"])
    assert list(out) == ["view"]
    np.testing.assert_allclose(out["view"].numpy(), ref["view"], rtol=1e-6)
    with pytest.raises(om.SessionError, match=r"unknown output 'nope'.*'sum', 'a_copy'"):
        s.run(feeds, output_names=["nope"])


@pytest.mark.parametrize("level", ["none", "basic", "all"])
def test_outputs_never_alias_buffers_feeds_or_each_other(level):
    s = om.Session(two_input_graph(), optimization=level)
    a, b = feed((5,), 3), feed((2,), 3)
    first = s.run({"a": a, "b": b})
    arrays = [t.numpy() for t in first.values()]
    for i, x in enumerate(arrays):
        assert not np.shares_memory(x, a) and not np.shares_memory(x, b)
        for y in arrays[i + 1:]:
            assert not np.shares_memory(x, y)
    kept = {k: v.numpy().copy() for k, v in first.items()}
    second = s.run({"a": a * 10, "b": b * 10})  # a second run must not overwrite the first
    for k, v in first.items():
        np.testing.assert_array_equal(v.numpy(), kept[k])
    assert not np.allclose(second["sum"].numpy(), kept["sum"])


def test_run_from_eight_threads(traced):
    s = om.Session(traced)
    inputs = [feed((4,), n + 1, seed=n) for n in range(8)]
    expected = [run_graph(traced.graph, {"input": x})["output"] for x in inputs]
    errors, barrier = [], threading.Barrier(8)

    def work(i):
        try:
            barrier.wait()
            for _ in range(50):
                got = s.run({"input": inputs[i]})["output"].numpy()
                np.testing.assert_allclose(got, expected[i], rtol=1e-5, atol=1e-6)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_context_managers_and_close(traced):
    with om.Session(traced) as s:
        with s.run({"input": feed((4,), 2)}) as out:
            assert out["output"].shape == (2, 3)
        assert len(out) == 0  # closed outputs drop their tensors
    assert s.closed
    with pytest.raises(om.SessionError, match="closed"):
        s.run({"input": feed((4,), 2)})


def test_optimized_graph_and_levels(traced):
    none = om.Session(traced, optimization="none")
    assert none.optimized_graph is traced.graph
    fused = om.Session(traced, optimization="all").optimized_graph
    assert "fused_linear" in fused.op_counts()
    fused.verify()


def test_kernel_errors_name_the_node(registered):
    def kernel(x):
        raise RuntimeError("boom")

    op = OpDef(name="session_test_boom", inputs=("x",), kernel=kernel, infer=lambda x: x,
               vjp=None, samples=lambda rng: [Sample(args=(np.ones(2),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered(Plugin(), "session-test-boom")
    gb = GraphBuilder()
    gb.add_input("x", TensorType(DType.F32, (B,)))
    r, = gb.add_node("relu", ["x"], [TensorType(DType.F32, (B,))])
    gb.nodes.append(Node("session_test_boom", (r.name,), ("boom_out",), {}, "model.py:42"))
    gb.values["boom_out"] = om.core.graph.Value("boom_out", TensorType(DType.F32, (B,)))
    s = om.Session(gb.finish([("y", "boom_out")]))
    with pytest.raises(NodeExecutionError, match=r"session_test_boom -> %boom_out.*model.py:42.*"
                                                 r"RuntimeError: boom"):
        s.run({"x": feed((), 3)})


def test_third_party_op_runs_with_no_backend_code(registered):
    op = OpDef(name="session_test_square", inputs=("x",), kernel=lambda x: x * x,
               infer=lambda x: x, vjp=None, samples=lambda rng: [Sample(args=(np.ones(2),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered(Plugin(), "session-test-square")
    gb = GraphBuilder()
    gb.add_input("x", TensorType(DType.F32, (B,)))
    y, = gb.add_node("session_test_square", ["x"], [TensorType(DType.F32, (B,))])
    s = om.Session(gb.finish([("y", y.name)]))
    x = feed((), 4)
    np.testing.assert_allclose(s.run({"x": x})["y"].numpy(), x * x)


def test_plans_are_cached_per_shape_signature(traced):
    s = om.Session(traced, backend="numpy")  # the numpy plan's source
    s.run({"input": feed((4,), 2)})
    s.run({"input": feed((4,), 2)})
    s.run({"input": feed((4,), 7)})
    assert len(s._compiled._plans) == 2
    assert "def run(feeds):" in s.plan_source({"input": feed((4,), 2)})


def test_session_from_a_path(tmp_path):
    import onemodel as om
    from onemodel import DType, Tensor

    traced = om.trace(lambda x: (x * 2.0).relu(), Tensor.randn(DType.F32, 4, 3), "batch", None)
    traced.save(tmp_path / "m.onemodel")
    traced.save_onnx(tmp_path / "m.onnx")
    x = Tensor.randn(DType.F32, 6, 3)
    for name in ("m.onemodel", "m.onnx"):
        with om.Session(tmp_path / name) as session:
            assert session.inputs[0].shape == ("batch", 3)
            np.testing.assert_allclose(session.run({"input": x})["output"].numpy(), traced(x).numpy())
    with pytest.raises(FileNotFoundError) as info:
        om.Session(tmp_path / "missing.onemodel")
    assert info.value.filename.endswith("missing.onemodel")
