"""PyTorch semantics of the shape, indexing, factory and product ops from issue 23 that the
generic tests do not pin down: torch's argument orders and spellings, in-place forms, symbolic
sizes, and errors that name the op and the argument."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.errors import OneModelError

ops = om.ops


def t(a, dtype=None):
    return Tensor.from_numpy(np.array(a, dtype=dtype))


def test_pad_counts_pairs_from_the_last_axis():
    x = t(np.arange(6.0).reshape(2, 3))
    assert ops.pad(x, (1, 0)).shape == (2, 4)
    assert ops.pad(x, (0, 0, 2, 1)).shape == (5, 3)
    assert ops.pad(x, (1, 1), mode="reflect").numpy()[0].tolist() == [1.0, 0.0, 1.0, 2.0, 1.0]
    assert ops.pad(x, (2, 0), mode="replicate").numpy()[1].tolist() == [3.0, 3.0, 3.0, 4.0, 5.0]
    assert ops.pad(x, (-1, 0)).numpy().tolist() == [[1.0, 2.0], [4.0, 5.0]]


def test_chunk_repeat_tile_roll_as_torch():
    x = t(np.arange(12.0).reshape(3, 4))
    assert [c.shape for c in x.chunk(3, dim=1)] == [(3, 2), (3, 2)]  # fewer pieces, as torch
    assert [c.shape for c in ops.chunk(t(np.zeros(5)), 2)] == [(3,), (2,)]
    assert x.repeat(2, 1, 1).shape == (2, 3, 4) and x.repeat((1, 2)).shape == (3, 8)
    assert x.tile((2,)).shape == (3, 8)
    assert x.roll(1).numpy().reshape(-1).tolist() == [11.0] + list(range(11))
    assert x.roll((1, -1), (0, 1)).numpy()[0].tolist() == [9.0, 10.0, 11.0, 8.0]
    assert x.flip(0, 1).numpy()[0].tolist() == [11.0, 10.0, 9.0, 8.0]
    assert x.movedim(1, 0).shape == (4, 3) and x.unflatten(1, (2, 2)).shape == (3, 2, 2)


def test_indexing_ops_take_torch_argument_order():
    x = t(np.arange(12.0).reshape(3, 4))
    assert x.index_select(1, t([3, 0])).numpy()[0].tolist() == [3.0, 0.0]
    assert ops.index_select(x, 0, t([2])).shape == (1, 4)
    assert x.narrow(1, 1, 2).numpy()[0].tolist() == [1.0, 2.0]
    assert x.narrow(0, -1, 1).numpy().tolist() == [[8.0, 9.0, 10.0, 11.0]]
    y = x.clone()
    y.masked_fill_(y > 5, -1.0)
    assert y.numpy()[2].tolist() == [-1.0] * 4 and x.numpy()[2, 0] == 8.0
    assert ops.one_hot(t([2, 0]), 3).numpy().tolist() == [[0, 0, 1], [1, 0, 0]]
    assert ops.one_hot(t([1]), num_classes=3).dtype == DType.I64


def test_factories_and_products():
    x = t(np.ones((2, 3), np.float32))
    assert ops.ones_like(x, dtype="i64").dtype == DType.I64
    assert ops.full_like(x, 7).numpy().tolist() == [[7.0] * 3] * 2
    np.testing.assert_allclose(ops.linspace(0, 1, 5).numpy(), [0, 0.25, 0.5, 0.75, 1.0])
    assert ops.linspace(0, 1, 5).dtype == DType.F32
    assert ops.outer(t([1.0, 2.0]), t([1.0, 0.0, -1.0])).numpy().tolist() == [
        [1.0, 0.0, -1.0], [2.0, 0.0, -2.0]]
    assert ops.bmm(t(np.ones((2, 3, 4))), t(np.ones((2, 4, 5)))).shape == (2, 3, 5)
    assert ops.stack([x, x], dim=-1).shape == (2, 3, 2) and len(x.unbind(1)) == 3


@pytest.mark.parametrize("call, words", [
    (lambda: ops.stack([t(np.zeros(2)), t(np.zeros(3))]), ["ops.stack", "shape"]),
    (lambda: ops.chunk(t(np.zeros(4)), 0), ["ops.chunk", "'chunks'"]),
    (lambda: ops.pad(t(np.zeros((2, 2))), (1,)), ["ops.pad", "'pad'"]),
    (lambda: ops.pad(t(np.zeros((2, 2))), (1, 1), mode="circular"), ["ops.pad", "'mode'"]),
    (lambda: ops.pad(t(np.zeros((2, 2))), (2, 0), mode="reflect"), ["ops.pad", "reflect"]),
    (lambda: ops.roll(t(np.zeros((2, 2))), (1, 2), 0), ["ops.roll", "'shifts'", "'axes'"]),
    (lambda: ops.repeat(t(np.zeros((2, 2))), (2,)), ["ops.repeat", "'sizes'"]),
    (lambda: ops.movedim(t(np.zeros((2, 2))), (0, 1), 0), ["ops.movedim", "'destination'"]),
    (lambda: ops.unflatten(t(np.zeros((2, 6))), 1, (4, -1)), ["ops.unflatten", "6"]),
    (lambda: ops.masked_fill(t(np.zeros(2)), t([1, 0]), 1.0), ["ops.masked_fill", "mask"]),
    (lambda: ops.index_select(t(np.zeros(3)), 0, t([[0]])), ["ops.index_select", "1-D"]),
    (lambda: ops.index_select(t(np.zeros(3)), 0, t([3])), ["ops.index_select", "range"]),
    (lambda: ops.narrow(t(np.zeros(3)), 0, 2, 2), ["ops.narrow", "start"]),
    (lambda: ops.one_hot(t([0, 3]), num_classes=3), ["ops.one_hot", "num_classes"]),
    (lambda: ops.one_hot(t([0.5]), 2), ["ops.one_hot", "integer"]),
    (lambda: ops.one_hot(t([0, 1]), -1), ["ops.one_hot", "'num_classes'", "x.max()"]),
    (lambda: ops.bmm(t(np.zeros((2, 2, 2))), t(np.zeros((3, 2, 2)))), ["ops.bmm", "batch"]),
    (lambda: ops.outer(t(np.zeros((2, 2))), t(np.zeros(2))), ["ops.outer", "1-D"]),
    (lambda: ops.linspace(0, 1, -1), ["ops.linspace", "'steps'"]),
])
def test_bad_arguments_name_the_op_and_the_argument(call, words):
    with pytest.raises(OneModelError) as info:
        call()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_symbolic_sizes_flow_through_inference():
    ex = Tensor.from_numpy(np.zeros((7, 3), np.float32))
    traced = om.trace(lambda x: ops.pad(x, (0, 0, 1, 1)), ex, "batch", None)
    assert str(traced.graph.values[traced.graph.outputs[0][1]].shape[0]) == "batch + 2"
    with pytest.raises(OneModelError, match="unbind.*symbolic size"):
        om.trace(lambda x: x.unbind(0), ex, "batch", None)
