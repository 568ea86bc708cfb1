"""RNN, the cells, the transformer decoder and Transformer, EmbeddingBag and Bilinear (issue 24):
numpy references (tests/references/seq_layers.py), finite-difference gradients in float64,
traces with symbolic batch and sequence on every backend, ONNX export checked by onnxruntime
and imported back, argument errors and PyTorch's state_dict layout and repr."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.errors import ArgumentError, OneModelError, TraceException
from tests.references import seq_layers as ref

nn = om.nn


def _r(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _params(m):
    return {k: v.numpy().astype(np.float64) for k, v in m.state_dict().items()}


def _close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got.numpy() if isinstance(got, Tensor) else got),
                               want, rtol=tol, atol=tol)


# -- finite differences -------------------------------------------------------------------------
def _fd_check(module, inputs, grad_inputs=(0,), eps=1e-6, tol=1e-5, seed=0):
    """Autograd against central differences of ``sum(out * r)``, for every parameter and for the
    float inputs named by position in ``grad_inputs`` (module and inputs in float64)."""
    module.eval()
    rng = np.random.default_rng(seed)
    arrays = [np.array(a) for a in inputs]
    first = module(*[Tensor.from_numpy(a) for a in arrays])
    outs = first if isinstance(first, tuple) else (first,)
    weights = [rng.standard_normal(tuple(o.shape)) for o in outs]

    def loss_value():
        res = module(*[Tensor.from_numpy(a) for a in arrays])
        res = res if isinstance(res, tuple) else (res,)
        return sum(float((o.numpy() * w).sum()) for o, w in zip(res, weights))

    tensors = [Tensor.from_numpy(a.copy()) for a in arrays]
    for k in grad_inputs:
        tensors[k].requires_grad_()
    module.zero_grad()
    res = module(*tensors)
    res = res if isinstance(res, tuple) else (res,)
    loss = None
    for o, w in zip(res, weights):
        term = (o * Tensor.from_numpy(w)).sum()
        loss = term if loss is None else loss + term
    loss.backward()

    def numeric(data):
        grad = np.zeros_like(data)
        flat, g = data.reshape(-1), grad.reshape(-1)
        for i in range(flat.size):
            keep = flat[i]
            flat[i] = keep + eps
            up = loss_value()
            flat[i] = keep - eps
            down = loss_value()
            flat[i] = keep
            g[i] = (up - down) / (2 * eps)
        return grad

    for k in grad_inputs:
        np.testing.assert_allclose(tensors[k].grad.numpy(), numeric(arrays[k]), rtol=tol,
                                   atol=tol, err_msg=f"input {k}")
    for name, p in module.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), numeric(p._data), rtol=tol, atol=tol,
                                   err_msg=name)


# -- every backend, ONNX Runtime, ONNX import ---------------------------------------------------
def _everywhere(traced, fn, feeds_list):
    """The traced model on every backend, in onnxruntime and imported back from its ONNX, each
    at sizes other than the example's, against ``fn`` (the eager module) on the same feeds."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onemodel.formats.onnx_export import to_onnx
    from onemodel.formats.onnx_import import from_onnx
    from onemodel.runtime.traced_model import TracedModel

    proto = to_onnx(traced)
    onnx.checker.check_model(proto)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    back = TracedModel(from_onnx(proto))
    for feeds in feeds_list:
        want = fn(*[Tensor.from_numpy(v) for v in feeds.values()])
        want = [w.numpy() for w in (want if isinstance(want, tuple) else (want,))]
        for backend in om.backends():
            with traced.create_session(backend=backend) as s:
                got = s.run(feeds)
            for name, w in zip(traced.output_names, want):
                _close(got[name], w, 1e-4)
        for g, w in zip(sess.run(None, feeds), want):
            _close(g, w, 1e-4)
        again = back(*[Tensor.from_numpy(v) for v in feeds.values()])
        for g, w in zip(again if isinstance(again, tuple) else (again,), want):
            _close(g, w, 1e-4)
    return proto


