"""ONNX import of the ops other exporters write (issue 25): Resize in every mode, Pad's modes and
run-time pads, CumSum, ReduceSumSquare and the Reduce* with run-time axes, the quantized ops,
asymmetric and auto_pad convolution padding, ConvTranspose's output_shape and auto_pad. Each
model runs on every backend against ONNX Runtime, at two input sizes where an axis can be
symbolic; refusals name the op type and the reason."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError, from_onnx  # noqa: E402

F, I64, U8, I8 = TP.FLOAT, TP.INT64, TP.UINT8, TP.INT8
rng = np.random.default_rng(25)


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    global rng
    rng = np.random.default_rng(25)


def _model(nodes, inputs, outputs, inits=(), opset=21):
    nodes = nodes if isinstance(nodes, list) else [nodes]
    m = h.make_model(h.make_graph(nodes, "g", [h.make_tensor_value_info(n, t, s)
                                               for n, t, s in inputs],
                                  [h.make_empty_tensor_value_info(o) for o in outputs],
                                  initializer=[nh.from_array(np.asarray(v), k)
                                               for k, v in dict(inits).items()]),
                     opset_imports=[h.make_opsetid("", opset)])
    return m


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _reference(model, feeds):
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)


def _check(model, feed_sets, atol=1e-5, against=_ort):
    """Every backend against ONNX Runtime, or (``against=_reference``) onnx's reference
    evaluator where ONNX Runtime departs from the spec's arithmetic (its uint8 linear Resize
    rounds differently, its uint8 x int8 MatMulInteger saturates 16-bit partial sums)."""
    graph = from_onnx(model)
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            for feeds in feed_sets:
                want = against(model, feeds)
                got = sess.run(feeds)
                for (name, _), w in zip(graph.outputs, want):
                    g = got[name].numpy()
                    assert g.shape == w.shape and g.dtype == w.dtype, (backend, name, g.shape,
                                                                       w.shape, g.dtype)
                    if w.dtype.kind == "f":
                        np.testing.assert_allclose(g, w, rtol=1e-5, atol=atol,
                                                   err_msg=backend)
                    else:
                        np.testing.assert_array_equal(g, w, err_msg=backend)
    return graph


def _images(*shapes, dtype=np.float32):
    return [{"x": rng.standard_normal(s).astype(dtype)} for s in shapes]


# -- Resize -------------------------------------------------------------------------------------
@pytest.mark.parametrize("attrs", [
    dict(mode="nearest", coordinate_transformation_mode="half_pixel",
         nearest_mode="round_prefer_floor"),
    dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="ceil"),
    dict(mode="nearest", coordinate_transformation_mode="align_corners",
         nearest_mode="round_prefer_ceil"),
    dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric"),
    dict(mode="linear", coordinate_transformation_mode="asymmetric"),
    dict(mode="cubic", coordinate_transformation_mode="half_pixel"),
    dict(mode="cubic", coordinate_transformation_mode="align_corners", cubic_coeff_a=-0.5,
         exclude_outside=1),
])
def test_resize_constant_scales_on_a_symbolic_axis(attrs):
    """Scales 2 on symbolic height and width (a YOLO-style upsample): the output axes are
    h*2, w*2, and the file runs at two sizes."""
    m = _model(h.make_node("Resize", ["x", "", "s"], ["y"], **attrs),
               [("x", F, [1, 2, "h", "w"])], ["y"], {"s": np.array([1, 1, 2, 2], np.float32)})
    g = _check(m, _images((1, 2, 3, 4), (1, 2, 5, 2)))
    assert [str(d) for d in g.values[g.outputs[0][1]].type.shape] == ["1", "2", "h*2", "w*2"]


@pytest.mark.parametrize("attrs,scales", [
    (dict(mode="linear", antialias=1), [1, 1, 0.6, 0.5]),
    (dict(mode="cubic", antialias=1), [1, 1, 0.5, 0.75]),
    (dict(mode="nearest", coordinate_transformation_mode="pytorch_half_pixel"), [1, 1, 1.7, 0.6]),
])
def test_resize_fractional_scales_and_antialias(attrs, scales):
    m = _model(h.make_node("Resize", ["x", "", "s"], ["y"], **attrs), [("x", F, [2, 3, 8, 8])],
               ["y"], {"s": np.array(scales, np.float32)})
    _check(m, _images((2, 3, 8, 8)))


def test_resize_sizes_axes_and_keep_aspect_ratio():
    for policy in ("not_larger", "not_smaller"):
        m = _model(h.make_node("Resize", ["x", "", "", "z"], ["y"], mode="linear", axes=[3, 2],
                               keep_aspect_ratio_policy=policy),
                   [("x", F, [1, 2, 4, 6])], ["y"], {"z": np.array([9, 5], np.int64)})
        _check(m, _images((1, 2, 4, 6)))


def test_resize_tf_crop_and_resize_extrapolates():
    m = _model(h.make_node("Resize", ["x", "roi", "", "z"], ["y"], mode="linear",
                           coordinate_transformation_mode="tf_crop_and_resize",
                           extrapolation_value=10.0),
               [("x", F, [1, 1, 4, 4])], ["y"],
               {"roi": np.array([0, 0, 0.4, -0.2, 1, 1, 1.3, 0.8], np.float32),
                "z": np.array([1, 1, 3, 5], np.int64)})
    _check(m, _images((1, 1, 4, 4)))


def test_resize_scales_fed_at_run_time_and_uint8():
    m = _model(h.make_node("Resize", ["x", "", "s"], ["y"], mode="linear"),
               [("x", U8, [1, 1, 3, 4]), ("s", F, [4])], ["y"])
    x = rng.integers(0, 256, (1, 1, 3, 4)).astype(np.uint8)
    g = _check(m, [{"x": x, "s": np.array([1, 1, 2, 1.5], np.float32)},
                   {"x": x, "s": np.array([1, 1, 0.7, 3], np.float32)}], against=_reference)
    assert [n.op for n in g.nodes] == ["resize"]


def test_resize_round_trips_through_export():
    from onemodel.formats.onnx_export import to_onnx

    m = _model(h.make_node("Resize", ["x", "", "s"], ["y"], mode="cubic",
                           coordinate_transformation_mode="asymmetric"),
               [("x", F, [1, 2, "h", 5])], ["y"], {"s": np.array([1, 1, 3, 0.6], np.float32)})
    back = to_onnx(from_onnx(m))
    for feeds in _images((1, 2, 3, 5), (1, 2, 4, 5)):
        np.testing.assert_allclose(_ort(back, feeds)[0], _ort(m, feeds)[0], rtol=1e-6)


def test_resize_refusals_name_the_reason():
    m = _model(h.make_node("Resize", ["x", "s"], ["y"]), [("x", F, [1, 1, 2, 2])], ["y"],
               {"s": np.array([1, 1, 2, 2], np.float32)}, opset=10)
    with pytest.raises(OnnxUnsupportedError, match="Resize-10"):
        from_onnx(m)


# -- Pad ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes_with_pads_fed_at_run_time(mode):
    m = _model(h.make_node("Pad", ["x", "p"], ["y"], mode=mode),
               [("x", F, [3, 4]), ("p", I64, [4])], ["y"])
    x = rng.standard_normal((3, 4)).astype(np.float32)
    second = [0, 3, 1, -1] if mode != "reflect" else [2, 0, 1, -1]
    _check(m, [{"x": x, "p": np.array([1, 2, 2, 0])}, {"x": x, "p": np.array(second)}])


def test_pad_wrap_with_constant_pads_and_axes():
    m = _model(h.make_node("Pad", ["x", "p", "", "a"], ["y"], mode="wrap"),
               [("x", F, [2, 3, 4])], ["y"], {"p": np.array([2, 1, 0, 3]),
                                              "a": np.array([1, -1])})
    g = _check(m, _images((2, 3, 4)))
    assert g.values[g.outputs[0][1]].type.shape == (2, 5, 8)


def test_pad_constant_value_fed_at_run_time():
    m = _model(h.make_node("Pad", ["x", "p", "v"], ["y"]),
               [("x", F, [2, 3]), ("v", F, [])], ["y"], {"p": np.array([0, 1, 1, 2])})
    x = rng.standard_normal((2, 3)).astype(np.float32)
    _check(m, [{"x": x, "v": np.array(2.5, np.float32)}, {"x": x, "v": np.array(-1, np.float32)}])


# -- CumSum / Reduce* ---------------------------------------------------------------------------
@pytest.mark.parametrize("exclusive,reverse", [(0, 1), (1, 0), (1, 1)])
def test_cumsum_exclusive_reverse(exclusive, reverse):
    m = _model(h.make_node("CumSum", ["x", "a"], ["y"], exclusive=exclusive, reverse=reverse),
               [("x", F, ["n", 4])], ["y"], {"a": np.array(0)})
    _check(m, _images((3, 4), (5, 4)))


def test_cumsum_axis_fed_at_run_time():
    m = _model(h.make_node("CumSum", ["x", "a"], ["y"], reverse=1),
               [("x", TP.INT32, [3, 4]), ("a", I64, [])], ["y"])
    x = rng.integers(-9, 9, (3, 4)).astype(np.int32)
    _check(m, [{"x": x, "a": np.array(1)}, {"x": x, "a": np.array(-2)}])


@pytest.mark.parametrize("op", ["ReduceSumSquare", "ReduceLogSum"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_sum_square_and_log_sum(op, keepdims):
    m = _model(h.make_node(op, ["x", "a"], ["y"], keepdims=keepdims),
               [("x", F, ["n", 3, 4])], ["y"], {"a": np.array([1, -1])})
    _check(m, [{"x": np.abs(f["x"]) + 0.1} for f in _images((2, 3, 4), (5, 3, 4))])
    old = _model(h.make_node(op, ["x"], ["y"], keepdims=keepdims, axes=[0]),
                 [("x", F, [2, 3])], ["y"], opset=13)
    _check(old, [{"x": np.abs(f["x"]) + 0.1} for f in _images((2, 3))])


@pytest.mark.parametrize("op", ["ReduceSumSquare", "ReduceLogSum", "ReduceL1", "ReduceL2",
                                "ReduceLogSumExp", "ReduceProd"])
def test_reduce_axes_fed_at_run_time(op):
    m = _model(h.make_node(op, ["x", "a"], ["y"], keepdims=0),
               [("x", F, [2, 3, 4]), ("a", I64, [1])], ["y"])
    x = np.abs(rng.standard_normal((2, 3, 4)).astype(np.float32)) + 0.1
    _check(m, [{"x": x, "a": np.array([1])}, {"x": x, "a": np.array([-1])}])


# -- quantized ops ------------------------------------------------------------------------------
@pytest.mark.parametrize("zp", [np.uint8(128), np.int8(-3), None])
def test_quantize_dequantize_per_tensor(zp):
    """Halves (2.5, -0.5) round to even; values past the range saturate."""
    inits = {"s": np.float32(0.5)}
    ins = ["x", "s"] + (["z"] if zp is not None else [])
    if zp is not None:
        inits["z"] = zp
    m = _model([h.make_node("QuantizeLinear", ins, ["q"]),
                h.make_node("DequantizeLinear", ["q"] + ins[1:], ["y"])],
               [("x", F, ["n", 4])], ["q", "y"], inits)
    x = np.array([[1.25, -0.25, 300.0, -300.0], [0.75, 1.0, 63.7, -64.2]], np.float32)
    _check(m, [{"x": x}, {"x": rng.standard_normal((5, 4)).astype(np.float32) * 40}])


def test_quantize_dequantize_per_axis():
    s = np.array([0.1, 0.5, 2.0], np.float32)
    z = np.array([0, -10, 7], np.int8)
    m = _model([h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
                h.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=-2)],
               [("x", F, [2, 3, "n"])], ["q", "y"], {"s": s, "z": z})
    _check(m, [{"x": f["x"] * 20} for f in _images((2, 3, 4), (2, 3, 7))])


@pytest.mark.parametrize("wtype", [np.uint8, np.int8])
def test_dynamic_quantize_matmul_integer(wtype):
    """ORT's dynamic quantization of a MatMul: DynamicQuantizeLinear, then MatMulInteger of the
    uint8 activations and uint8 or int8 weights, then the scales."""
    info = np.iinfo(wtype)
    w = rng.integers(info.min, info.max + 1, (4, 3)).astype(wtype)
    m = _model([h.make_node("DynamicQuantizeLinear", ["x"], ["q", "qs", "qz"]),
                h.make_node("MatMulInteger", ["q", "w", "qz", "wz"], ["c"]),
                h.make_node("Cast", ["c"], ["cf"], to=F),
                h.make_node("Mul", ["cf", "qs"], ["y"])],
               [("x", F, ["n", 4])], ["q", "qs", "qz", "c", "y"],
               {"w": w, "wz": wtype(3)})
    _check(m, _images((2, 4), (6, 4)), against=_ort if wtype == np.uint8 else _reference)


def test_qlinear_matmul_and_conv_integer_and_qlinear_conv():
    a = rng.integers(0, 256, (2, 3, 4)).astype(np.uint8)
    b = rng.integers(0, 256, (4, 5)).astype(np.uint8)
    m = _model(h.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"]),
               [("a", U8, [2, 3, 4])], ["y"],
               {"as": np.float32(0.02), "az": np.uint8(120), "b": b, "bs": np.float32(0.03),
                "bz": np.uint8(130), "ys": np.float32(0.05), "yz": np.uint8(100)})
    _check(m, [{"a": a}])
    w = rng.integers(-128, 128, (4, 2, 3, 3)).astype(np.int8)
    x = rng.integers(0, 256, (1, 2, 6, 5)).astype(np.uint8)
    m = _model(h.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[0, 0, 1, 1],
                           strides=[2, 2]),
               [("x", U8, [1, 2, 6, 5])], ["y"], {"w": w, "xz": np.uint8(7),
                                                  "wz": np.int8(-2)})
    _check(m, [{"x": x}], against=_reference)
    m = _model(h.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                           ["y"], auto_pad="SAME_UPPER"),
               [("x", U8, [1, 2, 6, 5])], ["y"],
               {"xs": np.float32(0.1), "xz": np.uint8(9), "w": w,
                "ws": np.array([0.01, 0.02, 0.03, 0.04], np.float32),
                "wz": np.zeros(4, np.int8), "ys": np.float32(0.2), "yz": np.uint8(120),
                "b": np.array([5, -9, 100, 0], np.int32)})
    _check(m, [{"x": x}], against=_reference)  # ORT's u8 x s8 conv saturates partial sums


def test_quantize_refusals_name_the_reason():
    m = _model(h.make_node("QuantizeLinear", ["x", "s"], ["q"], block_size=2, axis=1),
               [("x", F, [2, 4])], ["q"], {"s": np.ones((2, 2), np.float32)})
    with pytest.raises(OnnxUnsupportedError, match="QuantizeLinear.*block_size"):
        from_onnx(m)


# -- convolution padding ------------------------------------------------------------------------
W = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)


def test_conv_asymmetric_pads_tensorflow_same():
    m = _model(h.make_node("Conv", ["x", "w"], ["y"], pads=[0, 0, 1, 1], strides=[2, 2]),
               [("x", F, ["b", 3, 8, 8])], ["y"], {"w": W})
    _check(m, _images((1, 3, 8, 8), (3, 3, 8, 8)))


@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER"])
def test_auto_pad_on_symbolic_sizes(mode):
    w = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)
    m = _model([h.make_node("Conv", ["x", "w"], ["c"], auto_pad=mode),
                h.make_node("MaxPool", ["c"], ["y"], auto_pad=mode, kernel_shape=[2, 2])],
               [("x", F, [1, 3, "h", "w"])], ["y"], {"w": w})
    _check(m, _images((1, 3, 5, 6), (1, 3, 8, 3)))


def test_auto_pad_with_stride_on_fixed_sizes():
    m = _model(h.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER", strides=[2, 3]),
               [("x", F, [1, 3, 7, 8])], ["y"], {"w": W})
    _check(m, _images((1, 3, 7, 8)))


@pytest.mark.parametrize("mode, kernel, strides, dilations", [
    ("SAME_UPPER", (3, 3), [2, 2], [1, 1]),  # TensorFlow's stride-2 SAME on a dynamic image
    ("SAME_UPPER", (2, 4), [2, 3], [1, 1]),  # even reach: the begin pad differs by residue
    ("SAME_LOWER", (3, 2), [3, 2], [2, 1]),
])
def test_auto_pad_with_stride_on_symbolic_sizes(mode, kernel, strides, dilations):
    """The pads depend on each size modulo its stride: padded by the most, then cut to the
    size's own window at run time. Sizes of every residue of the strides."""
    w = rng.standard_normal((4, 3, *kernel)).astype(np.float32)
    m = _model(h.make_node("Conv", ["x", "w", "b"], ["y"], auto_pad=mode, strides=strides,
                           dilations=dilations),
               [("x", F, ["b", 3, "h", "w"])], ["y"],
               {"w": w, "b": rng.standard_normal(4).astype(np.float32)})
    # ONNX Runtime refuses dilations with auto_pad SAME: onnx's reference evaluator there
    against = _ort if dilations == [1, 1] else _reference
    _check(m, _images((1, 3, 7, 8), (3, 3, 8, 9), (2, 3, 9, 10), (1, 3, 6, 13)), against=against)


