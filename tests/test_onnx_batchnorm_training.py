"""ONNX BatchNormalization with training_mode=1: batch statistics (biased variance) and the
running statistics blended with ``momentum``, against a numpy formula and ONNX Runtime."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_import import OnnxImportError, from_onnx  # noqa: E402
from onemodel.runtime.traced_model import TracedModel  # noqa: E402


def _model(shape, outputs=3, momentum=None, stats_type=TensorProto.FLOAT, opset=15,
           training=1):
    c = shape[1]
    rng = np.random.default_rng(len(shape))
    stats_np = onnx.helper.tensor_dtype_to_np_dtype(stats_type)
    inits = [onnx.numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "scale"),
             onnx.numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "bias"),
             onnx.numpy_helper.from_array(rng.standard_normal(c).astype(stats_np), "mean"),
             onnx.numpy_helper.from_array(rng.uniform(0.5, 2, c).astype(stats_np), "var")]
    outs = ["y", "running_mean", "running_var"][:outputs]
    attrs = {"training_mode": training, "epsilon": 1e-3}
    if momentum is not None:
        attrs["momentum"] = momentum
    node = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], outs,
                            **attrs)
    graph = helper.make_graph(
        [node], "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT if o == "y" else stats_type, None)
         for o in outs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _expected(model, x):
    init = {t.name: onnx.numpy_helper.to_array(t).astype(np.float64)
            for t in model.graph.initializer}
    attrs = {a.name: helper.get_attribute_value(a) for a in model.graph.node[0].attribute}
    m = attrs.get("momentum", 0.9)
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    y = ((x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + attrs["epsilon"])
         * init["scale"].reshape(shape) + init["bias"].reshape(shape))
    return [y, init["mean"] * m + mean * (1 - m), init["var"] * m + var * (1 - m)]


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 4, 4)])
@pytest.mark.parametrize("momentum", [None, 0.7])
def test_training_mode_matches_formula_and_onnxruntime(shape, momentum):
    model = _model(shape, momentum=momentum)
    x = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
    want = _expected(model, x.astype(np.float64))
    traced = TracedModel(from_onnx(model))
    ort = pytest.importorskip("onnxruntime")
    got_ort = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for backend in om.backends():
        with traced.create_session(backend=backend) as s:
            got = s.run({"x": x})
        for name, w, o in zip(traced.output_names, want, got_ort):
            np.testing.assert_allclose(got[name].numpy(), w, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(got[name].numpy(), o, rtol=1e-4, atol=1e-5)


def test_only_y_requested():
    model = _model((4, 3), outputs=1)
    x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    (y,) = TracedModel(from_onnx(model))(om.tensor(x)),
    np.testing.assert_allclose(y.numpy(), _expected(model, x.astype(np.float64))[0], rtol=1e-4,
                               atol=1e-5)


def test_running_statistics_keep_their_own_dtype():
    model = _model((4, 3), stats_type=TensorProto.DOUBLE)
    x = np.random.default_rng(2).standard_normal((4, 3)).astype(np.float32)
    graph = from_onnx(model)
    outs = TracedModel(graph)(om.tensor(x))
    assert [o.dtype for o in outs] == [om.DType.F32, om.DType.F64, om.DType.F64]
    want = _expected(model, x.astype(np.float64))
    for o, w in zip(outs, want):
        np.testing.assert_allclose(o.numpy(), w, rtol=1e-5, atol=1e-5)


def test_statistics_outputs_without_training_mode_are_an_error():
    with pytest.raises(OnnxImportError, match="training_mode=1"):
        from_onnx(_model((4, 3), training=0))
