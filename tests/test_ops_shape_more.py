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
    (lambda: ops.pad(t(np.zeros((2, 2))), (1, 1), mode="wrap"), ["ops.pad", "'mode'"]),
    (lambda: ops.pad(t(np.zeros((2, 2))), (3, 0), mode="circular"), ["ops.pad", "circular",
                                                                     "wrap more than once"]),
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
    (lambda: ops.one_hot(t([0, 1]), -2), ["ops.one_hot", "'num_classes'", "-1"]),
    (lambda: ops.one_hot(t([0, -1])), ["ops.one_hot", ">= 0"]),
    (lambda: ops.bmm(t(np.zeros((2, 2, 2))), t(np.zeros((3, 2, 2)))), ["ops.bmm", "batch"]),
    (lambda: ops.outer(t(np.zeros((2, 2))), t(np.zeros(2))), ["ops.outer", "1-D"]),
    (lambda: ops.linspace(0, 1, -1), ["ops.linspace", "'steps'"]),
])
def test_bad_arguments_name_the_op_and_the_argument(call, words):
    with pytest.raises(OneModelError) as info:
        call()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_circular_pad_wraps_around_as_torch():
    x = t(np.arange(6.0).reshape(2, 3))
    assert ops.pad(x, (2, 1), mode="circular").numpy().tolist() == [
        [1.0, 2.0, 0.0, 1.0, 2.0, 0.0], [4.0, 5.0, 3.0, 4.0, 5.0, 3.0]]
    assert ops.pad(x, (0, 0, 1, 2), mode="circular").numpy()[:, 0].tolist() == [3, 0, 3, 0, 3]
    assert om.nn.functional.pad(x, (3, 3), "circular").shape == (2, 9)  # a whole axis, once


def test_circular_pad_gradient_sums_the_wrapped_copies():
    x = t(np.arange(3.0)).requires_grad_()
    ops.pad(x, (2, 1), mode="circular").sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]   # out = [1, 2, 0, 1, 2, 0]: each twice


def test_circular_pad_traces_with_a_symbolic_axis_and_exports():
    ex = Tensor.from_numpy(np.arange(12.0, dtype=np.float32).reshape(4, 3))
    fn = lambda x: ops.pad(x, (1, 2, 1, 0), mode="circular")  # noqa: E731
    traced = om.trace(fn, ex, "batch", None)
    x = Tensor.from_numpy(np.arange(18.0, dtype=np.float32).reshape(6, 3))
    want = np.pad(x.numpy(), ((1, 0), (1, 2)), mode="wrap")
    np.testing.assert_array_equal(traced(x).numpy(), want)
    ort = pytest.importorskip("onnxruntime")
    import tempfile, pathlib  # noqa: E401
    for opset in (17, 21):  # Concat of Slices below opset 19, Pad mode "wrap" from 19
        with tempfile.TemporaryDirectory() as d:
            path = str(pathlib.Path(d) / "pad.onnx")
            traced.save_onnx(path, opset=opset)
            got = ort.InferenceSession(path).run(None, {"input": x.numpy()})[0]
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(om.load_onnx(path)(x).numpy(), want)


def test_one_hot_reads_the_classes_from_the_data_eagerly():
    labels = t([2, 0, 1, 2])
    assert ops.one_hot(labels).numpy().tolist() == np.eye(3, dtype=np.int64)[[2, 0, 1, 2]].tolist()
    assert om.nn.functional.one_hot(labels, -1).shape == (4, 3)
    assert ops.one_hot(t(np.zeros(0, np.int64))).shape == (0, 0)
    with pytest.raises(om.TraceException, match=r"one_hot.*num_classes=-1"):
        om.trace(lambda x: ops.one_hot(x), t(np.array([0, 1, 2])), "n")
    traced = om.trace(lambda x: ops.one_hot(x, 4), t(np.array([0, 1, 3])), "n")
    assert traced(t([3, 3, 0, 1, 2])).numpy().argmax(-1).tolist() == [3, 3, 0, 1, 2]


def test_symbolic_sizes_flow_through_inference():
    ex = Tensor.from_numpy(np.zeros((7, 3), np.float32))
    traced = om.trace(lambda x: ops.pad(x, (0, 0, 1, 1)), ex, "batch", None)
    assert str(traced.graph.values[traced.graph.outputs[0][1]].shape[0]) == "batch + 2"
    with pytest.raises(OneModelError, match="unbind.*symbolic size"):
        om.trace(lambda x: x.unbind(0), ex, "batch", None)
