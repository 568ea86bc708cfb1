"""ONNX's MaxUnpool imported as full + scatter + reshape, against ONNX Runtime on every
backend: after MaxPool's Indices (strides and pads), 1-D with indices fed as data and a
constant output_shape, and over a symbolic batch; output_shape fed at run time is refused by name."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError, from_onnx  # noqa: E402

F, I64 = TP.FLOAT, TP.INT64
rng = np.random.default_rng(3)


def _pool_unpool(x_shape, kernel, strides, pads, output_shape=None):
    nodes = [h.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=kernel, strides=strides,
                         pads=pads)]
    ins = ["p", "i"]
    inits = []
    if output_shape is not None:
        inits.append(onnx.numpy_helper.from_array(np.array(output_shape, np.int64), "os"))
        ins.append("os")
    nodes.append(h.make_node("MaxUnpool", ins, ["y"], kernel_shape=kernel, strides=strides,
                             pads=pads))
    return h.make_model(h.make_graph(nodes, "g", [h.make_tensor_value_info("x", F, x_shape)],
                                     [h.make_empty_tensor_value_info("y")], initializer=inits),
                        opset_imports=[h.make_opsetid("", 12)])


def _check(model, xs):
    sess_ort = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    graph = from_onnx(model)
    assert "scatter" in graph.op_counts()
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            for x in xs:
                want = sess_ort.run(None, {"x": x})[0]
                got = sess.run({"x": x})["y"].numpy()
                assert got.shape == want.shape, (backend, got.shape, want.shape)
                np.testing.assert_array_equal(got, want, err_msg=backend)


def _x(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("kernel,strides,pads,shape", [
    ([2, 2], [2, 2], [0, 0, 0, 0], None),  # ONNX's default output shape: 6 x 4
    ([3, 2], [2, 1], [1, 0, 1, 1], [2, 3, 6, 4])])  # the input's shape
def test_max_unpool_2d_after_max_pool(kernel, strides, pads, shape):
    _check(_pool_unpool([2, 3, 6, 4], kernel, strides, pads, shape), [_x(2, 3, 6, 4)])


def test_max_unpool_1d_with_a_constant_output_shape():
    """Indices fed as data (any distinct flat positions), output_shape an initializer."""
    node = h.make_node("MaxUnpool", ["x", "i", "os"], ["y"], kernel_shape=[2], strides=[2])
    m = h.make_model(h.make_graph(
        [node], "g", [h.make_tensor_value_info("x", F, [1, 2, 3]),
                      h.make_tensor_value_info("i", I64, [1, 2, 3])],
        [h.make_empty_tensor_value_info("y")],
        initializer=[onnx.numpy_helper.from_array(np.array([1, 2, 7], np.int64), "os")]),
        opset_imports=[h.make_opsetid("", 12)])
    sess_ort = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    graph = from_onnx(m)
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            for seed in (0, 1):
                feeds = {"x": _x(1, 2, 3), "i": np.random.default_rng(seed).permutation(14)[
                    :6].reshape(1, 2, 3).astype(np.int64)}
                np.testing.assert_array_equal(sess.run(feeds)["y"].numpy(),
                                              sess_ort.run(None, feeds)[0], err_msg=backend)


def test_max_unpool_over_a_symbolic_batch():
    """ONNX's default output shape with a symbolic batch: one session at two batch sizes."""
    node = h.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    m = h.make_model(h.make_graph(
        [node], "g", [h.make_tensor_value_info("x", F, ["b", 1, 2, 2]),
                      h.make_tensor_value_info("i", I64, ["b", 1, 2, 2])],
        [h.make_empty_tensor_value_info("y")]), opset_imports=[h.make_opsetid("", 12)])
    sess_ort = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    graph = from_onnx(m)
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            for b in (1, 3):
                i = (np.arange(b)[:, None] * 16 + np.array([5, 6, 8, 15])).reshape(b, 1, 2, 2)
                feeds = {"x": _x(b, 1, 2, 2), "i": i.astype(np.int64)}
                got = sess.run(feeds)["y"].numpy()
                want = sess_ort.run(None, feeds)[0]
                assert got.shape == want.shape == (b, 1, 4, 4)
                np.testing.assert_array_equal(got, want, err_msg=backend)


def test_max_unpool_output_shape_fed_at_run_time_is_refused():
    node = h.make_node("MaxUnpool", ["x", "i", "os"], ["y"], kernel_shape=[2, 2],
                       strides=[2, 2])
    m = h.make_model(h.make_graph([node], "g", [h.make_tensor_value_info("x", F, [1, 1, 2, 2]),
                                                h.make_tensor_value_info("i", I64, [1, 1, 2, 2]),
                                                h.make_tensor_value_info("os", I64, [4])],
                                  [h.make_empty_tensor_value_info("y")]),
                     opset_imports=[h.make_opsetid("", 12)])
    with pytest.raises(OnnxUnsupportedError, match="output_shape fed at run time"):
        from_onnx(m)