# == RNN ========================================================================================
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("bias", [True, False])
def test_rnn_matches_the_reference_layer_by_layer(nonlinearity, bias):
    rng = np.random.default_rng(1)
    m = nn.RNN(3, 4, num_layers=2, nonlinearity=nonlinearity, bias=bias, batch_first=True,
               bidirectional=True)
    x, h0 = _r(rng, 2, 5, 3), _r(rng, 4, 2, 4)
    out, h_n = m(x, h0)
    p = _params(m)
    layer_in, finals = x.transpose(1, 0, 2).astype(np.float64), []
    for layer in range(2):
        ys = []
        for d, sfx in enumerate(("", "_reverse")):
            k = f"_l{layer}{sfx}"
            y, h = ref.rnn_layer(layer_in, p["weight_ih" + k], p["weight_hh" + k],
                                 p.get("bias_ih" + k), p.get("bias_hh" + k),
                                 h0[2 * layer + d], nonlinearity, reverse=d == 1)
            ys.append(y)
            finals.append(h)
        layer_in = np.concatenate(ys, axis=2)
    _close(out, layer_in.transpose(1, 0, 2))
    _close(h_n, np.stack(finals))


def test_rnn_without_state_and_unbatched():
    rng = np.random.default_rng(2)
    for nonlinearity in ("tanh", "relu"):
        m = nn.RNN(3, 4, nonlinearity=nonlinearity)
        x = _r(rng, 6, 3)
        out, h_n = m(x)
        p = _params(m)
        y, h = ref.rnn_layer(x[:, None], p["weight_ih_l0"], p["weight_hh_l0"], p["bias_ih_l0"],
                             p["bias_hh_l0"], nonlinearity=nonlinearity)
        assert out.shape == (6, 4) and h_n.shape == (1, 4)
        _close(out, y[:, 0])
        _close(h_n, h)


def test_rnn_state_dict_layout_and_init_are_pytorchs():
    m = nn.RNN(3, 5, 2, "relu", bidirectional=True)
    shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert list(shapes)[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert shapes["weight_ih_l1_reverse"] == (5, 10) and shapes["bias_hh_l1"] == (5,)
    assert len(shapes) == 16
    assert all(np.abs(p.numpy()).max() <= 1 / np.sqrt(5) for p in m.parameters())


def test_rnn_dropout_between_layers_in_training_only():
    om.manual_seed(0)
    m = nn.RNN(3, 4, num_layers=2, dropout=0.5)
    x = Tensor.randn(DType.F32, 6, 2, 3, seed=1)
    m.eval()
    a = m(x)[0].numpy()
    np.testing.assert_array_equal(a, m(x)[0].numpy())
    m.train()
    assert not np.allclose(m(x)[0].numpy(), a)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_gradients_match_finite_differences(nonlinearity):
    om.manual_seed(3)
    m = nn.RNN(2, 3, num_layers=2, nonlinearity=nonlinearity, bidirectional=True,
               dtype=DType.F64)
    rng = np.random.default_rng(3)
    _fd_check(m, [rng.standard_normal((3, 2, 2)), rng.standard_normal((4, 2, 3))],
              grad_inputs=(0, 1))


def test_rnn_tanh_traces_with_symbolic_batch_and_sequence():
    om.manual_seed(4)
    m = nn.RNN(3, 4, num_layers=2, bidirectional=True, batch_first=True).eval()
    traced = m.trace(Tensor.randn(DType.F32, 2, 5, 3, seed=1), "batch", "seq", None)
    assert [n.op for n in traced.graph.nodes].count("gru") == 4   # no node per time step
    rng = np.random.default_rng(5)
    proto = _everywhere(traced, m, [{"input": _r(rng, 3, 7, 3)}, {"input": _r(rng, 1, 2, 3)}])
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param for d in dims[:2]] == ["batch", "seq"]


