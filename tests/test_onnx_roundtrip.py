"""ONNX export and import cross-checked against onnxruntime and against OneModel itself.

Traced models with symbolic axes are exported, run in onnxruntime at sizes other than the
example and compared with OneModel; exported files are imported back and must give the same
results; hand-written ONNX graphs in the shapes exporters emit (torch.onnx's shape subgraphs,
erf GELU, decomposed layer norm) import into the compact OneModel ops.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import onemodel as om  # noqa: E402
from onemodel import DType, Tensor  # noqa: E402
from onemodel.core.symbolic import Dim  # noqa: E402
from onemodel.formats import onnx_export, onnx_import  # noqa: E402
from onemodel.formats.onnx_export import OnnxExportError, save_onnx, to_onnx  # noqa: E402
from onemodel.formats.onnx_import import (OnnxImportError, OnnxUnsupportedError,  # noqa: E402
                                          from_onnx, load_onnx)

from .onnx_build import init as _init, model as _model  # noqa: E402

helper = onnx.helper
TP = onnx.TensorProto
nn = om.nn


def _close(got, want, rtol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def _session_run(graph, x):
    with om.Session(graph, backend="numpy") as s:
        return s.run({"input": x})["output"].numpy()


def _ort(model):
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


# -- models ---------------------------------------------------------------------------------------
def _mlp():
    om.manual_seed(1)
    m = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(),
                      nn.Linear(32, 3), nn.Softmax(-1))
    return m, Tensor.zeros(DType.F32, 4, 6), ("batch", None), [(2, 6), (9, 6)]


def _cnn():
    om.manual_seed(2)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Conv2d(8, 6, 3, stride=2, padding=1),
                      nn.AvgPool2d(2), nn.Flatten(), nn.Linear(6 * 2 * 2, 5))
    m.eval()
    # give the batch norm non-trivial statistics
    bn = m[1]
    bn.running_mean._data[...] = np.linspace(-0.5, 0.5, 8, dtype=np.float32)
    bn.running_var._data[...] = np.linspace(0.5, 2.0, 8, dtype=np.float32)
    return m, Tensor.zeros(DType.F32, 4, 3, 16, 16), ("batch", None, None, None), \
        [(2, 3, 16, 16), (7, 3, 16, 16)]


def _transformer():
    om.manual_seed(3)
    m = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.1,
                                   batch_first=True)
    return m, Tensor.zeros(DType.F32, 3, 5, 16), ("batch", "seq", None), \
        [(2, 7, 16), (6, 2, 16)]


MODELS = {"mlp": _mlp, "cnn": _cnn, "transformer": _transformer}


@pytest.fixture(scope="module", params=sorted(MODELS))
def traced(request):
    model, example, axes, sizes = MODELS[request.param]()
    model.eval()
    return request.param, model, model.trace(example, *axes), axes, sizes


def test_export_runs_in_onnxruntime_at_other_sizes(traced, tmp_path):
    name, model, tr, axes, sizes = traced
    path = tmp_path / f"{name}.onnx"
    tr.save_onnx(path)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    # symbolic axes are dim_params named as the user named them
    dims = m.graph.input[0].type.tensor_type.shape.dim
    for d, a in zip(dims, axes):
        if a is None:
            assert d.HasField("dim_value")
        else:
            assert d.dim_param == a
    out_dims = m.graph.output[0].type.tensor_type.shape.dim
    assert out_dims[0].dim_param == "batch"
    sess = _ort(m)
    rng = np.random.default_rng(0)
    for shape in sizes:
        x = rng.standard_normal(shape).astype(np.float32)
        want = model(Tensor.from_numpy(x)).numpy()
        _close(sess.run(None, {"input": x})[0], want)
        _close(_session_run(tr.graph, x), want)


def test_export_then_import_gives_the_same_results(traced, tmp_path):
    name, model, tr, axes, sizes = traced
    path = tmp_path / f"{name}.onnx"
    save_onnx(tr.graph, path)
    g = load_onnx(path)
    assert g.input_names == ["input"] and g.output_names == ["output"]
    assert [str(d) for d in g.inputs[0].shape if isinstance(d, Dim)] == [a for a in axes if a]
    rng = np.random.default_rng(1)
    for shape in sizes:
        x = rng.standard_normal(shape).astype(np.float32)
        _close(_session_run(g, x), _session_run(tr.graph, x))


def test_import_keeps_the_model_compact(traced, tmp_path):
    """Export then import does not blow the graph up: ops come back as themselves (linear as
    linear or matmul+add, layer norm as layer_norm, no leftover shape arithmetic)."""
    name, model, tr, axes, sizes = traced
    g = from_onnx(to_onnx(tr.graph))
    ops = g.op_counts()
    assert "cast" not in ops
    assert len(g.nodes) <= 2 * len(tr.graph.nodes)
    if name == "transformer":
        assert ops.get("layer_norm") == 2 and ops.get("softmax") == 1


@pytest.mark.parametrize("opset", [17, 19, 20, onnx_export.DEFAULT_OPSET, "max"])
def test_every_supported_opset_runs(opset):
    """GELU decomposes below opset 20; LayerNormalization exists from 17; the default opset and
    the newest onnx knows run in onnxruntime."""
    if opset == "max":
        opset = onnx_export.max_opset()
    om.manual_seed(4)
    model = nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.LayerNorm(8),
                          nn.GELU(approximate="tanh"))
    model.eval()
    tr = model.trace(Tensor.zeros(DType.F32, 3, 8), "batch", None)
    m = to_onnx(tr.graph, opset=opset)
    assert m.opset_import[0].version == opset
    types = {n.op_type for n in m.graph.node}
    assert ("Gelu" in types) == (opset >= 20)
    assert "LayerNormalization" in types
    try:
        sess = _ort(m)
    except Exception as exc:  # noqa: BLE001 - onnxruntime older than the onnx package
        if opset > onnx_export.DEFAULT_OPSET:
            pytest.skip(f"onnxruntime does not run opset {opset}: {exc}")
        raise
    x = np.random.default_rng(2).standard_normal((5, 8)).astype(np.float32)
    _close(sess.run(None, {"input": x})[0], model(Tensor.from_numpy(x)).numpy())
    _close(_session_run(from_onnx(m), x), model(Tensor.from_numpy(x)).numpy())


def test_bad_opset_is_refused():
    tr = om.trace(lambda x: x.relu(), Tensor.zeros(DType.F32, 3, 2), "batch", None)
    with pytest.raises(OnnxExportError, match="opset 16"):
        to_onnx(tr.graph, opset=16)
    with pytest.raises(OnnxExportError, match="opset 999"):
        to_onnx(tr.graph, opset=999)


def test_default_opset_is_in_range():
    assert onnx_export.MIN_OPSET <= onnx_export.DEFAULT_OPSET <= onnx_export.max_opset()


# -- symbolic sizes -------------------------------------------------------------------------------
def test_shape_arithmetic_is_computed_not_frozen(tmp_path):
    def f(x):
        b, s = x.shape[0], x.shape[1]
        y = x.reshape(b * s, -1)                     # [batch*seq, 4]
        y = y[1:, :]                                 # symbolic slice bound
        z = y.reshape(-1, 2) * 2.0
        pos = Tensor.arange(DType.F32, s)            # symbolic arange
        return z.sum(axis=1).reshape(-1)[: s] + pos

    x0 = Tensor.zeros(DType.F32, 3, 5, 4)
    tr = om.trace(f, x0, "batch", "seq", None)
    m = to_onnx(tr.graph)
    consts = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    for arr in consts.values():  # no example size (3, 5, 15, 30...) leaked as a shape constant
        if arr.dtype == np.int64 and arr.size:
            assert not set(arr.reshape(-1).tolist()) & {3, 5, 15, 14, 30, 28}, arr
    sess = _ort(m)
    g = from_onnx(m)
    for shape in [(2, 7, 4), (4, 3, 4)]:
        x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
        want = f(Tensor.from_numpy(x)).numpy()
        _close(sess.run(None, {"input": x})[0], want)
        _close(_session_run(g, x), want)


def test_frozen_symbolic_output_axis_is_detected(registered):
    """A lowering that bakes a size in is caught by the post-export check."""
    from onemodel.core.types import TensorType
    from onemodel.registry import OnnxSpec, OpDef, Sample, hookimpl

    def bad_export(ctx, node):
        (x,) = ctx.inputs(node)
        ctx.make_node("Reshape", [x, ctx.ints([3, 2])], ctx.outputs(node))

    class Plugin:
        @staticmethod
        @hookimpl
        def onemodel_ops():
            return [OpDef(name="bad_copy", inputs=("x",), kernel=lambda x: x.copy(),
                          infer=lambda x: TensorType(x.dtype, x.shape), vjp=None,
                          samples=lambda rng: [Sample(args=())],
                          onnx=OnnxSpec(export=bad_export))]

    registered(Plugin, "bad_copy_plugin")
    tr = om.trace(lambda x: om.ops.bad_copy(x), Tensor.zeros(DType.F32, 3, 2), "batch", None)
    with pytest.raises(OnnxExportError, match="symbolic axis 0 .*batch.* became the fixed size 3"):
        to_onnx(tr.graph)


def test_missing_lowering_lists_ops(registered):
    from onemodel.core.types import TensorType
    from onemodel.registry import OpDef, Sample, hookimpl

    class Plugin:
        @staticmethod
        @hookimpl
        def onemodel_ops():
            return [OpDef(name="no_onnx", inputs=("x",), kernel=lambda x: x,
                          infer=lambda x: TensorType(x.dtype, x.shape), vjp=None,
                          samples=lambda rng: [Sample(args=())])]

    registered(Plugin, "no_onnx_plugin")
    tr = om.trace(lambda x: om.ops.no_onnx(om.ops.no_onnx(x)), Tensor.zeros(DType.F32, 3, 2),
                  "batch", None)
    with pytest.raises(OnnxExportError, match=r"no_onnx \(2 nodes\)"):
        to_onnx(tr.graph)


# -- fused ops ------------------------------------------------------------------------------------
def test_optimized_graph_with_fused_ops_exports():
    model, example, axes, sizes = _cnn()
    model.eval()
    tr = model.trace(example, *axes)
    with om.Session(tr, backend="numpy", optimization="all") as s:
        opt = s.optimized_graph
    fused = {n.op for n in opt.nodes} & {"fused_linear", "fused_conv2d", "matmul_t",
                                         "elementwise_chain"}
    assert fused, opt
    m = to_onnx(opt)
    assert not {n.op_type for n in m.graph.node} & fused
    sess = _ort(m)
    x = np.random.default_rng(5).standard_normal(sizes[0]).astype(np.float32)
    _close(sess.run(None, {"input": x})[0], model(Tensor.from_numpy(x)).numpy())


def test_fused_records_have_lowerings():
    for name in ("fused_linear", "fused_conv2d", "matmul_t", "elementwise_chain"):
        op = om.registry.get_op(name)
        assert op.onnx is not None and op.onnx.export is not None, name


# -- atomic writes --------------------------------------------------------------------------------
def test_failed_onnx_save_keeps_old_file(tmp_path, monkeypatch):
    tr = om.trace(lambda x: x.relu(), Tensor.zeros(DType.F32, 3, 2), "batch", None)
    path = tmp_path / "m.onnx"
    save_onnx(tr.graph, path)
    before = path.read_bytes()
    tr2 = om.trace(lambda x: x.tanh(), Tensor.zeros(DType.F32, 3, 2), "batch", None)

    def boom(self):
        raise OSError("disk full")

    monkeypatch.setattr(onnx.ModelProto, "SerializeToString", boom)
    with pytest.raises(OSError, match="disk full"):
        save_onnx(tr2.graph, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.onnx"]


# -- import of exporter-style graphs ---------------------------------------------------------------
def test_torch_style_shape_subgraph_becomes_a_symbolic_reshape():
    """x: [batch, 4, 6] -> Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape: the shape
    is computed from the batch size, so the import keeps it symbolic."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["zero"], value=_init("z", np.array(0, np.int64))),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Concat", ["b1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["flat"]),
        helper.make_node("Relu", ["flat"], ["y"]),
    ]
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", 4, 6])],
               [helper.make_tensor_value_info("y", TP.FLOAT, ["batch", 24])],
               [_init("ax0", np.array([0], np.int64)), _init("minus1", np.array([-1], np.int64))])
    g = from_onnx(m)
    assert [n.op for n in g.nodes] == ["reshape", "relu"]
    assert str(g.nodes[0].params["shape"][0]) == "batch"
    for b in (1, 5):
        x = np.random.default_rng(b).standard_normal((b, 4, 6)).astype(np.float32)
        out = om.Session(g).run({"x": x})["y"].numpy()
        np.testing.assert_array_equal(out, np.maximum(x.reshape(b, -1), 0))


