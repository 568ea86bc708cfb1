"""Shape-like ONNX inputs computed at run time (issue 16): a Reshape target, Slice bounds,
Reduce axes... fed as graph inputs become ``shape_from_data`` nodes whose output sizes are data
sizes, bound when the node runs; sizes computed from input axes used as data are computed at
run time; Clip bounds and Trilu's k fed at run time lower onto elementwise ops. Each model is
run on every backend against ONNX Runtime, at two sets of shape data."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_export import to_onnx  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError, from_onnx  # noqa: E402

F, I = TP.FLOAT, TP.INT64


def _model(node, inputs, n_out=1, opset=21):
    outs = [h.make_empty_tensor_value_info(o) for o in node.output[:n_out]]
    return h.make_model(h.make_graph([node], "g", [h.make_tensor_value_info(n, t, s)
                                                   for n, t, s in inputs], outs),
                        opset_imports=[h.make_opsetid("", opset)])


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _check(model, feed_sets):
    graph = from_onnx(model)
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            for feeds in feed_sets:
                want = _ort(model, feeds)
                got = sess.run(feeds)
                for (name, _), w in zip(graph.outputs, want):
                    g = got[name].numpy()
                    assert g.shape == w.shape and g.dtype == w.dtype, (backend, name, g.shape)
                    np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    return graph


rng = np.random.default_rng(0)
X = rng.standard_normal((2, 3, 4)).astype(np.float32)


def test_reshape_target_fed_at_run_time():
    m = _model(h.make_node("Reshape", ["x", "s"], ["y"]), [("x", F, [2, 3, 4]), ("s", I, [2])])
    g = _check(m, [{"x": X, "s": np.array([4, -1])}, {"x": X, "s": np.array([0, 12])}])
    assert [n.op for n in g.nodes] == ["shape_from_data"]


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_fed_at_run_time(op, keepdims):
    m = _model(h.make_node(op, ["x", "a"], ["y"], keepdims=keepdims),
               [("x", F, [2, 3, 4]), ("a", I, [1])])
    _check(m, [{"x": X, "a": np.array([1])}, {"x": X, "a": np.array([-1])}])


def test_reduce_empty_axes_noop_and_all():
    for noop in (0, 1):
        m = _model(h.make_node("ReduceSum", ["x", "a"], ["y"], noop_with_empty_axes=noop),
                   [("x", F, [2, 3, 4]), ("a", I, [0])])
        _check(m, [{"x": X, "a": np.zeros(0, np.int64)}])


def test_slice_bounds_fed_at_run_time():
    m = _model(h.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"]),
               [("x", F, [2, 3, 4]), ("s", I, [2]), ("e", I, [2]), ("a", I, [2]),
                ("st", I, [2])])
    _check(m, [{"x": X, "s": np.array([0, 3]), "e": np.array([-1, -100]),
                "a": np.array([1, 2]), "st": np.array([1, -2])},
               {"x": X, "s": np.array([-5, 1]), "e": np.array([100, 3]),
                "a": np.array([0, -1]), "st": np.array([1, 1])}])


def test_split_unsqueeze_squeeze_expand_fed_at_run_time():
    m = _model(h.make_node("Split", ["x", "s"], ["p", "q"], axis=2),
               [("x", F, [2, 3, 4]), ("s", I, [2])], n_out=2)
    _check(m, [{"x": X, "s": np.array([1, 3])}, {"x": X, "s": np.array([4, 0])}])
    m = _model(h.make_node("Unsqueeze", ["x", "a"], ["y"]), [("x", F, [2, 3, 4]), ("a", I, [2])])
    _check(m, [{"x": X, "a": np.array([0, -1])}, {"x": X, "a": np.array([2, 1])}])
    one = X[:, :1, None, :1]  # 2 x 1 x 1 x 1
    m = _model(h.make_node("Squeeze", ["x", "a"], ["y"]), [("x", F, [2, 1, 1, 1]), ("a", I, [2])])
    _check(m, [{"x": one, "a": np.array([1, 3])}, {"x": one, "a": np.array([-2, -1])}])
    m = _model(h.make_node("Expand", ["x", "s"], ["y"]), [("x", F, [3, 1]), ("s", I, [3])])
    x = X[0, :, :1].copy()
    _check(m, [{"x": x, "s": np.array([2, 1, 5])}, {"x": x, "s": np.array([1, 3, 1])}])


def test_constant_of_shape_and_range_fed_at_run_time():
    value = h.make_tensor("value", I, [1], [7])
    m = _model(h.make_node("ConstantOfShape", ["s"], ["y"], value=value), [("s", I, [2])])
    _check(m, [{"s": np.array([2, 3])}, {"s": np.array([0, 4])}])
    m = _model(h.make_node("Range", ["a", "b", "c"], ["y"]), [("a", F, []), ("b", F, []),
                                                             ("c", F, [])])
    def f(v):
        return np.array(v, np.float32)

    _check(m, [{"a": f(1), "b": f(4), "c": f(0.5)}, {"a": f(3), "b": f(-2), "c": f(-1.5)}])


def test_clip_bounds_and_trilu_k_fed_at_run_time():
    m = _model(h.make_node("Clip", ["x", "lo", "hi"], ["y"]),
               [("x", F, [2, 3, 4]), ("lo", F, []), ("hi", F, [])])
    x = X.copy()
    x[0, 0, 0] = np.nan
    g = _check(m, [{"x": x, "lo": np.array(-0.5, np.float32), "hi": np.array(0.25, np.float32)}])
    assert "shape_from_data" not in {n.op for n in g.nodes}  # the shape never changes
    for upper in (0, 1):
        m = _model(h.make_node("Trilu", ["x", "k"], ["y"], upper=upper),
                   [("x", F, ["b", 3, 4]), ("k", I, [])])
        _check(m, [{"x": X, "k": np.array(1)}, {"x": X[:1], "k": np.array(-2)}])


def test_sizes_of_input_axes_used_as_data():
    """transformers' legacy exports multiply a size taken from Shape into tensor data: the
    size is computed at run time from the input's axis, valid at every length."""
    nodes = [h.make_node("Shape", ["x"], ["s"]),
             h.make_node("Gather", ["s", "one"], ["n"], axis=0),
             h.make_node("Cast", ["n"], ["nf"], to=F),
             h.make_node("Mul", ["x", "nf"], ["y"])]
    m = h.make_model(h.make_graph(nodes, "g", [h.make_tensor_value_info("x", F, ["b", "seq"])],
                                  [h.make_empty_tensor_value_info("y")],
                                  [h.make_tensor("one", I, [], [1])]),
                     opset_imports=[h.make_opsetid("", 21)])
    x = X[0]
    g = _check(m, [{"x": x}, {"x": X.reshape(4, 6)}])
    assert "shape_from_data" not in {n.op for n in g.nodes}  # a size, not data: no data size