def test_rnn_relu_traces_with_symbolic_batch_and_refuses_a_symbolic_sequence():
    om.manual_seed(5)
    m = nn.RNN(3, 4, nonlinearity="relu").eval()
    x = Tensor.randn(DType.F32, 5, 2, 3, seed=1)
    traced = m.trace(x, None, "batch", None)
    rng = np.random.default_rng(6)
    _everywhere(traced, m, [{"input": _r(rng, 5, 6, 3)}])
    with pytest.raises(TraceException, match="nonlinearity='relu'.*sequence length"):
        m.trace(x, "seq", "batch", None)


def test_rnn_argument_errors_name_the_layer_and_argument():
    with pytest.raises(ArgumentError, match="RNN: nonlinearity must be 'tanh' or 'relu'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ArgumentError, match="RNN: hidden_size"):
        nn.RNN(3, 0)
    with pytest.raises(ArgumentError, match="RNN: dropout"):
        nn.RNN(3, 4, dropout=-0.1)
    m = nn.RNN(3, 4)
    with pytest.raises(ArgumentError, match="RNN: input has 2 features"):
        m(Tensor.zeros(DType.F32, 5, 1, 2))
    with pytest.raises(ArgumentError, match="num_layers \\* num_directions = 1"):
        m(Tensor.zeros(DType.F32, 5, 1, 3), Tensor.zeros(DType.F32, 2, 1, 4))


# == cells ======================================================================================
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
def test_cells_match_the_references(bias, with_state):
    rng = np.random.default_rng(7)
    x = _r(rng, 3, 4)
    h, c = (_r(rng, 3, 5), _r(rng, 3, 5)) if with_state else (None, None)
    h_ref, c_ref = (h, c) if with_state else (np.zeros((3, 5)), np.zeros((3, 5)))
    for nonlinearity in ("tanh", "relu"):
        cell = nn.RNNCell(4, 5, bias=bias, nonlinearity=nonlinearity)
        p = _params(cell)
        _close(cell(x, h), ref.rnn_cell(x, h_ref, p["weight_ih"], p["weight_hh"],
                                        p.get("bias_ih"), p.get("bias_hh"), nonlinearity))
    cell = nn.LSTMCell(4, 5, bias=bias)
    p = _params(cell)
    got_h, got_c = cell(x, (h, c) if with_state else None)
    want_h, want_c = ref.lstm_cell(x, h_ref, c_ref, p["weight_ih"], p["weight_hh"],
                                   p.get("bias_ih"), p.get("bias_hh"))
    _close(got_h, want_h)
    _close(got_c, want_c)
    cell = nn.GRUCell(4, 5, bias=bias)
    p = _params(cell)
    _close(cell(x, h), ref.gru_cell(x, h_ref, p["weight_ih"], p["weight_hh"], p.get("bias_ih"),
                                    p.get("bias_hh")))


def test_cells_take_unbatched_input():
    rng = np.random.default_rng(8)
    x, h = _r(rng, 4), _r(rng, 5)
    cell = nn.GRUCell(4, 5)
    out = cell(x, h)
    assert out.shape == (5,)
    _close(out, cell(x[None], h[None]).numpy()[0])
    new_h, new_c = nn.LSTMCell(4, 5)(x)
    assert new_h.shape == new_c.shape == (5,)
    with pytest.raises(ArgumentError, match="GRUCell: hx must be 1-D"):
        cell(x, h[None])
    with pytest.raises(ArgumentError, match="RNNCell: Expected input to be 1D or 2D"):
        nn.RNNCell(4, 5)(Tensor.zeros(DType.F32, 2, 3, 4))


def test_cell_parameters_are_pytorchs():
    for cls, g in ((nn.RNNCell, 1), (nn.LSTMCell, 4), (nn.GRUCell, 3)):
        cell = cls(3, 6)
        assert {k: tuple(v.shape) for k, v in cell.state_dict().items()} == {
            "weight_ih": (g * 6, 3), "weight_hh": (g * 6, 6), "bias_ih": (g * 6,),
            "bias_hh": (g * 6,)}
        assert all(np.abs(p.numpy()).max() <= 1 / np.sqrt(6) for p in cell.parameters())
        assert list(cls(3, 6, bias=False).state_dict()) == ["weight_ih", "weight_hh"]


def test_cell_gradients_match_finite_differences():
    rng = np.random.default_rng(9)
    x, h, c = (rng.standard_normal((2, 3)) for _ in range(3))
    om.manual_seed(9)
    _fd_check(nn.RNNCell(3, 3, nonlinearity="relu", dtype=DType.F64), [x, h], (0, 1))
    _fd_check(nn.GRUCell(3, 3, dtype=DType.F64), [x, h], (0, 1))

    class Pair(om.nn.NnModule):
        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(3, 3, dtype=DType.F64)

        def forward(self, x, h, c):
            return self.cell(x, (h, c))

    _fd_check(Pair(), [x, h, c], (0, 1, 2))


def test_cells_trace_with_a_symbolic_batch_and_export():
    om.manual_seed(10)
    rng = np.random.default_rng(10)
    lstm, gru, rnn = nn.LSTMCell(3, 4), nn.GRUCell(3, 4), nn.RNNCell(3, 4, nonlinearity="relu")

    def step(x, h, c):
        h1, c1 = lstm(x, (h, c))
        return h1, c1, gru(x, h), rnn(x, h), gru(x)

    spec = {"x": (Tensor.randn(DType.F32, 2, 3, seed=1), "batch", None),
            "h": (Tensor.randn(DType.F32, 2, 4, seed=2), "batch", None),
            "c": (Tensor.randn(DType.F32, 2, 4, seed=3), "batch", None)}
    traced = om.trace(step, spec)
    _everywhere(traced, step, [{"x": _r(rng, 5, 3), "h": _r(rng, 5, 4), "c": _r(rng, 5, 4)}])


def test_cell_argument_errors_name_the_layer_and_argument():
    with pytest.raises(ArgumentError, match="RNNCell: nonlinearity"):
        nn.RNNCell(3, 4, nonlinearity="gelu")
    with pytest.raises(ArgumentError, match="LSTMCell: input_size"):
        nn.LSTMCell(0, 4)
    with pytest.raises(ArgumentError, match="GRUCell: bias must be True or False"):
        nn.GRUCell(3, 4, bias="yes")
    with pytest.raises(ArgumentError, match="LSTMCell: hx must be a pair"):
        nn.LSTMCell(3, 4)(Tensor.zeros(DType.F32, 2, 3), Tensor.zeros(DType.F32, 2, 4))
    with pytest.raises(ArgumentError, match="GRUCell: input has 2 features"):
        nn.GRUCell(3, 4)(Tensor.zeros(DType.F32, 2, 2))


# == transformer ================================================================================
def _bool_mask(rng, *shape):
    m = rng.random(shape) < 0.3
    m[..., 0] = False   # every row attends somewhere
    return m


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_decoder_layer_matches_the_reference(norm_first, activation):
    rng = np.random.default_rng(11)
    om.manual_seed(11)
    m = nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, activation=activation,
                                   batch_first=True, norm_first=norm_first).eval()
    for p in m.parameters():   # norms and biases away from 1 and 0
        p._data[...] = p._data + rng.uniform(-0.2, 0.2, p._data.shape)
    tgt, mem = _r(rng, 2, 5, 8), _r(rng, 2, 6, 8)
    tgt_mask = np.triu(np.full((5, 5), -np.inf, np.float32), 1)
    mem_mask = np.where(rng.random((5, 6)) < 0.2, -1.5, 0.0).astype(np.float32)
    tkp, mkp = _bool_mask(rng, 2, 5), _bool_mask(rng, 2, 6)
    got = m(tgt, mem, tgt_mask=tgt_mask, memory_mask=mem_mask, tgt_key_padding_mask=tkp,
            memory_key_padding_mask=mkp)
    want = ref.decoder_layer(tgt, mem, _params(m), 2, norm_first, activation, tgt_mask,
                             mem_mask, tkp, mkp)
    _close(got, want, 1e-4)