def test_erf_gelu_and_decomposed_layer_norm_are_fused():
    sqrt2 = np.array(math.sqrt(2.0), np.float32)
    nodes = [
        # layer norm, decomposed as exporters write it
        helper.make_node("ReduceMean", ["x"], ["mu"], axes=[-1]),
        helper.make_node("Sub", ["x", "mu"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["d2"]),
        helper.make_node("ReduceMean", ["d2"], ["var"], axes=[-1]),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["d", "sd"], ["n"]),
        helper.make_node("Mul", ["n", "gamma"], ["ng"]),
        helper.make_node("Add", ["ng", "beta"], ["ln"]),
        # erf gelu
        helper.make_node("Div", ["ln", "sqrt2"], ["u"]),
        helper.make_node("Erf", ["u"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["ln", "e1"], ["h"]),
        helper.make_node("Mul", ["h", "half"], ["y"]),
    ]
    rng = np.random.default_rng(0)
    gamma = rng.standard_normal(8).astype(np.float32)
    beta = rng.standard_normal(8).astype(np.float32)
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, ["n", 8])],
               [helper.make_tensor_value_info("y", TP.FLOAT, ["n", 8])],
               [_init("two", np.array(2.0, np.float32)), _init("eps", np.array(1e-5, np.float32)),
                _init("gamma", gamma), _init("beta", beta), _init("sqrt2", sqrt2),
                _init("one", np.array(1.0, np.float32)), _init("half", np.array(0.5, np.float32))])
    g = from_onnx(m)
    assert [n.op for n in g.nodes] == ["layer_norm", "gelu"]
    assert g.nodes[0].params["eps"] == 1e-5
    x = rng.standard_normal((3, 8)).astype(np.float32)
    want = _ort(m).run(None, {"x": x})[0]
    _close(om.Session(g).run({"x": x})["y"].numpy(), want)