@pytest.mark.parametrize("onnx_type, attrs", [
    ("MaxPool", dict(kernel_shape=[3, 2], strides=[2, 2])),  # Keras MaxPooling2D "same"
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 3], count_include_pad=1)),
])
def test_pool_auto_pad_with_stride_on_symbolic_sizes(onnx_type, attrs):
    m = _model(h.make_node(onnx_type, ["x"], ["y"], auto_pad="SAME_UPPER", **attrs),
               [("x", F, ["b", 3, "h", "w"])], ["y"])
    feeds = _images((1, 3, 7, 8), (2, 3, 8, 9), (1, 3, 9, 10))
    feeds[0]["x"][0, 0, -1, :] = -np.inf  # a window of -inf and padding only: still -inf
    _check(m, feeds)


def test_auto_pad_refusal_names_the_reason():
    m = _model(h.make_node("AveragePool", ["x"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2],
                           kernel_shape=[3, 3]),
               [("x", F, [1, 3, "h", 8])], ["y"])
    with pytest.raises(OnnxUnsupportedError,
                       match="AveragePool.*auto_pad=SAME_UPPER with a stride.*count_include_pad"):
        from_onnx(m)
    w = rng.standard_normal((4, 3, 1, 1)).astype(np.float32)  # reach 1 below stride 3
    m = _model(h.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[3, 1]),
               [("x", F, [1, 3, "h", 8])], ["y"], {"w": w})
    with pytest.raises(OnnxUnsupportedError, match="Conv.*auto_pad=SAME_UPPER with stride 3"):
        from_onnx(m)