def test_is_causal_builds_the_causal_mask():
    rng = np.random.default_rng(12)
    om.manual_seed(12)
    m = nn.TransformerDecoderLayer(8, 2, 16).eval()      # sequence first
    tgt, mem = _r(rng, 5, 2, 8), _r(rng, 4, 2, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    np.testing.assert_array_equal(mask.numpy(), np.triu(np.full((5, 5), -np.inf), 1))
    _close(m(tgt, mem, tgt_is_causal=True), m(tgt, mem, tgt_mask=mask).numpy())
    enc = nn.TransformerEncoderLayer(8, 2, 16).eval()
    _close(enc(tgt, is_causal=True), enc(tgt, src_mask=mask).numpy())
    assert not np.allclose(m(tgt, mem).numpy(), m(tgt, mem, tgt_mask=mask).numpy())
    with pytest.raises(ArgumentError, match="memory_is_causal"):
        m(tgt, mem, memory_is_causal=True)


def test_transformer_is_its_encoder_then_its_decoder():
    rng = np.random.default_rng(13)
    om.manual_seed(13)
    t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                       dim_feedforward=12, batch_first=True).eval()
    src, tgt = _r(rng, 2, 6, 8), _r(rng, 2, 4, 8)
    src_kp = _bool_mask(rng, 2, 6)
    tgt_mask = np.triu(np.full((4, 4), -np.inf, np.float32), 1)
    got = t(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=src_kp,
            memory_key_padding_mask=src_kp)
    p = _params(t)

    def sub(prefix):
        return {k[len(prefix):]: v for k, v in p.items() if k.startswith(prefix)}

    mem = src.astype(np.float64)
    for k in range(2):
        mem = ref.encoder_layer(mem, sub(f"encoder.layers.{k}."), 2, key_padding=src_kp)
    mem = ref.layer_norm(mem, p["encoder.norm.weight"], p["encoder.norm.bias"])
    x = tgt.astype(np.float64)
    for k in range(2):
        x = ref.decoder_layer(x, mem, sub(f"decoder.layers.{k}."), 2, tgt_mask=tgt_mask,
                              memory_key_padding=src_kp)
    x = ref.layer_norm(x, p["decoder.norm.weight"], p["decoder.norm.bias"])
    _close(got, x, 1e-4)