def test_gemm_conv_pool_flatten_import():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    fc = rng.standard_normal((5, 4 * 3 * 3)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], epsilon=1e-3),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Dropout", ["f"], ["fd"]),
        helper.make_node("Gemm", ["fd", "fc", "fb"], ["g"], transB=1),
        helper.make_node("Identity", ["g"], ["y"]),
    ]
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, ["N", 2, 6, 6])],
               [helper.make_tensor_value_info("y", TP.FLOAT, ["N", 5])],
               [_init("w", w), _init("s", np.abs(rng.standard_normal(4)).astype(np.float32)),
                _init("b", rng.standard_normal(4).astype(np.float32)),
                _init("m", rng.standard_normal(4).astype(np.float32)),
                _init("v", np.abs(rng.standard_normal(4)).astype(np.float32) + 0.5),
                _init("fc", fc), _init("fb", rng.standard_normal(5).astype(np.float32))])
    g = from_onnx(m)
    assert [n.op for n in g.nodes] == ["conv2d", "batch_norm", "relu", "max_pool2d", "reshape",
                                      "linear"]
    x = rng.standard_normal((3, 2, 6, 6)).astype(np.float32)
    _close(om.Session(g).run({"x": x})["y"].numpy(), _ort(m).run(None, {"x": x})[0])


