"""A 0-d integer tensor as a size (issue 22), as in PyTorch: accepted eagerly wherever a shape
is taken; while tracing, a size computed from a traced tensor's values is data-dependent and
refused with a TraceException naming the argument, why, and what to write instead."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor, TraceException
from onemodel.core import tracing_hooks

F32, I64 = DType.F32, DType.I64


def randn(*shape, seed=0):
    return Tensor.randn(F32, *shape, seed=seed)


def lengths():
    return Tensor.from_numpy(np.array([2, 1, 3], np.int64))


# -- eager: accepted as a size anywhere a shape is taken -------------------------------------------
def test_reshape_and_view_take_a_0d_int_tensor_among_separate_sizes():
    x = randn(6, 2)
    n = lengths().sum()                                     # 0-d i64 tensor, value 6
    assert n.shape == ()
    ref = x.numpy().reshape(6, -1)
    np.testing.assert_array_equal(x.reshape(n, -1).numpy(), ref)
    np.testing.assert_array_equal(x.reshape((n, -1)).numpy(), ref)
    np.testing.assert_array_equal(x.reshape(-1, Tensor.from_numpy(np.array(3))).numpy(),
                                  x.numpy().reshape(-1, 3))
    np.testing.assert_array_equal(om.ops.reshape(x, (n, 2)).numpy(), ref)
    if hasattr(x, "view"):
        np.testing.assert_array_equal(x.view(n, -1).numpy(), ref)


def test_expand_and_factories_take_a_0d_int_tensor():
    n = Tensor.from_numpy(np.array(4, np.int32))
    x = randn(1, 3)
    np.testing.assert_array_equal(x.expand(n, 3).numpy(), np.broadcast_to(x.numpy(), (4, 3)))
    assert Tensor.zeros(F32, n, 2).shape == (4, 2)
    assert Tensor.ones(F32, (n, 2)).shape == (4, 2)
    assert Tensor.full(F32, 0.5, 2, n).numpy().tolist() == [[0.5] * 4] * 2


@pytest.mark.parametrize("bad,why", [
    (lambda: Tensor.from_numpy(np.array([6], np.int64)), r"0-d"),
    (lambda: Tensor.from_numpy(np.array(6.0, np.float32)), r"integer"),
    (lambda: Tensor.from_numpy(np.array(True)), r"integer"),
])
def test_other_tensors_as_sizes_are_refused_by_name(bad, why):
    x = randn(6, 2)
    with pytest.raises(om.OneModelError, match=rf"shape\[0\].*{why}"):
        x.reshape(bad(), -1)
    with pytest.raises(om.OneModelError, match=why):
        Tensor.zeros(F32, bad(), 2)


def test_a_negative_size_tensor_in_a_factory_is_refused():
    with pytest.raises(om.OneModelError, match="non-negative"):
        Tensor.zeros(F32, Tensor.from_numpy(np.array(-2)), 2)


# -- the arity message ------------------------------------------------------------------------------
def test_separate_sizes_to_the_op_name_the_shape_as_one_argument():
    x = randn(6, 2)
    with pytest.raises(om.OneModelError, match=r"ops\.reshape\(\) takes 2 arguments.*got 3.*"
                                               r"one tuple") as info:
        om.ops.reshape(x, lengths().sum(), -1)
    assert "shape" in str(info.value)


# -- while tracing: data-dependent ------------------------------------------------------------------
def test_a_size_from_a_traced_tensors_values_is_refused_with_why_and_what_to_do():
    def fn(x, lens):
        return x.reshape(lens.sum(), -1)

    with pytest.raises(TraceException) as info:
        om.trace(fn, {"x": (randn(6, 2), "rows", None), "lens": (lengths(), "n")})
    text = str(info.value)
    assert "shape[0]" in text and "ops.reshape" in text           # the argument
    assert "values" in text and "not on its shape" in text        # why
    assert "x.shape[" in text                                     # what to do
    assert "test_size_tensors.py" in text                         # the user's line
    assert "takes 2 arguments" not in text
    assert tracing_hooks.current() is None and om.GradMode.is_enabled()


@pytest.mark.parametrize("use", ["expand", "zeros", "full_op"])
def test_every_shape_taker_refuses_a_data_dependent_size_while_tracing(use):
    def fn(x):
        n = (x > 0).sum()                                         # depends on the values
        if use == "expand":
            return x[:1].expand(n, 3)
        if use == "zeros":
            return Tensor.zeros(F32, n, 3) + x.sum()
        return om.ops.full((n, 3), 1.0, dtype="f32") + x.sum()

    with pytest.raises(TraceException, match=r"depends on the input's values"):
        om.trace(fn, randn(4, 3), "batch", None)
    assert tracing_hooks.current() is None


def test_a_constant_size_tensor_from_outside_the_trace_is_a_constant():
    n = Tensor.from_numpy(np.array(3, np.int64))                  # made before tracing

    def fn(x):
        return x.reshape(x.shape[0], n, -1)

    traced = om.trace(fn, randn(4, 6), "batch", None)
    x = randn(5, 6, seed=2)
    np.testing.assert_array_equal(traced(x).numpy(), x.numpy().reshape(5, 3, 2))


def test_shape_derived_sizes_still_trace():
    def fn(x):
        return x.reshape(x.shape[0] * x.shape[1], -1)

    traced = om.trace(fn, randn(4, 3, 2), "batch", None, None)
    assert traced(randn(7, 3, 2)).shape == (21, 2)