def test_transformer_state_dict_names_are_pytorchs():
    t = nn.Transformer(8, 2, 1, 1, 16)
    keys = list(t.state_dict())
    assert keys[:4] == ["encoder.layers.0.self_attn.in_proj_weight",
                        "encoder.layers.0.self_attn.in_proj_bias",
                        "encoder.layers.0.self_attn.out_proj.weight",
                        "encoder.layers.0.self_attn.out_proj.bias"]
    for k in ("encoder.norm.weight", "decoder.layers.0.multihead_attn.in_proj_weight",
              "decoder.layers.0.norm3.bias", "decoder.norm.bias",
              "decoder.layers.0.linear2.weight"):
        assert k in keys
    assert len(keys) == 12 + 18 + 4   # encoder layer, decoder layer, the two final norms
    again = nn.Transformer(8, 2, 1, 1, 16)
    again.load_state_dict(t.state_dict())
    for k, v in again.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), t.state_dict()[k].numpy())
    # every matrix is xavier-uniform: within sqrt(6 / (fan_in + fan_out))
    w = t.state_dict()["decoder.layers.0.linear1.weight"].numpy()
    assert np.abs(w).max() <= np.sqrt(6 / (8 + 16))


def test_decoder_dropout_acts_in_training_only():
    om.manual_seed(14)
    m = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.5), 2)
    tgt, mem = Tensor.randn(DType.F32, 4, 2, 8, seed=1), Tensor.randn(DType.F32, 3, 2, 8, seed=2)
    m.eval()
    a = m(tgt, mem).numpy()
    np.testing.assert_array_equal(a, m(tgt, mem).numpy())
    m.train()
    assert not np.allclose(m(tgt, mem).numpy(), a)