def test_unsupported_ops_are_all_listed_with_counts():
    # ops nothing claims: Bernoulli (random) and StringNormalizer (strings)
    nodes = [helper.make_node("Bernoulli", ["x"], ["a"]),
             helper.make_node("Bernoulli", ["a"], ["b"]),
             helper.make_node("StringNormalizer", ["b"], ["c"]),
             helper.make_node("Relu", ["c"], ["y"])]
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
               [helper.make_tensor_value_info("y", TP.FLOAT, [2, 3])])
    with pytest.raises(om.OneModelError) as e:
        from_onnx(m)
    assert isinstance(e.value, OnnxUnsupportedError)
    assert "Bernoulli (2 nodes)" in str(e.value) and "StringNormalizer (1 node)" in str(e.value)


def _external_model(tmp_path, location):
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = onnx.numpy_helper.from_array(arr, "w")
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])],
               [helper.make_tensor_value_info("x", TP.FLOAT, [3, 4])],
               [helper.make_tensor_value_info("y", TP.FLOAT, [3, 4])], [t])
    onnx.external_data_helper.set_external_data(m.graph.initializer[0], location)
    m.graph.initializer[0].ClearField("raw_data")
    m.graph.initializer[0].data_location = TP.EXTERNAL
    return m, arr


def test_external_data_inside_the_folder_loads(tmp_path):
    m, arr = _external_model(tmp_path, "weights.bin")
    (tmp_path / "weights.bin").write_bytes(arr.tobytes())
    onnx.save(m, tmp_path / "m.onnx")
    g = load_onnx(tmp_path / "m.onnx")
    np.testing.assert_array_equal(g.initializers["w"], arr)


