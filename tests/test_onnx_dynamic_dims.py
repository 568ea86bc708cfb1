"""ONNX files as other exporters write them (issue 25): unknown axes spelled ``dim_value: -1``
(paddle2onnx) or an empty ``dim_param`` import as symbolic axes with generated names;
Slice ends of 1e9 (tf2onnx's "to the end") are the axis; and shape arithmetic that is a number
for every size (a flattened stride-2 conv stack fed to a Gemm) is that number. Each file is built
by onnx.helper, passes onnx.checker, and matches ONNX Runtime on every backend at two sizes."""
import numpy as np
import pytest

import onemodel as om
from onemodel.registry import REGISTRY

from .onnx_build import model, ort_run

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402


def backends():
    return sorted(REGISTRY.tables().backends)


def _load(tmp_path, m, name="m.onnx"):
    path = tmp_path / name
    path.write_bytes(m.SerializeToString())
    return om.load_onnx(str(path))


def _matches_ort(traced, m, feeds):
    want = ort_run(m, feeds)
    for backend in backends():
        out = traced.create_session(backend=backend).run(feeds)
        for name, w in zip(traced.output_names, want):
            np.testing.assert_allclose(out[name].numpy(), w, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{backend}, sizes {[v.shape for v in feeds.values()]}")


def _relu_model(dims):
    vi = helper.make_tensor_value_info("x", TP.FLOAT, dims)
    return model([helper.make_node("Relu", ["x"], ["y"])], [vi],
                 [helper.make_tensor_value_info("y", TP.FLOAT, [None, 3])])


@pytest.mark.parametrize("dims", [[-1, 3], [-7, 3], [None, 3]], ids=["-1", "-7", "no name"])
def test_an_unknown_dim_is_a_symbolic_axis_with_a_generated_name(tmp_path, dims):
    m = _relu_model(dims)
    if dims[0] is None:
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = ""
    traced = _load(tmp_path, m)
    session = traced.create_session()
    assert session.inputs[0].shape == ("x_dim0", 3)
    for n in (2, 9):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        _matches_ort(traced, m, {"x": x})


def test_a_zero_dim_stays_an_empty_axis_as_onnx_runtime_reads_it(tmp_path):
    # not an "unknown": ONNX Runtime refuses any other size there, and files feed empty
    # tensors (a ReduceSum's axes) through such inputs
    m = _relu_model([0, 3])
    traced = _load(tmp_path, m)
    assert traced.create_session().inputs[0].shape == (0, 3)
    _matches_ort(traced, m, {"x": np.zeros((0, 3), np.float32)})


def test_slice_ends_of_1e9_are_the_axis_and_broadcast_against_it(tmp_path):
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["head"]),
        helper.make_node("Add", ["head", "x"], ["y"]),
    ]
    inits = [helper.make_tensor(n, TP.INT64, [1], [v])
             for n, v in (("starts", 0), ("ends", 1_000_000_000), ("axes", 1))]
    m = model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, [2, "n"])],
              [helper.make_tensor_value_info("y", TP.FLOAT, [2, "n"])], inits)
    traced = _load(tmp_path, m)
    session = traced.create_session()
    assert session.outputs[0].shape == (2, "n")
    for n in (3, 17):
        x = np.random.default_rng(n).standard_normal((2, n)).astype(np.float32)
        _matches_ort(traced, m, {"x": x})
    # the reading holds up to the bound, which the graph keeps as a guard
    assert [g.text for g in traced.graph.guards] == ["n <= 1000000000"]


def test_a_flattened_stride2_conv_stack_feeds_a_gemm(tmp_path):
    rng = np.random.default_rng(0)
    c = 4
    nodes, inits, prev = [], [], "x"
    for i, cin in enumerate((1, c, c)):
        w = f"w{i}"
        inits.append(onnx.numpy_helper.from_array(
            rng.standard_normal((c, cin, 3)).astype(np.float32), w))
        nodes.append(helper.make_node("Conv", [prev, w], [f"h{i}"], kernel_shape=[3],
                                      strides=[2], pads=[1, 1]))
        prev = f"h{i}"
    # (N, C, t) -> (N, t, C) -> (N*t, -1) as torch.onnx writes x.reshape(n*t, -1)
    nodes += [
        helper.make_node("Transpose", [prev], ["ht"], perm=[0, 2, 1]),
        helper.make_node("Shape", ["ht"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
        helper.make_node("Gather", ["s", "i1"], ["t"], axis=0),
        helper.make_node("Mul", ["n", "t"], ["nt"]),
        helper.make_node("Concat", ["nt", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["ht", "target"], ["flat"]),
        helper.make_node("Gemm", ["flat", "B"], ["y"]),
    ]
    inits += [helper.make_tensor("i0", TP.INT64, [1], [0]),
              helper.make_tensor("i1", TP.INT64, [1], [1]),
              helper.make_tensor("minus1", TP.INT64, [1], [-1]),
              onnx.numpy_helper.from_array(rng.standard_normal((c, 5)).astype(np.float32), "B")]
    m = model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", 1, "w"])],
              [helper.make_tensor_value_info("y", TP.FLOAT, [None, 5])], inits)
    traced = _load(tmp_path, m)
    assert traced.create_session().outputs[0].shape[1] == 5
    for n, w in ((2, 16), (3, 29)):
        x = rng.standard_normal((n, 1, w)).astype(np.float32)
        _matches_ort(traced, m, {"x": x})