@pytest.mark.parametrize("attrs", [
    dict(output_shape=[8, 8], strides=[3, 2]),
    dict(output_shape=[11, 10], strides=[3, 2]),  # past the full output: bias there
    dict(auto_pad="SAME_UPPER", strides=[2, 2]),
    dict(auto_pad="SAME_LOWER", strides=[2, 3], dilations=[2, 1]),
    dict(pads=[1, 0, 0, 2], strides=[2, 2], output_padding=[1, 1]),
    dict(pads=[0, 2, 1, 0], group=2, output_padding=[0, 1], strides=[1, 2]),
])
def test_conv_transpose_output_shape_auto_pad_asymmetric(attrs):
    groups = attrs.get("group", 1)
    w = rng.standard_normal((4, 6 // groups, 3, 3)).astype(np.float32)
    m = _model(h.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs),
               [("x", F, [2, 4, 3, 4])], ["y"],
               {"w": w, "b": rng.standard_normal(6 // groups * groups).astype(np.float32)})
    _check(m, _images((2, 4, 3, 4)))


# -- losses, BitShift, compositions ---------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_softmax_cross_entropy_and_nll_loss(reduction):
    """Class weights and an ignore_index, on (N, C, d) scores with a symbolic N."""
    w = np.abs(rng.standard_normal(5)).astype(np.float32)
    m = _model([h.make_node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["l", "lp"],
                            reduction=reduction, ignore_index=2),
                h.make_node("NegativeLogLikelihoodLoss", ["lp", "t"], ["n"],
                            reduction=reduction)],
               [("x", F, ["n", 5, 3]), ("t", I64, ["n", 3])], ["l", "lp", "n"], {"w": w})
    _check(m, [{"x": rng.standard_normal((b, 5, 3)).astype(np.float32),
                "t": rng.integers(0, 5, (b, 3))} for b in (2, 4)])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.uint64])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift(dtype, direction):
    m = _model(h.make_node("BitShift", ["x", "y"], ["z"], direction=direction),
               [("x", h.np_dtype_to_tensor_dtype(np.dtype(dtype)), ["n"]),
                ("y", h.np_dtype_to_tensor_dtype(np.dtype(dtype)), ["n"])], ["z"], opset=21)
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, 1, 7, 100 if info.max > 100 else 3], dtype)
    bits = 8 * np.dtype(dtype).itemsize  # a shift past the width (or below 0): 0 or -1
    y = np.array([1, 3, 0, bits, 5] if info.min == 0 else [1, -1, 0, bits, 5], dtype)
    _check(m, [{"x": x, "y": y}, {"x": x[:2], "y": y[:2]}], against=_reference)