def test_decoder_layer_gradients_match_finite_differences():
    om.manual_seed(15)
    m = nn.TransformerDecoderLayer(4, 2, dim_feedforward=6, dropout=0.0, batch_first=True,
                                   dtype=DType.F64)
    rng = np.random.default_rng(15)
    _fd_check(m, [rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 2, 4))], (0, 1),
              tol=2e-5)


def test_transformer_traces_with_symbolic_batch_and_sequences():
    om.manual_seed(16)
    t = nn.Transformer(8, 2, 1, 2, 12, batch_first=True).eval()

    def fn(src, tgt):
        return t(src, tgt, tgt_is_causal=True)

    spec = {"src": (Tensor.randn(DType.F32, 3, 5, 8, seed=1), "batch", "src_len", None),
            "tgt": (Tensor.randn(DType.F32, 3, 7, 8, seed=2), "batch", "tgt_len", None)}
    traced = om.trace(fn, spec)
    rng = np.random.default_rng(16)
    _everywhere(traced, fn, [{"src": _r(rng, 2, 9, 8), "tgt": _r(rng, 2, 4, 8)},
                             {"src": _r(rng, 1, 2, 8), "tgt": _r(rng, 1, 6, 8)}])


def test_transformer_argument_errors_name_the_layer_and_argument():
    with pytest.raises(ArgumentError, match="TransformerDecoderLayer: d_model \\(6\\) must be "
                                            "divisible by nhead \\(4\\)"):
        nn.TransformerDecoderLayer(6, 4)
    with pytest.raises(ArgumentError, match="TransformerDecoderLayer: activation should be "
                                            "relu/gelu, not 'tanh'"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")
    with pytest.raises(ArgumentError, match="TransformerEncoderLayer: dim_feedforward"):
        nn.TransformerEncoderLayer(8, 2, dim_feedforward=0)
    with pytest.raises(ArgumentError, match="Transformer: nhead"):
        nn.Transformer(8, 0)
    with pytest.raises(ArgumentError, match="Transformer: dropout"):
        nn.Transformer(8, 2, dropout=2.0)
    with pytest.raises(ArgumentError, match="TransformerDecoder: num_layers"):
        nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2), -1)
    with pytest.raises(ArgumentError, match="TransformerEncoder: encoder_layer must be a module"):
        nn.TransformerEncoder("layer", 2)
    t = nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(ArgumentError, match="the batch number of src \\(2\\) and tgt \\(3\\)"):
        t(Tensor.zeros(DType.F32, 4, 2, 8), Tensor.zeros(DType.F32, 4, 3, 8))
    with pytest.raises(ArgumentError, match="feature number of tgt \\(6\\)"):
        t(Tensor.zeros(DType.F32, 4, 2, 8), Tensor.zeros(DType.F32, 4, 2, 6))


def test_activation_may_be_a_callable_or_a_module():
    om.manual_seed(17)
    a = nn.TransformerDecoderLayer(8, 2, 16, activation=nn.GELU()).eval()
    b = nn.TransformerDecoderLayer(8, 2, 16, activation="gelu").eval()
    b.load_state_dict(a.state_dict())
    tgt, mem = Tensor.randn(DType.F32, 3, 2, 8, seed=1), Tensor.randn(DType.F32, 4, 2, 8, seed=2)
    _close(a(tgt, mem), b(tgt, mem).numpy())
    c = nn.TransformerDecoderLayer(8, 2, 16, activation=om.ops.relu).eval()
    assert c(tgt, mem).shape == (3, 2, 8)


# == EmbeddingBag ===============================================================================
BAGS = [[1, 4, 4], [], [0, 9], [5, 0, 2, 7]]


