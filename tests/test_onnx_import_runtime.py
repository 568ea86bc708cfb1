"""ONNX import of what real exporters write: slices bounded by run-time sizes, constant subgraphs
of any op type (folded at import), and the ops real models need. Issue 16's "what was seen"."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_import import from_onnx  # noqa: E402

from .onnx_build import init as _init, model as _model, ort_run as _ort  # noqa: E402


def _run_all_backends(g, feeds):
    outs = []
    for backend in om.backends():
        with om.Session(g, backend=backend) as s:
            outs.append({k: v.numpy() for k, v in s.run(feeds).items()})
    return outs


def test_slice_of_a_constant_to_a_runtime_size():
    """BERT's ``position_ids[:, :seq]``: a constant buffer sliced to the sequence length read
    from the input's shape. Was refused with "input 2 (ends) must be a constant"."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["seq"], axis=0),
        helper.make_node("Unsqueeze", ["seq", "ax0"], ["end"]),
        helper.make_node("Slice", ["pos", "zero", "end", "ax1"], ["p"]),
        helper.make_node("Add", ["x", "p"], ["y"]),
    ]
    pos = np.arange(32, dtype=np.float32).reshape(1, 32)
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", "seq"])],
               [helper.make_tensor_value_info("y", TP.FLOAT, ["batch", "seq"])],
               [_init("pos", pos), _init("one", np.array(1, np.int64)),
                _init("ax0", np.array([0], np.int64)), _init("zero", np.array([0], np.int64)),
                _init("ax1", np.array([1], np.int64))])
    g = from_onnx(m)
    for b, n in ((2, 5), (3, 7)):
        x = np.random.default_rng(n).standard_normal((b, n)).astype(np.float32)
        for out in _run_all_backends(g, {"x": x}):
            np.testing.assert_array_equal(out["y"], x + pos[:, :n])


def test_mod_of_two_constants_is_folded():
    """torchvision's ViT and nn.TransformerDecoderLayer compute ``Mod`` of two constants; the
    node has no run-time input, so it folds at import whatever its op type."""
    nodes = [
        helper.make_node("Mod", ["a", "b"], ["m"], fmod=0),
        helper.make_node("Cast", ["m"], ["mf"], to=TP.FLOAT),
        helper.make_node("Add", ["x", "mf"], ["y"]),
    ]
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", 3])],
               [helper.make_tensor_value_info("y", TP.FLOAT, ["batch", 3])],
               [_init("a", np.array([7, -7, 9], np.int64)), _init("b", np.array([3, 3, -4],
                                                                                np.int64))])
    g = from_onnx(m)
    assert [n.op for n in g.nodes] == ["add"]
    x = np.ones((2, 3), np.float32)
    want = _ort(m, {"x": x})[0]
    np.testing.assert_array_equal(want, x + np.array([1, 2, -3], np.float32))
    for out in _run_all_backends(g, {"x": x}):
        np.testing.assert_array_equal(out["y"], want)


def test_an_unclaimed_op_on_constants_folds_and_a_float_fmod_too():
    nodes = [
        helper.make_node("Sin", ["c"], ["s"]),                      # nothing claims Sin
        helper.make_node("Mod", ["s", "d"], ["m"], fmod=1),
        helper.make_node("Mul", ["x", "m"], ["y"]),
    ]
    c = np.array([0.5, 2.0, -1.0], np.float32)
    d = np.array([0.3, 0.3, 0.3], np.float32)
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", 3])],
               [helper.make_tensor_value_info("y", TP.FLOAT, ["batch", 3])],
               [_init("c", c), _init("d", d)])
    g = from_onnx(m)
    assert [n.op for n in g.nodes] == ["mul"]
    x = np.full((2, 3), 2.0, np.float32)
    want = _ort(m, {"x": x})[0]
    for out in _run_all_backends(g, {"x": x}):
        np.testing.assert_allclose(out["y"], want, rtol=1e-6)


def test_an_unclaimed_op_on_runtime_data_is_still_listed():
    nodes = [helper.make_node("Bernoulli", ["x"], ["y"])]  # random: nothing claims it
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, [3])],
               [helper.make_tensor_value_info("y", TP.FLOAT, [3])])
    with pytest.raises(om.OneModelError, match=r"Bernoulli \(1 node\)"):
        from_onnx(m)


def test_random_ops_are_never_folded():
    nodes = [helper.make_node("RandomNormal", [], ["r"], shape=[3]),
             helper.make_node("Add", ["x", "r"], ["y"])]
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, [3])],
               [helper.make_tensor_value_info("y", TP.FLOAT, [3])])
    with pytest.raises(om.OneModelError, match="RandomNormal"):
        from_onnx(m)


@pytest.mark.parametrize("attrs", [
    dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),                      # squeezenet
    dict(kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1]),                # same_upper
    dict(kernel_shape=[2, 2], strides=[1, 1], dilations=[2, 2]),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
])
@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
def test_pools_with_ceil_mode_asymmetric_pads_and_dilation(op_type, attrs):
    attrs = dict(attrs)
    if op_type == "AveragePool":
        attrs["count_include_pad"] = 0
    nodes = [helper.make_node(op_type, ["x"], ["y"], **attrs)]
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3, 9, 8])],
               [helper.make_tensor_value_info("y", TP.FLOAT, [2, 3, None, None])], opset=19)
    g = from_onnx(m)
    x = np.random.default_rng(0).standard_normal((2, 3, 9, 8)).astype(np.float32)
    want = _ort(m, {"x": x})[0]
    for out in _run_all_backends(g, {"x": x}):
        np.testing.assert_allclose(out["y"], want, rtol=1e-6, atol=1e-6)
