"""ONNX import of 3-D pools (two 2-D pools), integer MaxPool (exactly through a float) and
ReduceMax/ReduceMin of bool tensors (any/all through u8), checked against ONNX Runtime or numpy
formulas on every backend."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_import import from_onnx  # noqa: E402

from .onnx_build import model, ort_run as _ort  # noqa: E402


def _model(nodes, inputs, outputs, inits=(), opset=19):
    return model(nodes, inputs, outputs, inits, opset=opset, ir_version=9)


def _run_all_backends(g, feeds):
    outs = {}
    for backend in om.backends():
        with om.Session(g, backend=backend) as s:
            outs[backend] = {k: v.numpy() for k, v in s.run(feeds).items()}
    return outs


POOLS_3D = [
    dict(kernel_shape=[2, 2, 2]),
    dict(kernel_shape=[3, 2, 3], strides=[2, 1, 2], pads=[1, 0, 1, 0, 1, 1]),
    dict(kernel_shape=[2, 3, 2], strides=[2, 2, 2], ceil_mode=1),
    dict(kernel_shape=[2, 2, 2], dilations=[2, 1, 2], pads=[1, 1, 0, 1, 0, 1]),
]


@pytest.mark.parametrize("attrs", POOLS_3D)
@pytest.mark.parametrize("op_type,include_pad", [("MaxPool", None), ("AveragePool", 0),
                                                 ("AveragePool", 1)])
def test_3d_pools_match_onnxruntime_at_two_batch_sizes(op_type, include_pad, attrs):
    attrs = dict(attrs)
    if include_pad is not None:
        attrs["count_include_pad"] = include_pad
    m = _model([helper.make_node(op_type, ["x"], ["y"], **attrs)],
               [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", 3, 7, 6, 9])],
               [helper.make_tensor_value_info("y", TP.FLOAT, [None] * 5)])
    g = from_onnx(m)
    assert all(n.op != "shape_from_data" for n in g.nodes)
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 7, 6, 9)).astype(np.float32)
        want = _ort(m, {"x": x})[0]
        for backend, out in _run_all_backends(g, {"x": x}).items():
            np.testing.assert_allclose(out["y"], want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{op_type} {attrs} on {backend}")


@pytest.mark.parametrize("onnx_type,np_type", [(TP.UINT8, np.uint8), (TP.INT8, np.int8)])
def test_integer_maxpool_is_exact(onnx_type, np_type):
    m = _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                 pads=[1, 1, 1, 1])],
               [helper.make_tensor_value_info("x", onnx_type, [2, 2, 7, 8])],
               [helper.make_tensor_value_info("y", onnx_type, [None] * 4)])
    info = np.iinfo(np_type)
    x = np.random.default_rng(0).integers(info.min, info.max, (2, 2, 7, 8), endpoint=True)
    x = x.astype(np_type)
    x[0, 0, 0, 0] = info.max  # extremes survive the float round trip
    x[1, 1, -1, -1] = info.min
    want = _ort(m, {"x": x})[0]
    for backend, out in _run_all_backends(from_onnx(m), {"x": x}).items():
        assert out["y"].dtype == np_type, backend
        np.testing.assert_array_equal(out["y"], want, err_msg=backend)


def test_integer_maxpool_whose_padding_holds_a_window_is_refused():
    m = _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2],
                                 pads=[2, 0, 0, 0])],
               [helper.make_tensor_value_info("x", TP.UINT8, [1, 1, 4, 4])],
               [helper.make_tensor_value_info("y", TP.UINT8, [None] * 4)])
    with pytest.raises(om.OneModelError, match="MaxPool.*padding can hold a whole window"):
        from_onnx(m)


@pytest.mark.parametrize("axes_at_run_time", [False, True])
@pytest.mark.parametrize("op_type,ref", [("ReduceMax", np.any), ("ReduceMin", np.all)])
def test_bool_reduce_max_min_are_any_all(op_type, ref, axes_at_run_time):
    axes = np.array([1], np.int64)
    inits = [] if axes_at_run_time else [onnx.numpy_helper.from_array(axes, "axes")]
    inputs = [helper.make_tensor_value_info("x", TP.BOOL, [4, 3, 2])]
    if axes_at_run_time:
        inputs.append(helper.make_tensor_value_info("axes", TP.INT64, [1]))
    m = _model([helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=0)], inputs,
               [helper.make_tensor_value_info("y", TP.BOOL, [None] * 2)], inits, opset=20)
    x = np.random.default_rng(1).random((4, 3, 2)) < 0.5
    x[0] = True
    x[1] = False
    feeds = {"x": x, "axes": axes} if axes_at_run_time else {"x": x}
    for backend, out in _run_all_backends(from_onnx(m), feeds).items():
        assert out["y"].dtype == np.bool_, backend
        np.testing.assert_array_equal(out["y"], ref(x, axis=1), err_msg=backend)


def test_bool_reduce_sum_is_still_refused_naming_the_op():
    m = _model([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)],
               [helper.make_tensor_value_info("x", TP.BOOL, [4, 3])],
               [helper.make_tensor_value_info("y", TP.BOOL, [None])], opset=13)
    with pytest.raises(om.OneModelError, match="ReduceSum of a bool tensor"):
        from_onnx(m)
