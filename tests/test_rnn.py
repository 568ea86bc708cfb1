"""lstm / gru ops and om.nn.LSTM / GRU: what the generic op tests do not reach (empty sequences,
errors, dropout between layers, ONNX nodes laid out as other exporters write them)."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.errors import ArgumentError, OneModelError, OpError
from onemodel.testing.rnn_reference import gru as ref_gru
from onemodel.testing.rnn_reference import lstm as ref_lstm

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from onemodel.formats.onnx_export import to_onnx  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError  # noqa: E402
from onemodel.formats.onnx_import import from_onnx as _graph_from_onnx  # noqa: E402
from onemodel.runtime.traced_model import TracedModel  # noqa: E402


def from_onnx(model) -> TracedModel:
    return TracedModel(_graph_from_onnx(model))


def _r(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_empty_sequence_returns_the_initial_state():
    rng = np.random.default_rng(0)
    h0, c0 = _r(rng, 2, 3), _r(rng, 2, 3)
    y, h, c = om.ops.lstm(np.zeros((0, 2, 4), np.float32), _r(rng, 12, 4), _r(rng, 12, 3),
                          None, None, h0, c0)
    assert y.shape == (0, 2, 3)
    np.testing.assert_array_equal(h.numpy(), h0)
    np.testing.assert_array_equal(c.numpy(), c0)
    y, h = om.ops.gru(np.zeros((0, 2, 4), np.float32), _r(rng, 9, 4), _r(rng, 9, 3))
    assert y.shape == (0, 2, 3)
    np.testing.assert_array_equal(h.numpy(), 0)


@pytest.mark.parametrize("bad,match", [
    (dict(x=(5, 4)), "must be \\(seq, batch, input_size\\)"),
    (dict(w_ih=(12, 5)), "columns of w_ih"),
    (dict(w_hh=(11, 3)), "rows of w_hh"),
    (dict(h0=(3, 3)), "batch of h0"),
    (dict(c0=(2, 4)), "hidden size of c0"),
])
def test_op_errors_name_the_input(bad, match):
    rng = np.random.default_rng(1)
    shapes = dict(x=(5, 2, 4), w_ih=(12, 4), w_hh=(12, 3), h0=(2, 3), c0=(2, 3))
    shapes.update(bad)
    a = {k: _r(rng, *v) for k, v in shapes.items()}
    with pytest.raises(OpError, match=match):
        om.ops.lstm(a["x"], a["w_ih"], a["w_hh"], None, None, a["h0"], a["c0"])


def test_integer_input_is_refused():
    with pytest.raises(OpError, match="floating-point"):
        om.ops.gru(np.zeros((2, 1, 3), np.int64), np.zeros((6, 3)), np.zeros((6, 2)))


def test_module_argument_errors():
    with pytest.raises(ArgumentError, match="proj_size"):
        om.nn.LSTM(3, 4, proj_size=2)
    with pytest.raises(ArgumentError, match="hidden_size"):
        om.nn.GRU(3, 0)
    with pytest.raises(ArgumentError, match="dropout"):
        om.nn.GRU(3, 4, dropout=1.5)
    lstm = om.nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(ArgumentError, match="input_size=3"):
        lstm(Tensor.zeros(DType.F32, 5, 2, 4))
    with pytest.raises(ArgumentError, match="num_layers \\* num_directions = 2"):
        lstm(Tensor.zeros(DType.F32, 5, 2, 3), (Tensor.zeros(DType.F32, 1, 2, 4),
                                               Tensor.zeros(DType.F32, 1, 2, 4)))
    with pytest.raises(ArgumentError, match="pair"):
        lstm(Tensor.zeros(DType.F32, 5, 2, 3), Tensor.zeros(DType.F32, 2, 2, 4))


def test_state_dict_layout_is_pytorchs():
    m = om.nn.GRU(3, 4, num_layers=2, bidirectional=True, bias=False)
    shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert shapes == {"weight_ih_l0": (12, 3), "weight_hh_l0": (12, 4),
                      "weight_ih_l0_reverse": (12, 3), "weight_hh_l0_reverse": (12, 4),
                      "weight_ih_l1": (12, 8), "weight_hh_l1": (12, 4),
                      "weight_ih_l1_reverse": (12, 8), "weight_hh_l1_reverse": (12, 4)}
    bound = 1 / np.sqrt(4)
    assert all(np.abs(p.numpy()).max() <= bound for p in m.parameters())


def test_dropout_acts_between_layers_in_training_only():
    om.manual_seed(0)
    m = om.nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = Tensor.randn(DType.F32, 6, 2, 3, seed=1)
    m.eval()
    a, b = m(x)[0].numpy(), m(x)[0].numpy()
    np.testing.assert_array_equal(a, b)
    m.train()
    assert not np.allclose(m(x)[0].numpy(), a)
    single = om.nn.LSTM(3, 4, num_layers=1, dropout=0.5)  # no layer after the last: no dropout
    np.testing.assert_array_equal(single(x)[0].numpy(), single.eval()(x)[0].numpy())


def test_module_matches_the_reference_layer_by_layer():
    rng = np.random.default_rng(2)
    m = om.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True).eval()
    x = _r(rng, 2, 5, 3)
    out, (h_n, c_n) = m(x)
    p = {k: v.numpy().astype(np.float64) for k, v in m.state_dict().items()}
    layer_in = x.transpose(1, 0, 2).astype(np.float64)
    hs, cs = [], []
    for layer in range(2):
        ys = []
        for sfx, rev in (("", False), ("_reverse", True)):
            k = f"_l{layer}{sfx}"
            y, h, c = ref_lstm(layer_in, p["weight_ih" + k], p["weight_hh" + k],
                               p["bias_ih" + k], p["bias_hh" + k], reverse=rev)
            ys.append(y)
            hs.append(h)
            cs.append(c)
        layer_in = np.concatenate(ys, axis=2)
    np.testing.assert_allclose(out.numpy(), layer_in.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h_n.numpy(), np.stack(hs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c_n.numpy(), np.stack(cs), rtol=1e-5, atol=1e-6)


# -- ONNX nodes as other exporters write them ---------------------------------------------------
def _onnx_rnn(op_type, x_shape, hidden, direction, layout=0, extra_attrs=None, seed=3,
              with_state=True):
    """A one-node ONNX model of ``op_type`` with random weights (ONNX's gate order)."""
    rng = np.random.default_rng(seed)
    gates = 4 if op_type == "LSTM" else 3
    dirs = 2 if direction == "bidirectional" else 1
    size = x_shape[-1]
    batch = x_shape[0] if layout else x_shape[1]
    inits = {"W": _r(rng, dirs, gates * hidden, size) * 0.5,
             "R": _r(rng, dirs, gates * hidden, hidden) * 0.5,
             "B": _r(rng, dirs, 2 * gates * hidden) * 0.5}
    state_shape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    ins = ["X", "W", "R", "B", ""]
    feeds = {"X": _r(rng, *x_shape)}
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x_shape))]
    if with_state:
        states = ["initial_h"] + (["initial_c"] if op_type == "LSTM" else [])
        for s in states:
            feeds[s] = _r(rng, *state_shape)
            graph_inputs.append(helper.make_tensor_value_info(s, TensorProto.FLOAT,
                                                              list(state_shape)))
        ins += states
    outs = ["Y", "Y_h"] + (["Y_c"] if op_type == "LSTM" else [])
    node = helper.make_node(op_type, ins, outs, hidden_size=hidden, direction=direction,
                            layout=layout, **(extra_attrs or {}))
    graph = helper.make_graph(
        [node], "rnn", graph_inputs,
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    return model, feeds, inits


def _ort(model, feeds):
    if any(a.name == "layout" and a.i == 1 for n in model.graph.node for a in n.attribute):
        # ONNX Runtime refuses batch-major recurrences: onnx's reference evaluator then
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(model).run(None, feeds)
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.mark.parametrize("op_type", ["LSTM", "GRU"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_onnx_node_matches_onnxruntime(op_type, direction, layout):
    x_shape = (3, 5, 2) if layout else (5, 3, 2)
    model, feeds, _ = _onnx_rnn(op_type, x_shape, 4, direction, layout)
    want = _ort(model, feeds)
    traced = from_onnx(model)
    for backend in om.backends():
        with traced.create_session(backend=backend) as s:
            got = s.run(feeds)
        for name, w in zip(traced.output_names, want):
            np.testing.assert_allclose(got[name].numpy(), w, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{op_type} {direction} layout={layout} "
                                               f"{backend} {name}")


def test_onnx_gru_default_reset_matches_onnxruntime_and_reference():
    model, feeds, inits = _onnx_rnn("GRU", (4, 2, 3), 3, "forward", with_state=False)
    want = _ort(model, feeds)
    got = from_onnx(model)(Tensor.from_numpy(feeds["X"]))
    np.testing.assert_allclose(got[0].numpy(), want[0], rtol=1e-5, atol=1e-5)
    # the same in PyTorch's gate order through the reference (z, r, h -> r, z, n)
    perm = np.r_[3:6, 0:3, 6:9]
    w, r, b = inits["W"][0][perm], inits["R"][0][perm], inits["B"][0]
    y, _ = ref_gru(feeds["X"], w, r, b[:9][perm], b[9:][perm], linear_before_reset=False)
    np.testing.assert_allclose(got[0].numpy()[:, 0], y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs,match", [
    ({"clip": 1.0}, "clip"),
    ({"activations": ["Relu", "Tanh", "Tanh"]}, "activations"),
    ({"input_forget": 1}, "input_forget"),
])
def test_onnx_variants_we_do_not_compute_are_refused(attrs, match):
    model, _, _ = _onnx_rnn("LSTM", (3, 2, 2), 2, "forward", extra_attrs=attrs)
    with pytest.raises(OnnxUnsupportedError, match=match):
        from_onnx(model)


def test_onnx_default_activations_spelled_out_are_accepted():
    attrs = {"activations": ["Sigmoid", "Tanh", "Sigmoid", "Tanh"]}
    model, feeds, _ = _onnx_rnn("GRU", (3, 2, 2), 2, "bidirectional", extra_attrs=attrs)
    want = _ort(model, feeds)
    got = from_onnx(model)(*(Tensor.from_numpy(feeds[k]) for k in ("X", "initial_h")))
    np.testing.assert_allclose(got[0].numpy(), want[0], rtol=1e-5, atol=1e-5)


def test_traced_module_exports_and_runs_in_onnxruntime_at_other_sizes():
    ort = pytest.importorskip("onnxruntime")
    om.manual_seed(4)
    m = om.nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True).eval()
    traced = m.trace(Tensor.randn(DType.F32, 2, 5, 3, seed=1), "batch", "seq", None)
    proto = to_onnx(traced)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    back = from_onnx(proto)
    for batch, seq in ((3, 7), (1, 2)):
        x = Tensor.randn(DType.F32, batch, seq, 3, seed=batch)
        want = m(x)
        got = sess.run(None, {"input": x.numpy()})
        again = back(x)
        for w, g, a in zip((want[0], want[1]), got, again):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(a.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)
    assert [n.op_type for n in proto.graph.node].count("GRU") == 4


def test_unsupported_error_is_a_onemodel_error():
    assert issubclass(OnnxUnsupportedError, OneModelError)
