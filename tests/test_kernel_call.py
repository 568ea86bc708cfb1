"""One check of a kernel's result against its op's inferred types (`core.kernel_call`), the same
in every place that runs an op's own kernel: eager dispatch, the reference interpreter, each
backend's plan (numpy, threaded, compiled's numpy fallback), `DynamicPlan`, constant folding
and the compiled backend's per-signature folding. A kernel that returns the wrong shape or rank
is an error naming the op (and, in a graph, the node); a wrong dtype is cast, everywhere."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.core.graph import GraphBuilder, Node, Value
from onemodel.core.interpreter import NodeExecutionError, run_graph
from onemodel.core.kernel_call import (FOLD_MAX_BYTES, KernelOutputError, OutputCheck,
                                       check_outputs, fold_fits)
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType
from onemodel.passes.constant_folding import fold_constants
from onemodel.registry import OpDef, Sample, hookimpl

F32 = DType.F32
B = Dim.symbol("batch")


# -- the rule itself ---------------------------------------------------------------------------
def test_a_right_result_passes_and_a_bare_or_one_tuple_result_are_the_same():
    t = TensorType(F32, (2, 3))
    a = np.ones((2, 3), np.float32)
    assert check_outputs(a, [t], "x")[0] is a
    assert check_outputs((a,), [t], "x")[0] is a


def test_another_dtype_is_cast_and_junk_is_an_error_naming_op_and_plugin():
    t = TensorType(F32, (2,))
    out, = check_outputs(np.arange(2.0), [t], "x")
    assert out.dtype == np.float32 and out.tolist() == [0.0, 1.0]
    with pytest.raises(KernelOutputError, match=r"ops\.x: the kernel of plugin p returned str"):
        check_outputs("text", [t], "x", "p")


@pytest.mark.parametrize("out,match", [
    (np.ones(6, np.float32), r"returned shape \(6,\).*rank 1, not 2"),
    (np.ones((2, 4), np.float32), r"returned shape \(2, 4\).*axis 1 is 4, not 3"),
    ((np.ones((2, 3)), np.ones(1)), "returned 2 outputs, inference 1"),
])
def test_wrong_count_rank_or_size_is_an_error_saying_what_differed(out, match):
    with pytest.raises(KernelOutputError, match=match):
        check_outputs(out, [TensorType(F32, (2, 3))], "x", "p")
    assert issubclass(KernelOutputError, om.OpError)


def test_symbolic_sizes_are_evaluated_bound_once_and_then_agree():
    n, k = Dim.symbol("n"), Dim.symbol("k")
    env = {"n": 2}
    check_outputs(np.ones((2, 4)), [TensorType(F32, (n, n * 2))], "x", env=env)
    with pytest.raises(KernelOutputError, match="axis 1 is 5, not 2\\*n = 4|axis 1 is 5"):
        check_outputs(np.ones((2, 5)), [TensorType(F32, (n, n * 2))], "x", env={"n": 2})
    # k is a data size: the first result decides it, a second one must agree
    env = {}
    check_outputs((np.ones(5), np.ones(5)), [TensorType(F32, (k,)), TensorType(F32, (k,))],
                  "x", env=env)
    assert env == {"k": 5}
    with pytest.raises(KernelOutputError, match="axis 0 is 4"):
        check_outputs((np.ones(5), np.ones(4)), [TensorType(F32, (k,)), TensorType(F32, (k,))],
                      "x")
    with pytest.raises(KernelOutputError, match="nothing decided"):
        check_outputs(np.ones(6), [TensorType(F32, (k * 2,))], "x")


def test_output_check_returns_the_array_of_a_one_output_op():
    chk = OutputCheck([TensorType(F32, (2,))], "x")
    assert chk(np.ones(2, np.float64)).dtype == np.float32
    two = OutputCheck([TensorType(F32, (2,)), TensorType(F32, ())], "x")
    assert [a.shape for a in two((np.ones(2), 1.0))] == [(2,), ()]


def test_the_one_folding_limit_is_in_bytes_over_all_outputs():
    big = FOLD_MAX_BYTES // 4
    assert fold_fits([TensorType(F32, (big,))])
    assert not fold_fits([TensorType(F32, (big + 1,))])
    assert not fold_fits([TensorType(F32, (big,)), TensorType(F32, (1,))])
    assert not fold_fits([TensorType(F32, (B,))])  # a symbolic size: depends on the feeds
    assert fold_fits([TensorType(F32, (2 * big,))], held=8 * big)  # no more than it is made of


# -- every site that runs an op's own kernel ---------------------------------------------------
def _plugin(*ops):
    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return list(ops)

    return Plugin()


def _op(name, kernel):
    return OpDef(name=name, inputs=("x",), kernel=kernel, infer=lambda x: x, vjp=None,
                 samples=lambda rng: [Sample(args=(np.ones(2, np.float32),))])


KERNELS = {
    "shape": (lambda x: np.zeros(x.size + 1, np.float32), r"returned shape \(7,\)"),
    "rank": (lambda x: x.reshape(-1), r"returned shape \(6,\).*rank 1, not 2"),
    "count": (lambda x: (x, x), "returned 2 outputs, inference 1"),
}


@pytest.fixture(params=sorted(KERNELS))
def bad_op(request, registered):
    kernel, match = KERNELS[request.param]
    name = f"seam_bad_{request.param}"
    registered(_plugin(_op(name, kernel)), "seam-bad-plugin")
    return name, match


@pytest.fixture
def f64_op(registered):
    """An op whose kernel returns float64 for float32: cast to float32 everywhere."""
    registered(_plugin(_op("seam_f64", lambda x: x.astype(np.float64) + 1.0)), "seam-f64")
    return "seam_f64"


def _graph(op_name, const=False):
    """x -> relu -> op_name -> y (recorded at model.py:42); with ``const`` the op reads a
    constant instead, and y is its result plus x."""
    gb = GraphBuilder()
    gb.add_input("x", TensorType(F32, (2, 3)))
    src = "x"
    if const:
        src = gb.add_initializer("c", np.arange(6, dtype=np.float32).reshape(2, 3)).name
    r, = gb.add_node("relu", [src], [TensorType(F32, (2, 3))])
    gb.nodes.append(Node(op_name, (r.name,), ("seam_out",), {}, "model.py:42"))
    gb.values["seam_out"] = Value("seam_out", TensorType(F32, (2, 3)))
    if const:
        y, = gb.add_node("add", ["seam_out", "x"], [TensorType(F32, (2, 3))])
        return gb.finish([("y", y.name)])
    return gb.finish([("y", "seam_out")])


FEEDS = {"x": np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0}


def _names_the_node(info, match):
    err = info.value
    assert isinstance(err, NodeExecutionError)
    assert "seam_bad" in str(err) and "%seam_out" in str(err) and "model.py:42" in str(err)
    assert isinstance(err.__cause__, KernelOutputError), err.__cause__
    assert "seam-bad-plugin" in str(err.__cause__)
    import re
    assert re.search(match, str(err.__cause__)), str(err.__cause__)


def test_eager(bad_op):
    name, match = bad_op
    with pytest.raises(KernelOutputError, match=match) as info:
        getattr(om.ops, name)(Tensor.from_numpy(FEEDS["x"]))
    assert "seam-bad-plugin" in str(info.value)


def test_interpreter(bad_op):
    name, match = bad_op
    with pytest.raises(NodeExecutionError) as info:
        run_graph(_graph(name), FEEDS)
    _names_the_node(info, match)


@pytest.mark.parametrize("backend", om.backends())
def test_every_backend(bad_op, backend):
    name, match = bad_op
    s = om.Session(_graph(name), backend=backend, optimization="none")
    with pytest.raises(NodeExecutionError) as info:
        s.run(FEEDS)
    _names_the_node(info, match)


def test_dynamic_plan_binds_a_data_size_once(registered):
    """Two nodes sizing their results by the same data size ``k``: the second kernel's result
    must agree with the size the first one decided."""
    registered(_plugin(_op("seam_five", lambda x: np.ones(5, np.float32)),
                       _op("seam_four", lambda x: np.ones(4, np.float32))), "seam-bad-plugin")
    k = Dim.symbol("k")
    gb = GraphBuilder()
    gb.add_input("x", TensorType(F32, (2, 3)))
    gb.nodes.append(Node("seam_five", ("x",), ("a",), {}, "model.py:41"))
    gb.values["a"] = Value("a", TensorType(F32, (k,)))
    gb.nodes.append(Node("seam_four", ("x",), ("seam_out",), {}, "model.py:42"))
    gb.values["seam_out"] = Value("seam_out", TensorType(F32, (k,)))
    graph = gb.finish([("y", "seam_out"), ("a", "a")])
    with pytest.raises(NodeExecutionError) as info:
        run_graph(graph, FEEDS)
    assert "seam_four" in str(info.value) and "model.py:42" in str(info.value)
    assert isinstance(info.value.__cause__, KernelOutputError)
    assert "axis 0 is 4, not k = 5" in str(info.value.__cause__)


def test_constant_folding_leaves_a_bad_node_to_fail_at_run_time(bad_op):
    name, match = bad_op
    graph = _graph(name, const=True)
    folded = fold_constants(graph)
    assert "relu" not in folded.op_counts()      # relu of the constant folds
    assert folded.op_counts()[name] == 1         # the bad node stays a node
    with pytest.raises(NodeExecutionError) as info:
        om.Session(graph, backend="numpy").run(FEEDS)
    _names_the_node(info, match)


@pytest.mark.parametrize("backend", om.backends())
def test_folding_on_every_backend_leaves_a_bad_node_to_fail(bad_op, backend):
    """With the passes off, a backend that folds (compiled, per signature) must not fold it."""
    name, match = bad_op
    s = om.Session(_graph(name, const=True), backend=backend, optimization="none")
    with pytest.raises(NodeExecutionError) as info:
        s.run(FEEDS)
    _names_the_node(info, match)


@pytest.mark.parametrize("backend", om.backends())
@pytest.mark.parametrize("const", [False, True])
@pytest.mark.parametrize("optimization", ["none", "all"])
def test_a_wrong_dtype_is_cast_everywhere(f64_op, backend, const, optimization):
    graph = _graph(f64_op, const)
    x = FEEDS["x"]
    base = np.arange(6, dtype=np.float32).reshape(2, 3) if const else x
    want = np.maximum(base, 0) + 1.0 + (x if const else 0)
    got = om.Session(graph, backend=backend, optimization=optimization).run(FEEDS)["y"]
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want)
    ref = run_graph(graph, FEEDS)["y"]
    assert ref.dtype == np.float32
    np.testing.assert_allclose(ref, want)
    eager = om.ops.seam_f64(Tensor.from_numpy(x))
    assert eager.dtype == F32