def test_static_shapes_keep_the_compiled_fast_path():
    m = _model(h.make_node("Reshape", ["x", "s"], ["y"]), [("x", F, [2, 3, 4])])
    m.graph.initializer.append(h.make_tensor("s", I, [2], [4, -1]))
    g = from_onnx(m)
    assert [n.op for n in g.nodes] == ["reshape"]
    dyn = from_onnx(_model(h.make_node("Reshape", ["x", "s"], ["y"]),
                           [("x", F, [2, 3, 4]), ("s", I, [2])]))
    for backend in om.backends():
        with om.Session(g, backend=backend) as s1, om.Session(dyn, backend=backend) as s2:
            assert "dynamic plan" not in s1.plan_source({"x": X})
            assert "dynamic plan" in s2.plan_source({"x": X, "s": np.array([4, -1])})


def test_a_result_contradicting_its_declared_shape_is_an_error():
    """The kernel checks its result against the sizes the graph states: a wrong declaration is
    an error naming the node, never a wrong number."""
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(om.OneModelError, match="dims declares"):
        om.ops.shape_from_data(om.Tensor.from_numpy(x), om.Tensor.from_numpy(np.array([3, 2])),
                               kind="Reshape", dims=((2, 3),))
    m = _model(h.make_node("Reshape", ["x", "s"], ["y"]), [("x", F, [2, 3]), ("s", I, [2])])
    with om.Session(from_onnx(m)) as sess:
        with pytest.raises(om.OneModelError, match="shape_from_data"):
            sess.run({"x": x, "s": np.array([7, -1])})


def test_data_sizes_export_back_to_onnx():
    """A graph with data sizes exports: the shape-like input stays an input, and a later size
    that names a data size is read with Shape from the value it sizes."""
    nodes = [h.make_node("Reshape", ["x", "s"], ["r"]), h.make_node("Relu", ["r"], ["y"])]
    m = h.make_model(h.make_graph(nodes, "g", [h.make_tensor_value_info("x", F, [2, 3, 4]),
                                               h.make_tensor_value_info("s", I, [2])],
                                  [h.make_empty_tensor_value_info("y")]),
                     opset_imports=[h.make_opsetid("", 21)])
    g = from_onnx(m)
    back = to_onnx(g)
    onnx.checker.check_model(back, full_check=True)
    feeds = {"x": X, "s": np.array([6, -1])}
    np.testing.assert_array_equal(_ort(back, feeds)[0], np.maximum(X.reshape(6, -1), 0))
    _check(back, [feeds])


