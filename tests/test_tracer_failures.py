"""A Tracer used without a `with` block (as API.md shows it) leaves the thread as it was before
whenever one of its own methods fails (issue 22): grad mode back on, no trace recording, the
next trace starting cleanly, and the Tracer saying why if it is used again."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor, TraceException
from onemodel.core import tracing_hooks

F32 = DType.F32


def randn(*shape, seed=0):
    return Tensor.randn(F32, *shape, seed=seed)


def assert_thread_is_clean():
    assert tracing_hooks.current() is None               # first: a read below would abort it
    assert om.GradMode.is_enabled()
    x = randn(2, 3)
    x.numpy()
    w = randn(3, 3).requires_grad_()
    (x @ w).sum().backward()
    assert w.grad is not None
    again = om.trace(lambda v: v * 2.0 + 1.0, Tensor.zeros(F32, 4, 3), "batch", None)
    np.testing.assert_allclose(again(Tensor.ones(F32, 5, 3)).numpy(), np.full((5, 3), 3.0))


def started():
    """A Tracer recording one input, as API.md's example starts."""
    tracer = om.Tracer()
    x = tracer.input("x", randn(4, 3), "batch", None)
    assert tracing_hooks.current() is tracer and not om.GradMode.is_enabled()
    return tracer, x


INPUT_FAILURES = {
    # the reported case: a fixed axis equal to the first input's symbolic size
    "fixed_axis_equal_to_symbolic": lambda t, x: t.input("m", randn(2, 4), None, None),
    "symbolic_axis_equal_to_other": lambda t, x: t.input("m", randn(3, 5), "seq", None),
    "one_name_two_sizes": lambda t, x: t.input("m", randn(5, 3), "batch", None),
    "size_one_symbolic": lambda t, x: t.input("m", randn(4, 1), "batch", "seq"),
    "name_used_twice": lambda t, x: t.input("x", randn(4, 3), "batch", None),
    "empty_name": lambda t, x: t.input("", randn(4, 3), "batch", None),
    "not_an_example": lambda t, x: t.input("m", [1.0, 2.0], None),
    "unsupported_dtype": lambda t, x: t.input("m", np.zeros((4, 3), np.complex64), "batch", None),
    "wrong_axis_count": lambda t, x: t.input("m", randn(4, 3), "batch"),
    "bad_axis_name": lambda t, x: t.input("m", randn(4, 3), "batch", "for"),
}

OUTPUT_FAILURES = {
    "not_a_tensor": lambda t, x: t.output("y", 3.0),
    "empty_name": lambda t, x: t.output("", x * 2.0),
    "name_used_twice": lambda t, x: (t.output("y", x * 2.0), t.output("y", x + 1.0)),
    "random_constant": lambda t, x: t.output("y", Tensor.randn(F32, 4, 3, seed=3)),
}


def finish_without_outputs(t, x):
    t.finish()


def finish_after_a_constant_changed(t, x):
    w = randn(3, 3, seed=2)
    t.output("y", x @ w)
    with tracing_hooks.suspended():
        w.add_(1.0)                                      # module state changed mid-trace
    t.finish()


FINISH_FAILURES = {"no_outputs": finish_without_outputs,
                   "constant_changed": finish_after_a_constant_changed}

ALL = {f"input-{k}": v for k, v in INPUT_FAILURES.items()}
ALL.update({f"output-{k}": v for k, v in OUTPUT_FAILURES.items()})
ALL.update({f"finish-{k}": v for k, v in FINISH_FAILURES.items()})


@pytest.mark.parametrize("case", sorted(ALL))
def test_a_failing_tracer_method_leaves_the_thread_as_it_was(case):
    tracer, x = started()
    with pytest.raises(om.OneModelError):
        ALL[case](tracer, x)
    assert_thread_is_clean()
    with pytest.raises(TraceException, match="aborted by an earlier error|has finished"):
        tracer.output("z", x)
    with pytest.raises(TraceException, match="aborted by an earlier error|has finished"):
        tracer.finish()


@pytest.mark.parametrize("case", sorted(INPUT_FAILURES))
def test_a_refused_input_names_itself_when_the_tracer_is_used_again(case):
    tracer, x = started()
    with pytest.raises(om.OneModelError) as info:
        INPUT_FAILURES[case](tracer, x)
    with pytest.raises(TraceException, match="aborted by an earlier error") as again:
        tracer.input("later", randn(4, 3), "batch", None)
    assert str(info.value)[:40] in str(again.value)


def test_a_refused_first_input_leaves_nothing_recording():
    tracer = om.Tracer()
    with pytest.raises(TraceException):
        tracer.input("x", randn(4, 3), "batch", "batch")  # one name, two sizes
    assert_thread_is_clean()


def test_the_reported_sequence_then_another_trace():
    tracer = om.Tracer()
    tracer.input("tokens", randn(4, 6), "batch", "seq")
    with pytest.raises(TraceException, match="the same as axis"):
        tracer.input("mask", Tensor.ones(F32, 2, 4), None, None)
    assert om.GradMode.is_enabled()
    assert randn(2, 2).numpy().shape == (2, 2)           # eager reads work again
    traced = om.trace(lambda v: v + 1.0, randn(4, 3), "batch", None)
    assert traced(randn(6, 3)).shape == (6, 3)


def test_another_thread_misusing_the_tracer_does_not_abort_it():
    import threading

    tracer, x = started()
    errors = []

    def other():
        try:
            tracer.output("y", x)
        except TraceException as exc:
            errors.append(str(exc))

    th = threading.Thread(target=other)
    th.start()
    th.join()
    assert errors and "thread" in errors[0]
    assert tracing_hooks.current() is tracer             # still recording here
    tracer.output("y", x * 2.0)
    assert tracer.finish().graph.nodes
    assert_thread_is_clean()
