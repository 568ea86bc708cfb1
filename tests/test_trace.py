"""Tracing: symbolic sizes, the trace rules, input validation, Tracer and the trace check."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor, TraceException


def ex(*shape, seed=0):
    return Tensor.randn(DType.F32, *shape, seed=seed)


def assert_same_at_sizes(traced, fn, shape_fn, sizes=(2, 5, 17), dtype=np.float32):
    for n in sizes:
        x = Tensor.from_numpy(np.random.default_rng(n).standard_normal(shape_fn(n)).astype(dtype))
        np.testing.assert_allclose(traced(x).numpy(), fn(x).numpy(), rtol=1e-5, atol=1e-6)


def test_reshape_with_symbolic_batch():
    fn = lambda x: x.reshape(x.shape[0], -1)  # noqa: E731
    traced = om.trace(fn, ex(4, 3, 2), "batch", None, None)
    assert "batch" in str(traced.graph)
    assert_same_at_sizes(traced, fn, lambda n: (n, 3, 2))


def test_shape_arithmetic_is_recorded():
    fn = lambda x: x.reshape(x.shape[0], x.shape[1] * 2, -1)  # noqa: E731
    traced = om.trace(fn, ex(4, 3, 2), None, "seq", None)
    assert "seq*2" in str(traced.graph)
    assert_same_at_sizes(traced, fn, lambda n: (4, n, 2))


def test_slicing_with_symbolic_bounds():
    fn = lambda x: x[: x.shape[0] - 1, 1:]  # noqa: E731
    traced = om.trace(fn, ex(4, 3), "batch", None)
    assert "batch - 1" in str(traced.graph)
    assert_same_at_sizes(traced, fn, lambda n: (n, 3))


def test_plain_int_equal_to_example_size_is_a_constant():
    fn = lambda x: x.reshape(4, -1)  # noqa: E731
    # the eager function itself only works where batch*6 divides by 4, so the check is off
    traced = om.trace(fn, ex(4, 3, 2), "batch", None, None, check=False)
    assert "reshape(%input){shape=(4, -1)}" in str(traced.graph)
    x = Tensor.from_numpy(np.arange(48, dtype=np.float32).reshape(8, 3, 2))
    np.testing.assert_array_equal(traced(x).numpy(), x.numpy().reshape(4, -1))


def test_factory_inside_trace_takes_symbolic_shape():
    fn = lambda x: x + Tensor.ones(DType.F32, x.shape[0], 1)  # noqa: E731
    traced = om.trace(fn, ex(4, 3), "batch", None)
    assert_same_at_sizes(traced, fn, lambda n: (n, 3))


def test_loop_over_symbolic_size_is_refused():
    def fn(x):
        for _ in range(x.shape[0]):
            x = x + 1
        return x

    with pytest.raises(TraceException, match="batch") as info:
        om.trace(fn, ex(4, 3), "batch", None)
    assert "test_trace.py" in str(info.value)


@pytest.mark.parametrize("convert", [int, bool, lambda n: n > 3, lambda n: n == 4])
def test_converting_a_symbolic_size_is_refused(convert):
    def fn(x):
        convert(x.shape[0])
        return x

    with pytest.raises(TraceException, match="batch"):
        om.trace(fn, ex(4, 3), "batch", None)


@pytest.mark.parametrize("what,call", [
    ("Tensor.numpy", lambda x: x.numpy()),
    ("Tensor.item", lambda x: x.sum().item()),
    ("Tensor.tolist", lambda x: x.tolist()),
    ("Tensor.__bool__", lambda x: bool(x.sum())),
    ("Tensor.__float__", lambda x: float(x.sum())),
    ("Tensor.__int__", lambda x: int(x.sum())),
])
def test_reading_data_is_refused(what, call):
    def fn(x):
        call(x)
        return x

    with pytest.raises(TraceException, match=what.replace(".", r"\.")) as info:
        om.trace(fn, ex(4, 3), "batch", None)
    assert "test_trace.py" in str(info.value)


def test_in_place_is_refused():
    def fn(x):
        y = x + 1
        y.add_(1)
        return y

    with pytest.raises(TraceException, match=r"Tensor\.add_"):
        om.trace(fn, ex(4, 3), "batch", None)


def test_no_grad_is_refused():
    def fn(x):
        with om.GradMode.no_grad():
            return x + 1

    with pytest.raises(TraceException, match=r"GradMode\.no_grad"):
        om.trace(fn, ex(4, 3), "batch", None)


def test_random_factory_is_refused():
    with pytest.raises(TraceException, match=r"Tensor\.randn"):
        om.trace(lambda x: x + Tensor.randn(DType.F32, 3), ex(4, 3), "batch", None)


@pytest.mark.parametrize("op,call", [
    ("ops.mse_loss", lambda x: om.ops.mse_loss(x, x)),
    ("ops.cross_entropy", lambda x: om.ops.cross_entropy(x, om.tensor([0, 1, 2, 0]))),
    ("ops.dropout", lambda x: om.ops.dropout(x, 0.5, True)),
    ("ops.ctc_loss", lambda x: om.ops.ctc_loss(
        om.ops.log_softmax(x.reshape(4, 1, 3), -1), om.tensor([[1]]), om.tensor([4]),
        om.tensor([1]))),
])
def test_untraceable_ops_are_refused(op, call):
    with pytest.raises(TraceException, match=op.replace(".", r"\.")):
        om.trace(lambda x: call(x), ex(4, 3), "batch", None)


def test_dropout_in_eval_mode_traces():
    traced = om.trace(lambda x: om.ops.dropout(x, 0.5, False), ex(4, 3), "batch", None)
    x = ex(6, 3, seed=3)
    np.testing.assert_array_equal(traced(x).numpy(), x.numpy())


def test_example_size_one_is_refused_with_a_suggestion():
    with pytest.raises(TraceException, match="at least 2"):
        om.trace(lambda x: x, ex(1, 3), "batch", None)


def test_example_size_equal_to_other_axis_is_refused():
    with pytest.raises(TraceException, match="(?i)use an example of size 4"):
        om.trace(lambda x: x, ex(3, 3), "batch", None)


def test_one_name_one_size():
    a, b = ex(4, 3), ex(5, 3)
    with om.Tracer() as tracer:
        tracer.input("a", a, "batch", None)
        with pytest.raises(TraceException, match="one name must have one size"):
            tracer.input("b", b, "batch", None)


def test_wrong_number_of_axis_names():
    with pytest.raises(TraceException, match="2 axes"):
        om.trace(lambda x: x, ex(4, 3), "batch")


def test_tracer_with_several_inputs_and_outputs():
    tokens, mask = ex(4, 6), ex(4, 3, seed=1)
    with om.Tracer() as tracer:
        a = tracer.input("tokens", tokens, "batch", "seq")
        m = tracer.input("mask", mask, "batch", None)
        tracer.output("sum", a.sum(axis=1))
        tracer.output("scaled", m * 2.0)
        traced = tracer.finish()
    assert traced.input_names == ["tokens", "mask"]
    assert traced.output_names == ["sum", "scaled"]
    s, sc = traced(ex(7, 9, seed=2), ex(7, 3, seed=5))
    assert s.shape == (7,) and sc.shape == (7, 3)


def test_constant_used_twice_is_one_initializer():
    w = ex(3, seed=9)
    traced = om.trace(lambda x: (x + w) * w, ex(4, 3), "batch", None)
    arrays = [a for a in traced.graph.initializers.values() if a.shape == (3,)]
    assert len(arrays) == 1


def test_fixed_bound_equal_to_the_example_batch_is_a_constant():
    # x[:, :4] on a fixed axis of size 10 takes 4 columns at every batch size, even when the
    # example's batch is 4 too
    fn = lambda x: x[:, :4] * 2.0  # noqa: E731
    traced = om.trace(fn, ex(4, 10), "batch", None)
    assert traced.graph.output_value("output").shape[1] == 4
    assert_same_at_sizes(traced, fn, lambda n: (n, 10))


def test_refusal_names_the_int_that_equals_an_axis():
    # a literal 4 where the batch was meant: the function runs only at the example batch
    with pytest.raises(TraceException, match=r"ops\.reshape") as info:
        om.trace(lambda x: x.reshape(4, 3, 2) * 2.0, ex(4, 3, 2), "batch", None, None)
    text = str(info.value)
    assert "the int 4 passed to ops.reshape at" in text and "test_trace.py" in text
    assert "axis 'batch'" in text and "x.shape" in text


def test_failed_trace_leaves_no_active_tracer():
    from onemodel.core import tracing_hooks

    with pytest.raises(TraceException):
        om.trace(lambda x: x.numpy(), ex(4, 3), "batch", None)
    assert tracing_hooks.current() is None
    with pytest.raises(ZeroDivisionError):
        with om.Tracer() as tracer:
            tracer.input("a", ex(4, 3), "batch", None)
            1 / 0
    assert tracing_hooks.current() is None


def test_check_can_be_skipped():
    traced = om.trace(lambda x: x[:, :4] * 2.0, ex(4, 10), "batch", None, check=False)
    assert traced.graph.nodes


def test_constant_with_example_batch_shape_is_refused():
    mask = Tensor.ones(DType.F32, 4, 3)
    with pytest.raises(TraceException, match="ops.mul"):
        om.trace(lambda x: x * mask, ex(4, 3), "batch", None)


def test_printed_graph_is_stable():
    w = Tensor.from_list([1.0, 2.0, 3.0], 3)
    fn = lambda x: (x * w).relu()  # noqa: E731
    a = str(om.trace(fn, ex(4, 3), "batch", None).graph)
    b = str(om.trace(fn, ex(4, 3, seed=7), "batch", None).graph)
    assert a == b
    assert a.splitlines()[0] == "graph (%input: f32[batch,3]) {"
    assert "%output: f32[batch,3] = relu(" in a


def test_graph_verify_catches_problems():
    from onemodel.core.graph import Node

    g = om.trace(lambda x: (x + 1.0).relu(), ex(4, 3), "batch", None).graph
    g.verify()
    broken = g.replace(nodes=tuple(reversed(g.nodes)))
    with pytest.raises(om.GraphError, match="before it is defined"):
        broken.verify()
    unknown = g.replace(nodes=g.nodes[:-1] + (Node("no_such_op", g.nodes[-1].inputs, g.nodes[-1].outputs),))
    with pytest.raises(om.GraphError, match="no_such_op"):
        unknown.verify()


def test_unused_recorded_work_is_pruned():
    def fn(x):
        Tensor.zeros(DType.F32, x.shape[0], 3)  # made and never used
        unused = x * 3.0  # noqa: F841
        return x + 1.0

    traced = om.trace(fn, ex(4, 3), "batch", None)
    assert [n.op for n in traced.graph.nodes] == ["add"]
    with om.Tracer() as tracer:
        t = tracer.input("input", ex(4, 3), "batch", None)
        t * 2.0
        tracer.output("output", t + 1.0)
        traced = tracer.finish()
    assert [n.op for n in traced.graph.nodes] == ["add"]
