"""ONNX import of RoiAlign (issue 25) as standard ops: every backend against ONNX Runtime and
onnx's reference evaluator (a direct loop over the spec's bilinear rule)."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError, from_onnx  # noqa: E402

rng = np.random.default_rng(5)


def _model(**attrs):
    node = h.make_node("RoiAlign", ["x", "rois", "b"], ["y"], **attrs)
    return h.make_model(h.make_graph(
        [node], "g", [h.make_tensor_value_info("x", TP.FLOAT, [2, 3, 9, 11]),
                      h.make_tensor_value_info("rois", TP.FLOAT, [4, 4]),
                      h.make_tensor_value_info("b", TP.INT64, [4])],
        [h.make_empty_tensor_value_info("y")]), opset_imports=[h.make_opsetid("", 16)])


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio,scale", [(2, 1.0), (3, 0.5)])
def test_roi_align(mode, ctm, ratio, scale):
    m = _model(mode=mode, coordinate_transformation_mode=ctm, output_height=3, output_width=4,
               sampling_ratio=ratio, spatial_scale=scale)
    x = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    # regions inside, across the edge, outside by more than a pixel, and malformed (x2 < x1)
    rois = np.array([[1, 1, 7, 6], [-3, 2, 14, 12], [20, 20, 30, 25], [5, 4, 3, 4.5]],
                    np.float32) / scale
    b = np.array([0, 1, 1, 0], np.int64)
    feeds = {"x": x, "rois": rois, "b": b}
    refs = [ReferenceEvaluator(m).run(None, feeds)[0]]
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    refs.append(sess.run(None, feeds)[0])
    graph = from_onnx(m)
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            got = sess.run(feeds)["y"].numpy()
            for want in refs:
                assert got.shape == want.shape == (4, 3, 3, 4) and got.dtype == want.dtype
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=backend)


def test_roi_align_adaptive_sampling_is_refused():
    with pytest.raises(OnnxUnsupportedError, match="sampling_ratio 0"):
        from_onnx(_model(sampling_ratio=0))