def _flat(bags):
    flat = np.array([i for b in bags for i in b], np.int64)
    offsets = np.cumsum([0] + [len(b) for b in bags[:-1]]).astype(np.int64)
    return flat, offsets


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 0])
def test_embedding_bag_with_offsets_matches_the_reference(mode, padding_idx):
    om.manual_seed(18)
    bag = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx)
    flat, offsets = _flat(BAGS)
    want = ref.embedding_bag(bag.weight.numpy(), BAGS, mode, padding_idx=padding_idx)
    _close(bag(flat, offsets), want)
    closed = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx,
                             include_last_offset=True)
    closed.load_state_dict(bag.state_dict())
    _close(closed(flat, np.append(offsets, len(flat))), want)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_rows_match_the_reference(mode):
    om.manual_seed(19)
    bag = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=2)
    rows = np.array([[1, 2, 3], [2, 2, 2], [9, 9, 4]])
    _close(bag(rows), ref.embedding_bag(bag.weight.numpy(), rows.tolist(), mode, padding_idx=2))
    assert np.all(bag.weight.numpy()[2] == 0)


def test_embedding_bag_per_sample_weights_for_sum():
    rng = np.random.default_rng(20)
    bag = nn.EmbeddingBag(10, 3, mode="sum")
    flat, offsets = _flat(BAGS)
    w = rng.standard_normal(len(flat)).astype(np.float32)
    split = np.split(w, offsets[1:])
    _close(bag(flat, offsets, per_sample_weights=w),
           ref.embedding_bag(bag.weight.numpy(), BAGS, "sum", per_sample_weights=split))
    rows, rw = np.array([[1, 2], [3, 3]]), rng.standard_normal((2, 2)).astype(np.float32)
    _close(bag(rows, per_sample_weights=rw),
           ref.embedding_bag(bag.weight.numpy(), rows.tolist(), "sum", per_sample_weights=rw))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradients_match_finite_differences(mode):
    om.manual_seed(21)
    bag = nn.EmbeddingBag(6, 2, mode=mode, padding_idx=1, dtype=DType.F64)
    bag.weight._data[...] += np.arange(12).reshape(6, 2) * 0.37   # no ties for max
    flat, offsets = _flat([[0, 2, 1], [3], [], [5, 4, 5, 2]])
    if mode == "sum":
        w = np.random.default_rng(21).standard_normal(len(flat))
        _fd_check(bag, [flat, offsets, w], grad_inputs=(2,))
    else:
        _fd_check(bag, [flat, offsets], grad_inputs=())


def test_embedding_bag_traces_with_symbolic_lengths():
    om.manual_seed(22)
    bag = nn.EmbeddingBag(10, 3, mode="mean", padding_idx=0)
    most = nn.EmbeddingBag(10, 3, mode="max")

    def fn(flat, offsets):
        return bag(flat, offsets), most(flat, offsets)

    flat, offsets = _flat(BAGS)
    spec = {"flat": (Tensor.from_numpy(flat), "n"), "offsets": (Tensor.from_numpy(offsets), "bags")}
    traced = om.trace(fn, spec)
    other, other_off = _flat([[3], [1, 1, 0, 9, 8], [2, 2]])
    _everywhere(traced, fn, [{"flat": other, "offsets": other_off}])


def test_embedding_bag_from_pretrained_freezes_by_default():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    bag = nn.EmbeddingBag.from_pretrained(table, mode="max")
    assert not bag.weight.requires_grad and bag.mode == "max"
    _close(bag(np.array([[0, 3], [2, 1]])), table[[3, 2]])
    assert nn.EmbeddingBag.from_pretrained(table, freeze=False).weight.requires_grad


