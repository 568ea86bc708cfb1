"""ONNX's deprecated Upsample imported as ``resize`` against ONNX Runtime on every backend:
scales as the attribute (opset 7-8), as a constant input and fed at run time (opset 9, one
session at two scales), nearest and linear."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError, from_onnx  # noqa: E402

F = TP.FLOAT
rng = np.random.default_rng(5)


def _model(opset, mode, scales=None, scales_input=False, initializer=None):
    ins = ["x", "scales"] if scales_input else ["x"]
    attrs = {"mode": mode} if scales is None else {"mode": mode, "scales": scales}
    node = h.make_node("Upsample", ins, ["y"], **attrs)
    inputs = [h.make_tensor_value_info("x", F, [1, 2, 3, 4])]
    inits = []
    if scales_input and initializer is None:
        inputs.append(h.make_tensor_value_info("scales", F, [4]))
    elif scales_input:
        inits.append(onnx.numpy_helper.from_array(np.array(initializer, np.float32), "scales"))
    return h.make_model(h.make_graph([node], "g", inputs, [h.make_empty_tensor_value_info("y")],
                                     initializer=inits),
                        opset_imports=[h.make_opsetid("", opset)])


def _check(model, feed_sets):
    sess_ort = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    graph = from_onnx(model)
    assert "resize" in graph.op_counts()
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            for feeds in feed_sets:
                want = sess_ort.run(None, feeds)[0]
                got = sess.run(feeds)["y"].numpy()
                assert got.shape == want.shape, (backend, got.shape, want.shape)
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=backend)


def _x():
    return rng.standard_normal((1, 2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_scales_attribute_opset_7(mode):
    _check(_model(7, mode, scales=[1.0, 1.0, 2.0, 1.5]), [{"x": _x()}])


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_constant_scales_opset_9(mode):
    _check(_model(9, mode, scales_input=True, initializer=[1.0, 1.0, 2.0, 3.0]), [{"x": _x()}])


def test_upsample_scales_fed_at_run_time():
    x = _x()
    _check(_model(9, "nearest", scales_input=True),
           [{"x": x, "scales": np.array([1, 1, 2, 3], np.float32)},
            {"x": x, "scales": np.array([1, 1, 3, 2], np.float32)}])


def test_upsample_mode_is_named_when_refused():
    with pytest.raises(OnnxUnsupportedError, match="mode='cubic'"):
        from_onnx(_model(9, "cubic", scales_input=True, initializer=[1, 1, 2, 2]))
