"""The sequence layers of issue 24 against PyTorch itself (skipped without torch): a torch
``state_dict`` loads as it is, outputs and gradients agree, our ``state_dict`` loads back into
torch, and ``repr`` prints the same text."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor

torch = pytest.importorskip("torch")
tnn = torch.nn
nn = om.nn


def _np(t):
    return t.detach().numpy()


def _pair(name, *args, **kwargs):
    torch.manual_seed(0)
    theirs = getattr(tnn, name)(*args, **kwargs)
    ours = getattr(nn, name)(*args, **kwargs)
    ours.load_state_dict(theirs.state_dict())     # torch tensors, torch's names, as they are
    assert list(ours.state_dict()) == list(theirs.state_dict())
    return theirs.eval(), ours.eval()


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _compare(theirs, ours, args, grads=True, tol=1e-5):
    """Same outputs; then the same gradients of sum(out * w) for every parameter and every
    float input."""
    def grad(a):
        return bool(grads and a.dtype.kind == "f")

    def to_torch(a):
        if isinstance(a, list):
            return [to_torch(v) for v in a]
        return torch.tensor(a, requires_grad=grad(a))

    def to_ours(a):
        if isinstance(a, list):
            return [to_ours(v) for v in a]
        t = Tensor.from_numpy(a.copy())
        return t.requires_grad_() if grad(a) else t

    t_args, o_args = [to_torch(a) for a in args], [to_ours(a) for a in args]

    def call(module, call_args):
        return module(*[tuple(a) if isinstance(a, list) else a for a in call_args])

    t_out, o_out = _flat(call(theirs, t_args)), _flat(call(ours, o_args))
    assert len(t_out) == len(o_out)
    for t, o in zip(t_out, o_out):
        np.testing.assert_allclose(o.numpy(), _np(t), rtol=tol, atol=tol)
    if not grads:
        return
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal(tuple(t.shape)).astype(np.float32) for t in t_out]
    sum((t * torch.tensor(w)).sum() for t, w in zip(t_out, ws)).backward()
    total = None
    for o, w in zip(o_out, ws):
        term = (o * Tensor.from_numpy(w)).sum()
        total = term if total is None else total + term
    total.backward()
    for t, o in zip(_flat(t_args), _flat(o_args)):
        if t.requires_grad:
            np.testing.assert_allclose(o.grad.numpy(), _np(t.grad), rtol=1e-4, atol=1e-4)
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), _np(t_params[name].grad), rtol=1e-4,
                                   atol=1e-4, err_msg=name)


def _round_trip(theirs, ours):
    """Our state_dict loads into a fresh torch module, strictly, with the same values."""
    fresh = copy.deepcopy(theirs)
    with torch.no_grad():
        for p in fresh.parameters():
            p.zero_()
    fresh.load_state_dict({k: torch.from_numpy(np.array(v.numpy()))
                           for k, v in ours.state_dict().items()})
    for k, v in fresh.state_dict().items():
        np.testing.assert_array_equal(_np(v), theirs.state_dict()[k].numpy(), err_msg=k)


def _r(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("kwargs", [
    dict(num_layers=2, bidirectional=True),
    dict(nonlinearity="relu", batch_first=True, num_layers=2),
    dict(bias=False, bidirectional=True, nonlinearity="relu"),
])
def test_rnn(kwargs):
    theirs, ours = _pair("RNN", 3, 4, **kwargs)
    rng = np.random.default_rng(1)
    d = 2 if kwargs.get("bidirectional") else 1
    x = _r(rng, 2, 5, 3) if kwargs.get("batch_first") else _r(rng, 5, 2, 3)
    _compare(theirs, ours, [x, _r(rng, kwargs.get("num_layers", 1) * d, 2, 4)])
    _compare(theirs, ours, [x])
    _compare(theirs, ours, [_r(rng, 5, 3)], grads=False)        # unbatched
    _round_trip(theirs, ours)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells(name, bias):
    kwargs = {"nonlinearity": "relu"} if name == "RNNCell" and bias else {}
    theirs, ours = _pair(name, 3, 4, bias=bias, **kwargs)
    rng = np.random.default_rng(2)
    x = _r(rng, 2, 3)
    state = [_r(rng, 2, 4), _r(rng, 2, 4)] if name == "LSTMCell" else _r(rng, 2, 4)
    _compare(theirs, ours, [x, state])
    _compare(theirs, ours, [x])
    _compare(theirs, ours, [_r(rng, 3)], grads=False)
    _round_trip(theirs, ours)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(norm_first=True, activation="gelu", batch_first=True),
    dict(bias=False, layer_norm_eps=1e-3),
])
def test_decoder_layer(kwargs):
    theirs, ours = _pair("TransformerDecoderLayer", 8, 2, 12, **kwargs)
    rng = np.random.default_rng(3)
    bf = kwargs.get("batch_first", False)
    tgt = _r(rng, 2, 5, 8) if bf else _r(rng, 5, 2, 8)
    mem = _r(rng, 2, 6, 8) if bf else _r(rng, 6, 2, 8)
    causal = np.triu(np.full((5, 5), -np.inf, np.float32), 1)
    kp = np.zeros((2, 6), bool)
    kp[1, 4:] = True
    t_out = theirs(torch.tensor(tgt), torch.tensor(mem), tgt_mask=torch.tensor(causal),
                   memory_key_padding_mask=torch.tensor(kp))
    o_out = ours(tgt, mem, tgt_mask=causal, memory_key_padding_mask=kp)
    np.testing.assert_allclose(o_out.numpy(), _np(t_out), rtol=1e-5, atol=1e-5)
    _compare(theirs, ours, [tgt, mem])
    _round_trip(theirs, ours)
    assert repr(ours) == repr(theirs)


def test_transformer_and_generate_square_subsequent_mask():
    theirs, ours = _pair("Transformer", d_model=8, nhead=2, num_encoder_layers=2,
                         num_decoder_layers=1, dim_feedforward=12)
    np.testing.assert_array_equal(nn.Transformer.generate_square_subsequent_mask(4).numpy(),
                                  _np(tnn.Transformer.generate_square_subsequent_mask(4)))
    rng = np.random.default_rng(4)
    src, tgt = _r(rng, 6, 2, 8), _r(rng, 4, 2, 8)
    mask = tnn.Transformer.generate_square_subsequent_mask(4)
    t_out = theirs(torch.tensor(src), torch.tensor(tgt), tgt_mask=mask, tgt_is_causal=True)
    o_out = ours(src, tgt, tgt_mask=_np(mask), tgt_is_causal=True)
    np.testing.assert_allclose(o_out.numpy(), _np(t_out), rtol=1e-5, atol=1e-5)
    _compare(theirs, ours, [src, tgt])
    _round_trip(theirs, ours)
    assert repr(ours) == repr(theirs)


def test_encoder_options_and_repr():
    torch.manual_seed(5)
    layer = tnn.TransformerEncoderLayer(8, 2, 12)
    theirs = tnn.TransformerEncoder(layer, 2, norm=tnn.LayerNorm(8), enable_nested_tensor=False)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 12), 2, norm=nn.LayerNorm(8),
                                 enable_nested_tensor=False)
    ours.load_state_dict(theirs.state_dict())
    theirs.eval(), ours.eval()
    _compare(theirs, ours, [_r(np.random.default_rng(5), 5, 2, 8)])
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    theirs, ours = _pair("EmbeddingBag", 10, 3, mode=mode, padding_idx=0)
    flat = np.array([1, 4, 4, 0, 9, 5, 0, 2, 7], np.int64)
    offsets = np.array([0, 3, 3, 5], np.int64)
    _compare(theirs, ours, [flat, offsets], grads=False)
    t_out = theirs(torch.tensor(flat), torch.tensor(offsets))
    np.testing.assert_allclose(ours(flat, offsets).numpy(), _np(t_out), rtol=1e-6, atol=1e-6)
    rows = flat[:8].reshape(2, 4)
    np.testing.assert_allclose(ours(rows).numpy(), _np(theirs(torch.tensor(rows))), rtol=1e-6,
                               atol=1e-6)
    if mode == "sum":
        w = np.linspace(-1, 1, len(flat)).astype(np.float32)
        np.testing.assert_allclose(
            ours(flat, offsets, per_sample_weights=w).numpy(),
            _np(theirs(torch.tensor(flat), torch.tensor(offsets),
                       per_sample_weights=torch.tensor(w))), rtol=1e-6, atol=1e-6)
    # the weight's gradient is torch's (the padding row's included)
    w = np.linspace(0.5, 2.0, 12).reshape(4, 3).astype(np.float32)
    (t_out * torch.tensor(w)).sum().backward()
    (ours(flat, offsets) * Tensor.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), _np(theirs.weight.grad), rtol=1e-6,
                               atol=1e-6)
    _round_trip(theirs, ours)
    assert repr(ours) == repr(theirs)


def test_bilinear():
    theirs, ours = _pair("Bilinear", 3, 4, 5)
    rng = np.random.default_rng(6)
    _compare(theirs, ours, [_r(rng, 6, 3), _r(rng, 6, 4)])
    _round_trip(theirs, ours)
    assert repr(ours) == repr(theirs)