@pytest.mark.parametrize("location", ["../outside.bin", "/etc/passwd", "sub/../../outside.bin"])
def test_external_data_outside_the_folder_is_refused(tmp_path, location):
    inner = tmp_path / "model"
    inner.mkdir()
    (tmp_path / "outside.bin").write_bytes(b"\0" * 48)
    m, _ = _external_model(inner, location)
    onnx.save(m, inner / "m.onnx")
    with pytest.raises(OnnxImportError, match="outside|relative path"):
        load_onnx(inner / "m.onnx")


def test_missing_file_and_garbage(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_onnx(tmp_path / "nope.onnx")
    p = tmp_path / "junk.onnx"
    p.write_bytes(b"\x08\x07garbage\xff\xff")
    with pytest.raises(OnnxImportError):
        load_onnx(p)


def test_claimed_op_types_cover_the_brief():
    want = {"Gemm", "Constant", "Shape", "Gather", "Unsqueeze", "Concat", "Reshape",
            "LayerNormalization", "Softmax", "Conv", "MaxPool", "AveragePool",
            "BatchNormalization", "Flatten", "Transpose", "MatMul", "Add", "Sub", "Mul", "Div",
            "Pow", "Sqrt", "Erf", "Where", "Cast", "Expand", "Slice", "Split", "Squeeze",
            "Identity", "Dropout", "Relu", "Tanh", "Sigmoid", "Exp", "Log", "Neg", "Abs",
            "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ArgMax", "Max", "Min", "Clip",
            "Equal", "Less", "Greater", "GatherElements", "Gelu"}
    assert want <= onnx_import.claimed_op_types()


def test_import_constants_never_share_a_name_by_accident():
    """Temporary constants (alpha/beta of a Gemm) each get their own initializer, even when
    Python reuses the id of a freed object."""
    ctx = onnx_import.ImportContext(17)
    names = [ctx.value(np.array(float(v), np.float32)) for v in range(20)]
    assert len(set(names)) == 20
    assert [float(ctx.initializers[n]) for n in names] == [float(v) for v in range(20)]


def test_torch_style_expand_pattern_stays_symbolic():
    """torch.onnx writes x.expand(b, -1, -1) as Shape/ConstantOfShape/Mul/Equal/Where/Expand."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),                        # [batch, 1, 4]
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Concat", ["b1", "three_minus1"], ["want"], axis=0),  # [batch, 3, -1]
        helper.make_node("Equal", ["want", "minus_ones"], ["eq"]),
        helper.make_node("Where", ["eq", "ones", "want"], ["target"]),  # [batch, 3, 1]
        helper.make_node("Expand", ["x", "target"], ["y"]),
    ]
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", 1, 4])],
               [helper.make_tensor_value_info("y", TP.FLOAT, ["batch", 3, 4])],
               [_init("zero", np.array(0, np.int64)), _init("ax0", np.array([0], np.int64)),
                _init("three_minus1", np.array([3, -1], np.int64)),
                _init("minus_ones", np.array([-1, -1, -1], np.int64)),
                _init("ones", np.array([1, 1, 1], np.int64))])
    g = from_onnx(m)
    assert [n.op for n in g.nodes] == ["expand"]
    for b in (2, 5):
        x = np.random.default_rng(b).standard_normal((b, 1, 4)).astype(np.float32)
        out = om.Session(g).run({"x": x})["y"].numpy()
        np.testing.assert_array_equal(out, np.broadcast_to(x, (b, 3, 4)))


def test_floor_division_and_modulo_of_sizes():
    def f(x):
        half = x[:, : x.shape[1] // 2]
        rest = x[:, x.shape[1] % 3:]
        return half.sum(axis=1) + rest.sum(axis=1)

    tr = om.trace(f, Tensor.zeros(DType.F32, 3, 7, 4), "batch", "seq", None)
    m = to_onnx(tr.graph)
    assert {"Div", "Mod"} <= {n.op_type for n in m.graph.node}
    sess = _ort(m)
    g = from_onnx(m)
    for shape in [(2, 6, 4), (4, 9, 4), (1, 2, 4)]:
        x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
        want = f(Tensor.from_numpy(x)).numpy()
        _close(sess.run(None, {"input": x})[0], want)
        _close(_session_run(g, x), want)