def test_a_shape_input_of_unknown_length_is_refused_naming_the_node():
    m = _model(h.make_node("Reshape", ["x", "s"], ["y"], name="the_reshape"),
               [("x", F, [2, 3]), ("s", I, ["n"])])
    with pytest.raises(OnnxUnsupportedError, match="the_reshape.*fixed length"):
        from_onnx(m)


def test_data_sizes_survive_the_onemodel_format(tmp_path):
    m = _model(h.make_node("Reshape", ["x", "s"], ["y"]), [("x", F, ["b", 3]), ("s", I, [2])])
    onnx.save(m, str(tmp_path / "m.onnx"))
    om.load_onnx(str(tmp_path / "m.onnx")).save(str(tmp_path / "m.onemodel"))
    back = om.load(str(tmp_path / "m.onemodel"))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = back(om.Tensor.from_numpy(x), om.Tensor.from_numpy(np.array([2, -1])))
    np.testing.assert_array_equal(y.numpy(), x.reshape(2, 6))
    with back.create_session() as sess:
        assert sess.outputs[0].shape == ("data0", "data1")


# -- ops whose output size the input's values decide (issue 23) --------------------------------
B = TP.BOOL


def _selected(x):
    return {"x": x}


def test_nonzero_imports_and_sizes_its_result_from_the_data():
    m = _model(h.make_node("NonZero", ["x"], ["y"]), [("x", F, [3, 4])])
    a = np.where(rng.standard_normal((3, 4)) > 0, 1.5, 0).astype(np.float32)
    g = _check(m, [{"x": a}, {"x": np.zeros((3, 4), np.float32)}, {"x": np.ones((3, 4), np.float32)}])
    assert [n.op for n in g.nodes] == ["shape_from_data"]


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress_imports_with_and_without_an_axis(axis):
    kw = {} if axis is None else {"axis": axis}
    node = h.make_node("Compress", ["x", "c"], ["y"], **kw)
    size = 12 if axis is None else (3, 4)[axis]
    m = _model(node, [("x", F, [3, 4]), ("c", B, [size])])
    x = rng.standard_normal((3, 4)).astype(np.float32)
    _check(m, [{"x": x, "c": rng.standard_normal(size) > 0}, {"x": x, "c": np.zeros(size, bool)}])


def test_compress_result_feeds_later_ops():
    nodes = [h.make_node("Compress", ["x", "c"], ["s"], axis=0),
             h.make_node("ReduceSum", ["s", "ax"], ["y"], keepdims=0)]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", F, [5, 2]),
                                      h.make_tensor_value_info("c", B, [5])],
                         [h.make_empty_tensor_value_info("y")],
                         initializer=[onnx.numpy_helper.from_array(np.array([1]), "ax")])
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 21)])
    x = rng.standard_normal((5, 2)).astype(np.float32)
    _check(m, [{"x": x, "c": np.array([1, 0, 1, 1, 0], bool)}, {"x": x, "c": np.ones(5, bool)}])


@pytest.mark.parametrize("sorted_", [1, 0])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_unique_imports_all_four_outputs(sorted_, axis):
    kw = {"sorted": sorted_} if axis is None else {"sorted": sorted_, "axis": axis}
    node = h.make_node("Unique", ["x"], ["y", "first", "inverse", "counts"], **kw)
    m = _model(node, [("x", F, [4, 3])], n_out=4)
    x = np.array([[2, 1, 2], [0, 5, 0], [2, 1, 2], [3, 3, 3]], np.float32)
    _check(m, [{"x": x}, {"x": np.ones((4, 3), np.float32)},
               {"x": rng.integers(0, 3, (4, 3)).astype(np.float32)}])


def test_data_dependent_imports_export_again():
    m = _model(h.make_node("Unique", ["x"], ["y", "first", "inverse", "counts"], sorted=0),
               [("x", F, [6])], n_out=4)
    graph = from_onnx(m)
    again = to_onnx(graph)
    x = np.array([3, 1, 3, 2, 1, 0], np.float32)
    for w, g in zip(_ort(m, {"x": x}), _ort(again, {"x": x})):
        np.testing.assert_array_equal(g, w)