def test_embedding_bag_errors():
    with pytest.raises(ArgumentError, match="EmbeddingBag: mode must be"):
        nn.EmbeddingBag(10, 3, mode="min")
    with pytest.raises(ArgumentError, match="EmbeddingBag: padding_idx"):
        nn.EmbeddingBag(10, 3, padding_idx=10)
    with pytest.raises(ArgumentError, match="EmbeddingBag: max_norm"):
        nn.EmbeddingBag(10, 3, max_norm=1.0)
    bag = nn.EmbeddingBag(10, 3)
    with pytest.raises(ArgumentError, match="per_sample_weights are only supported for "
                                            "mode='sum'"):
        bag(np.array([[1, 2]]), per_sample_weights=np.ones((1, 2), np.float32))
    with pytest.raises(ArgumentError, match="offsets must be given"):
        bag(np.array([1, 2]))
    with pytest.raises(ArgumentError, match="offsets must be None"):
        bag(np.array([[1, 2]]), np.array([0]))
    with pytest.raises(ArgumentError, match="offsets\\[0\\] has to be 0"):
        bag(np.array([1, 2]), np.array([1]))
    with pytest.raises(ArgumentError, match="integer indices"):
        bag(np.array([[1.0, 2.0]]))


# == Bilinear ===================================================================================
def test_bilinear_matches_the_reference_and_keeps_leading_axes():
    rng = np.random.default_rng(23)
    m = nn.Bilinear(3, 4, 5)
    x1, x2 = _r(rng, 6, 3), _r(rng, 6, 4)
    p = _params(m)
    _close(m(x1, x2), ref.bilinear(x1, x2, p["weight"], p["bias"]))
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == {
        "weight": (5, 3, 4), "bias": (5,)}
    assert np.abs(m.weight.numpy()).max() <= 1 / np.sqrt(3)
    y = m(x1.reshape(2, 3, 3), x2.reshape(2, 3, 4))
    _close(y, m(x1, x2).numpy().reshape(2, 3, 5))
    plain = nn.Bilinear(3, 4, 5, bias=False)
    _close(plain(x1, x2), ref.bilinear(x1, x2, _params(plain)["weight"]))


def test_bilinear_gradients_traces_and_errors():
    rng = np.random.default_rng(24)
    om.manual_seed(24)
    _fd_check(nn.Bilinear(2, 3, 2, dtype=DType.F64),
              [rng.standard_normal((3, 2)), rng.standard_normal((3, 3))], (0, 1))
    m = nn.Bilinear(3, 4, 5)
    spec = {"a": (Tensor.randn(DType.F32, 2, 3, seed=1), "batch", None),
            "b": (Tensor.randn(DType.F32, 2, 4, seed=2), "batch", None)}
    traced = om.trace(m, spec)
    _everywhere(traced, m, [{"a": _r(rng, 7, 3), "b": _r(rng, 7, 4)}])
    with pytest.raises(ArgumentError, match="Bilinear: in2_features"):
        nn.Bilinear(3, 0, 5)
    with pytest.raises(ArgumentError, match="Bilinear: input2 must end in 4 features"):
        m(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32))


# == repr =======================================================================================
def test_reprs_are_pytorchs():
    assert repr(nn.RNN(3, 4, 2, "relu", batch_first=True)) == \
        "RNN(3, 4, num_layers=2, batch_first=True)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"
    assert repr(nn.LSTMCell(3, 4, bias=False)) == "LSTMCell(3, 4, bias=False)"
    assert repr(nn.GRUCell(3, 4)) == "GRUCell(3, 4)"
    assert repr(nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0)) == \
        "EmbeddingBag(10, 3, mode='sum', padding_idx=0)"
    assert repr(nn.Bilinear(2, 3, 4)) == \
        "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)"
    text = repr(nn.TransformerDecoderLayer(8, 2, 16))
    assert text.startswith("TransformerDecoderLayer(\n  (self_attn): MultiheadAttention(\n")
    assert "\n  (multihead_attn): MultiheadAttention(" in text
    assert "\n    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, " \
        "bias=True)\n" in text
    assert "\n  (norm3): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)" in text
    assert text.endswith("(dropout3): Dropout(p=0.1, inplace=False)\n)")
    stack = repr(nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 3))
    assert stack.startswith("TransformerDecoder(\n  (layers): ModuleList(\n    (0-2): 3 x "
                            "TransformerDecoderLayer(\n")


def test_errors_are_onemodel_errors():
    assert issubclass(ArgumentError, OneModelError) and issubclass(TraceException, OneModelError)
