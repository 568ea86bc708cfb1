"""ONNX import of more of ONNX's node-test ops (issue 25): the bitwise ops, Tile / OneHot /
CenterCropPad / the windows with their sizes fed at run time (``sized_from_data``), ScatterND
and ScatterElements with every reduction, Det, LpPool, LRN, ReverseSequence and MaxPool's
Indices output. Each model runs on every backend against ONNX Runtime; where a size is data,
one session runs it at two values."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError, from_onnx  # noqa: E402

F, I64, I32, U8 = TP.FLOAT, TP.INT64, TP.INT32, TP.UINT8


def _model(node, inputs, opset=21):
    return h.make_model(h.make_graph([node], "g", [h.make_tensor_value_info(n, t, s)
                                                   for n, t, s in inputs],
                                     [h.make_empty_tensor_value_info(o) for o in node.output]),
                        opset_imports=[h.make_opsetid("", opset)])


def _check(model, feed_sets, rtol=1e-5, atol=1e-6):
    sess_ort = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    graph = from_onnx(model)
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            for feeds in feed_sets:
                want = sess_ort.run(None, feeds)
                got = sess.run(feeds)
                for (name, _), w in zip(graph.outputs, want):
                    g = got[name].numpy()
                    assert g.shape == w.shape and g.dtype == w.dtype, (backend, name, g.shape,
                                                                       w.shape)
                    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=backend)
    return graph


rng = np.random.default_rng(7)


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype,code", [(np.int32, I32), (np.uint8, U8), (np.int64, I64)])
def test_bitwise_binary(op, dtype, code):
    m = _model(h.make_node(op, ["a", "b"], ["y"]), [("a", code, [3, 4]), ("b", code, [4])])
    lo, hi = (0, 256) if dtype == np.uint8 else (-1000, 1000)
    _check(m, [{"a": rng.integers(lo, hi, (3, 4)).astype(dtype),
                "b": rng.integers(lo, hi, (4,)).astype(dtype)}])


def test_bitwise_not():
    m = _model(h.make_node("BitwiseNot", ["a"], ["y"]), [("a", I32, [5])])
    _check(m, [{"a": np.array([0, -1, 7, 2**31 - 1, -2**31], np.int32)}])


def test_tile_repeats_fed_at_run_time():
    m = _model(h.make_node("Tile", ["x", "r"], ["y"]), [("x", F, [2, 3]), ("r", I64, [2])])
    x = rng.standard_normal((2, 3)).astype(np.float32)
    _check(m, [{"x": x, "r": np.array([2, 1], np.int64)},
               {"x": x, "r": np.array([1, 3], np.int64)}])


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_depth_fed_at_run_time(axis):
    """Negative indices count from the end; an index out of range is all 'off'."""
    m = _model(h.make_node("OneHot", ["i", "d", "v"], ["y"], axis=axis),
               [("i", I64, [2, 3]), ("d", I64, []), ("v", F, [2])])
    i = np.array([[0, -1, 2], [5, 1, -3]], np.int64)
    v = np.array([-1.0, 3.0], np.float32)
    _check(m, [{"i": i, "d": np.array(3, np.int64), "v": v},
               {"i": i, "d": np.array(6, np.int64), "v": v}])


def test_center_crop_pad_shape_fed_at_run_time():
    m = _model(h.make_node("CenterCropPad", ["x", "s"], ["y"], axes=[0, -1]),
               [("x", F, [5, 2, 4]), ("s", I64, [2])])
    x = rng.standard_normal((5, 2, 4)).astype(np.float32)
    _check(m, [{"x": x, "s": np.array([2, 7], np.int64)},
               {"x": x, "s": np.array([8, 1], np.int64)}])


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows_size_fed_at_run_time(op, periodic):
    m = _model(h.make_node(op, ["n"], ["y"], periodic=periodic), [("n", I64, [])])
    _check(m, [{"n": np.array(10, np.int64)}, {"n": np.array(3, np.int64)}], atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(reduction):
    m = _model(h.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction),
               [("x", F, [4, 3]), ("i", I64, [3, 1]), ("u", F, [3, 3])])
    i = np.array([[1], [-1], [1]] if reduction != "none" else [[1], [-1], [0]], np.int64)
    _check(m, [{"x": rng.standard_normal((4, 3)).astype(np.float32), "i": i,
                "u": rng.standard_normal((3, 3)).astype(np.float32)}])


@pytest.mark.parametrize("reduction", ["mul", "max", "min"])
def test_scatter_elements_reductions(reduction):
    m = _model(h.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1,
                           reduction=reduction),
               [("x", F, [2, 4]), ("i", I64, [2, 3]), ("u", F, [2, 3])])
    _check(m, [{"x": rng.standard_normal((2, 4)).astype(np.float32),
                "i": np.array([[0, 3, 0], [-1, 2, 2]], np.int64),
                "u": rng.standard_normal((2, 3)).astype(np.float32)}])


def test_det():
    m = _model(h.make_node("Det", ["x"], ["y"]), [("x", F, [2, 3, 3])])
    _check(m, [{"x": rng.standard_normal((2, 3, 3)).astype(np.float32)}], rtol=1e-4)


@pytest.mark.parametrize("attrs", [dict(kernel_shape=[3, 3], p=3, pads=[1, 0, 1, 2]),
                                   dict(kernel_shape=[2, 2], p=2, strides=[2, 2]),
                                   dict(kernel_shape=[2, 2], p=1, auto_pad="SAME_UPPER")])
def test_lp_pool_on_symbolic_sizes(attrs):
    m = _model(h.make_node("LpPool", ["x"], ["y"], **attrs), [("x", F, [1, 2, "h", "w"])])
    _check(m, [{"x": rng.standard_normal((1, 2, 6, 7)).astype(np.float32)},
               {"x": rng.standard_normal((1, 2, 5, 4)).astype(np.float32)}], rtol=1e-4)


@pytest.mark.parametrize("size", [1, 3, 5])  # ONNX Runtime takes odd sizes only
def test_lrn(size):
    m = _model(h.make_node("LRN", ["x"], ["y"], size=size, alpha=0.3, beta=0.6, bias=1.5),
               [("x", F, [2, 4, 3, 3])])
    _check(m, [{"x": rng.standard_normal((2, 4, 3, 3)).astype(np.float32)}], rtol=1e-4)


@pytest.mark.parametrize("batch_axis,time_axis", [(0, 1), (1, 0)])
def test_reverse_sequence(batch_axis, time_axis):
    m = _model(h.make_node("ReverseSequence", ["x", "n"], ["y"], batch_axis=batch_axis,
                           time_axis=time_axis), [("x", F, [4, 4, 2]), ("n", I64, [4])])
    _check(m, [{"x": rng.standard_normal((4, 4, 2)).astype(np.float32),
                "n": np.array([4, 1, 0, 3], np.int64)}])


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices(storage_order):
    m = _model(h.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 3], strides=[2, 1],
                           pads=[1, 1, 0, 1], storage_order=storage_order),
               [("x", F, [2, 3, 5, 4])])
    _check(m, [{"x": rng.standard_normal((2, 3, 5, 4)).astype(np.float32)}])


def test_refusals_name_the_reason():
    m = _model(h.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="median"),
               [("x", F, [4]), ("i", I64, [1, 1]), ("u", F, [1])])
    with pytest.raises(OnnxUnsupportedError, match="ScatterND with reduction 'median'"):
        from_onnx(m)
    m = _model(h.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2]),
               [("x", F, [1, 2, 6])])
    with pytest.raises(OnnxUnsupportedError, match="MaxPool with an Indices output"):
        from_onnx(m)


@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression(center):
    """Two batches, two classes; one session runs two limits (two output lengths)."""
    m = _model(h.make_node("NonMaxSuppression", ["b", "s", "k", "iou", "t"], ["y"],
                           center_point_box=center),
               [("b", F, [2, 6, 4]), ("s", F, [2, 2, 6]), ("k", I64, [1]), ("iou", F, [1]),
                ("t", F, [1])])
    boxes = rng.uniform(0, 3, (2, 6, 4)).astype(np.float32)
    boxes[..., 2:] += 1.0 if center else boxes[..., :2]  # positive sizes, or wider corners
    scores = rng.uniform(0, 1, (2, 2, 6)).astype(np.float32)
    feeds = {"b": boxes, "s": scores, "iou": np.array([0.3], np.float32),
             "t": np.array([0.2], np.float32)}
    _check(m, [{**feeds, "k": np.array([3], np.int64)}, {**feeds, "k": np.array([1], np.int64)}])


@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid_size_fed_at_run_time(align_corners):
    m = _model(h.make_node("AffineGrid", ["t", "s"], ["y"], align_corners=align_corners),
               [("t", F, [2, 2, 3]), ("s", I64, [4])])
    theta = rng.standard_normal((2, 2, 3)).astype(np.float32)
    _check(m, [{"t": theta, "s": np.array([2, 3, 4, 5], np.int64)},
               {"t": theta, "s": np.array([2, 1, 3, 2], np.int64)}])


@pytest.mark.parametrize("attrs", [dict(direction="bidirectional", activations=["Relu", "Tanh"]),
                                   dict(direction="reverse", clip=0.5),
                                   dict(activations=["Sigmoid"])])  # layout 1: node tests
def test_simple_rnn(attrs):
    """ONNX's RNN with a bias and an initial state, unrolled over 4 steps."""
    d = 2 if attrs.get("direction") == "bidirectional" else 1
    layout = attrs.get("layout", 0)
    xs, hs = ([3, 4, 2], [3, d, 5]) if layout else ([4, 3, 2], [d, 3, 5])
    m = _model(h.make_node("RNN", ["x", "w", "r", "b", "", "h0"], ["y", "yh"], hidden_size=5,
                           **attrs),
               [("x", F, xs), ("w", F, [d, 5, 2]), ("r", F, [d, 5, 5]), ("b", F, [d, 10]),
                ("h0", F, hs)])
    feeds = {"x": rng.standard_normal(xs), "w": rng.standard_normal((d, 5, 2)),
             "r": rng.standard_normal((d, 5, 5)) * 0.5, "b": rng.standard_normal((d, 10)),
             "h0": rng.standard_normal(hs)}
    _check(m, [{k: v.astype(np.float32) for k, v in feeds.items()}], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_against_onnx_reference(mode):
    """A KV-cache write at per-batch indices (opset 24: checked against onnx's reference
    evaluator); the circular one wraps past the cache's end."""
    from onnx.reference import ReferenceEvaluator

    m = _model(h.make_node("TensorScatter", ["c", "u", "w"], ["y"], mode=mode, axis=2),
               [("c", F, [2, 3, 6, 4]), ("u", F, [2, 3, 3, 4]), ("w", I64, [2])], opset=24)
    graph = from_onnx(m)
    feeds = {"c": rng.standard_normal((2, 3, 6, 4)).astype(np.float32),
             "u": rng.standard_normal((2, 3, 3, 4)).astype(np.float32),
             "w": np.array([1, 3] if mode == "linear" else [5, 2], np.int64)}
    (want,) = ReferenceEvaluator(m).run(None, feeds)
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            np.testing.assert_array_equal(sess.run(feeds)[graph.outputs[0][0]].numpy(), want,
                                          err_msg=backend)


@pytest.mark.parametrize("attrs", [dict(), dict(pads=[0, 1, 1, 0], strides=[2, 1]),
                                   dict(dilations=[2, 1])])
def test_col2im_shapes_fed_at_run_time(attrs):
    m = _model(h.make_node("Col2Im", ["x", "img", "blk"], ["y"], **attrs),
               [("x", F, [2, 12, "l"]), ("img", I64, [2]), ("blk", I64, [2])])
    s, p, d = attrs.get("strides", [1, 1]), attrs.get("pads", [0] * 4), attrs.get("dilations",
                                                                                   [1, 1])
    feeds = []
    for img in ([4, 5], [6, 4]):
        cols = [(img[i] + p[i] + p[i + 2] - d[i] * ([2, 3][i] - 1) - 1) // s[i] + 1
                for i in range(2)]
        feeds.append({"x": rng.standard_normal((2, 12, cols[0] * cols[1])).astype(np.float32),
                      "img": np.array(img, np.int64), "blk": np.array([2, 3], np.int64)})
    _check(m, feeds)