@pytest.mark.parametrize("op,attrs", [("Celu", {"alpha": 0.7}), ("ThresholdedRelu", {}),
                                      ("Shrink", {"lambd": 0.3, "bias": 0.2}), ("Sinh", {}),
                                      ("Cosh", {}), ("Asinh", {}), ("Atanh", {}),
                                      ("Hardmax", {"axis": 1}),
                                      ("MeanVarianceNormalization", {"axes": [0, 2]})])
def test_compositions(op, attrs):
    m = _model(h.make_node(op, ["x"], ["y"], **attrs), [("x", F, ["n", 4, 3])], ["y"])
    feeds = [{"x": np.tanh(f["x"]) * 0.9} for f in _images((2, 4, 3), (3, 4, 3))]
    _check(m, feeds)


def test_acosh_mean_eye_like_cumprod():
    m = _model([h.make_node("Acosh", ["x"], ["a"]), h.make_node("Mean", ["x", "a", "x"], ["m"]),
                h.make_node("EyeLike", ["e"], ["i"], k=1, dtype=TP.INT32),
                h.make_node("CumProd", ["x", "ax"], ["c"], exclusive=1, reverse=1)],
               [("x", F, ["n", 3]), ("e", F, [3, 4])], ["a", "m", "i", "c"],
               {"ax": np.array(0)}, opset=26)
    _check(m, [{"x": np.abs(f["x"]) + 1, "e": np.zeros((3, 4), np.float32)}
               for f in _images((2, 3), (4, 3))], against=_reference)


@pytest.mark.parametrize("largest", [0, 1])
def test_topk_k_fed_at_run_time(largest):
    """Ties keep the lower index first, as ONNX Runtime and onnx do."""
    m = _model(h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest),
               [("x", F, [2, 6]), ("k", I64, [1])], ["v", "i"])
    x = np.array([[3, 1, 3, 2, 1, 3], [0, 5, 5, -1, 1, 0]], np.float32)
    g = _check(m, [{"x": x, "k": np.array([3])}, {"x": x, "k": np.array([6])},
                   {"x": x, "k": np.array([0])}])
    assert [n.op for n in g.nodes] == ["shape_from_data"]
