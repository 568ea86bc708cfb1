"""om.nn: NnModule registration and naming, state dicts, modes, and every layer against a numpy
formula (forward shape and values)."""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.nn import NnModule, Parameter, StateDictError

nn = om.nn
RNG = np.random.default_rng(1234)


def randn(*shape, dtype=np.float32):
    return Tensor.from_numpy(RNG.standard_normal(shape).astype(dtype))


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# -- numpy references ---------------------------------------------------------------------------
def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def np_gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def np_conv2d(x, w, b, stride=1, padding=0):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out + (b.reshape(1, -1, 1, 1) if b is not None else 0)


def np_pool(x, k, s, fn):
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = fn(x[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3))
    return out


def np_mha(q, k, v, mha, mask=None):
    """Batch-first numpy multi-head attention with the module's weights."""
    sd = {key: np.asarray(val, dtype=np.float64) for key, val in mha.state_dict().items()}
    e, h = mha.embed_dim, mha.num_heads
    hd = e // h
    w, b = sd["in_proj_weight"], sd["in_proj_bias"]
    n, lq, _ = q.shape
    s = k.shape[1]

    def heads(t, length):
        return t.reshape(n, length, h, hd).transpose(0, 2, 1, 3)

    qh = heads(q @ w[:e].T + b[:e], lq)
    kh = heads(k @ w[e:2 * e].T + b[e:2 * e], s)
    vh = heads(v @ w[2 * e:].T + b[2 * e:], s)
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(hd)
    if mask is not None:
        scores = scores + mask
    attn = np_softmax(scores)
    out = (attn @ vh).transpose(0, 2, 1, 3).reshape(n, lq, e)
    out = out @ sd["out_proj.weight"].T + sd["out_proj.bias"]
    return out, attn.mean(axis=1)


# -- registration and naming --------------------------------------------------------------------
class Block(NnModule):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.scale = Parameter(Tensor.ones(DType.F32, 4))
        self.register_buffer("count", Tensor.zeros(DType.F32, 1))
        self.register_buffer("scratch", Tensor.zeros(DType.F32, 2), persistent=False)
        self.note = "plain attribute"

    def forward(self, x):
        return self.fc(x) * self.scale


class Net(NnModule):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))

    def forward(self, x):
        return self.head(self.block(x))


def test_parameters_buffers_and_modules_register_on_assignment():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["block.scale", "block.fc.weight", "block.fc.bias", "head.1.weight",
                     "head.1.bias"]
    assert all(isinstance(p, Parameter) and p.requires_grad for p in net.parameters())
    assert [n for n, _ in net.named_buffers()] == ["block.count", "block.scratch"]
    assert [n for n, _ in net.named_modules()] == ["", "block", "block.fc", "head", "head.0",
                                                   "head.1"]
    assert [type(m).__name__ for m in net.children()] == ["Block", "Sequential"]
    assert [n for n, _ in net.named_children()] == ["block", "head"]
    assert net.block.note == "plain attribute"
    assert list(net.block.named_parameters(recurse=False))[0][0] == "scale"
    assert list(net.block.named_parameters(prefix="b"))[0][0].startswith("b.")


def test_parameter_order_follows_assignment_like_pytorch():
    net = Net()
    # PyTorch lists a module's own parameters first, then its children's, in assignment order
    assert [n for n, _ in net.block.named_parameters()] == ["scale", "fc.weight", "fc.bias"]


def test_parameter_is_a_tensor_sharing_memory():
    t = Tensor.from_list([1.0, 2.0], 2)
    p = Parameter(t)
    assert isinstance(p, Tensor) and p.requires_grad and p.is_leaf
    assert p._data is t._data
    assert not hasattr(p, "__dict__")  # Tensor's __slots__ layout is kept
    assert "Parameter containing" in repr(p)
    assert type(p * 2) is Tensor
    with pytest.raises(om.OpError):
        Parameter(Tensor.from_list([1, 2], 2))  # integer tensors cannot require grad
    assert Parameter(Tensor.from_list([1, 2], 2), requires_grad=False).dtype == DType.I64


def test_shared_parameters_are_listed_once():
    class Tied(NnModule):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = nn.Linear(2, 2)
            self.b.weight = self.a.weight

    tied = Tied()
    assert [n for n, _ in tied.named_parameters()] == ["a.weight", "a.bias", "b.bias"]
    assert len(list(tied.parameters())) == 3


def test_assignment_rules():
    net = Net()
    with pytest.raises(TypeError, match="Parameter or None"):
        net.block.fc.weight = Tensor.zeros(DType.F32, 4, 3)
    net.block.fc.bias = None
    assert net.block.fc.bias is None
    assert [n for n, _ in net.block.fc.named_parameters()] == ["weight"]
    with pytest.raises(TypeError, match="Tensor or None"):
        net.block.count = 3
    net.block.count = Tensor.ones(DType.F32, 1)
    assert net.block.count.numpy()[0] == 1
    # as in PyTorch, a parameter's name takes only a Parameter (or None) until it is deleted
    with pytest.raises(TypeError, match="parameter 'scale'"):
        net.block.scale = nn.ReLU()
    del net.block.scale
    net.block.scale = nn.ReLU()
    assert "scale" not in dict(net.block.named_parameters(recurse=False))
    assert "scale" in dict(net.block.named_children())
    del net.block.scale
    assert not hasattr(net.block, "scale")
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        net.missing  # noqa: B018

    class Forgot(NnModule):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match=r"super\(\).__init__"):
        Forgot()
    with pytest.raises(KeyError, match="contain"):
        net.register_buffer("a.b", Tensor.zeros(DType.F32, 1))


def test_forward_is_required_and_call_dispatches():
    class NoForward(NnModule):
        pass

    with pytest.raises(NotImplementedError, match="forward"):
        NoForward()(1)
    net = Net()
    assert net(randn(5, 3)).shape == (5, 2)


def test_train_eval_recurse():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.head.train(False)
    assert net.training and not net.head[0].training and not net.head[1].training
    with pytest.raises(ValueError, match="bool"):
        net.train("yes")


def test_repr_like_pytorch():
    net = Net()
    assert repr(net) == (
        "Net(\n"
        "  (block): Block(\n"
        "    (fc): Linear(in_features=3, out_features=4, bias=True)\n"
        "  )\n"
        "  (head): Sequential(\n"
        "    (0): ReLU()\n"
        "    (1): Linear(in_features=4, out_features=2, bias=True)\n"
        "  )\n"
        ")")
    assert repr(nn.Conv2d(1, 16, 3, padding=1)) == \
        "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    assert repr(nn.BatchNorm2d(8)) == \
        "BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert repr(nn.LayerNorm(8)) == "LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.MaxPool2d(2)) == \
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"


def test_zero_grad_and_requires_grad():
    net = Net()
    net(randn(2, 3)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_to_double_casts_parameters_and_buffers():
    net = Net().double()
    assert all(p.dtype == DType.F64 for p in net.parameters())
    assert net.block.count.dtype == DType.F64
    assert net(randn(2, 3, dtype=np.float64)).dtype == DType.F64


# -- state dicts --------------------------------------------------------------------------------
def test_state_dict_holds_params_and_persistent_buffers():
    net = Net()
    sd = net.state_dict()
    # PyTorch's order: a module's own parameters, its own buffers, then its children
    assert list(sd) == ["block.scale", "block.count", "block.fc.weight", "block.fc.bias",
                        "head.1.weight", "head.1.bias"]
    for _key, value in sd.items():
        assert isinstance(value, Tensor) and not value.requires_grad
        assert isinstance(np.asarray(value), np.ndarray)
    assert np.asarray(sd["block.fc.weight"]).shape == (4, 3)
    assert net.state_dict(keep_vars=True)["block.fc.weight"] is net.block.fc.weight


def test_state_dict_round_trip_tensors_and_numpy():
    om.manual_seed(1)
    a = Net()
    om.manual_seed(2)
    b = Net()
    x = randn(4, 3)
    assert not np.allclose(a(x).numpy(), b(x).numpy())
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    close(a(x), b(x), 0)
    om.manual_seed(3)
    c = Net()
    c.load_state_dict({k: np.array(v) for k, v in a.state_dict().items()})
    close(a(x), c(x), 0)
    # loading copies in place: the Parameter objects (and an optimizer holding them) stay valid
    w = c.block.fc.weight
    c.load_state_dict(b.state_dict())
    assert c.block.fc.weight is w


def test_load_state_dict_lists_missing_and_unexpected_keys():
    net = Net()
    sd = dict(net.state_dict())
    del sd["head.1.bias"], sd["block.count"]
    sd["head.2.weight"] = np.zeros((2, 2), np.float32)
    with pytest.raises(StateDictError) as info:
        net.load_state_dict(sd)
    err = info.value
    assert isinstance(err, om.OneModelError)
    msg = str(err)
    assert 'Missing key(s) in state_dict: "block.count", "head.1.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "head.2.weight"' in msg
    assert err.missing_keys == ["block.count", "head.1.bias"]
    assert err.unexpected_keys == ["head.2.weight"]
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["block.count", "head.1.bias"]
    assert result.unexpected_keys == ["head.2.weight"]


def test_load_state_dict_checks_shape_and_dtype_before_changing_anything():
    net = Net()
    before = {k: np.array(v) for k, v in net.state_dict().items()}
    sd = {k: np.zeros_like(v) for k, v in before.items()}
    sd["block.fc.weight"] = np.zeros((3, 4), np.float32)
    with pytest.raises(StateDictError, match=r"size mismatch for block.fc.weight: copying a param "
                                             r"with shape \(3, 4\).*current model is \(4, 3\)"):
        net.load_state_dict(sd, strict=False)
    sd["block.fc.weight"] = np.zeros((4, 3), np.int64)
    with pytest.raises(StateDictError, match="dtype mismatch for block.fc.weight"):
        net.load_state_dict(sd)
    for k, v in net.state_dict().items():  # nothing was written
        close(v, before[k], 0)
    # float64 arrays load into float32 parameters (cast, as PyTorch's copy_)
    sd["block.fc.weight"] = np.ones((4, 3), np.float64)
    net.load_state_dict(sd)
    assert net.block.fc.weight.dtype == DType.F32 and net.block.fc.weight.numpy().sum() == 12


# -- om.nn resolution through the registry ------------------------------------------------------
def test_layers_come_from_the_registry_with_suggestions():
    for name in ["Linear", "Conv2d", "MaxPool2d", "AvgPool2d", "BatchNorm2d", "LayerNorm",
                 "Embedding", "Dropout", "ReLU", "GELU", "Sigmoid", "Tanh", "Softmax", "Flatten",
                 "Sequential", "MultiheadAttention", "TransformerEncoderLayer", "MSELoss",
                 "CrossEntropyLoss", "CTCLoss"]:
        cls = getattr(nn, name)
        assert issubclass(cls, NnModule)
        assert name in dir(nn)
    with pytest.raises(AttributeError, match="did you mean Linear"):
        nn.Lineer  # noqa: B018


def test_a_plugin_layer_appears_in_om_nn(registered):
    from onemodel.registry import ModuleDef, hookimpl

    class Double(NnModule):
        def forward(self, x):
            return x * 2

    class Plugin:
        @hookimpl
        def onemodel_modules(self):
            return [ModuleDef(name="Double", cls=Double)]

    registered(Plugin(), "test-double-layer")
    assert nn.Double is Double
    close(nn.Double()(Tensor.from_list([1.0, 2.0], 2)), [2.0, 4.0])


# -- layers: shapes and formulas ----------------------------------------------------------------
def test_linear_formula_and_init():
    om.manual_seed(0)
    lin = nn.Linear(20, 5)
    assert lin.weight.shape == (5, 20) and lin.bias.shape == (5,)
    bound = 1 / math.sqrt(20)
    assert np.abs(lin.weight.numpy()).max() <= bound and np.abs(lin.bias.numpy()).max() <= bound
    assert np.abs(lin.weight.numpy()).max() > 0.8 * bound  # uniform over the whole range
    x = randn(7, 20)
    close(lin(x), x.numpy() @ lin.weight.numpy().T + lin.bias.numpy())
    assert nn.Linear(3, 2, bias=False).bias is None
    assert nn.Linear(4, 3)(randn(2, 5, 4)).shape == (2, 5, 3)


def test_init_is_reproducible_with_manual_seed():
    om.manual_seed(7)
    a = nn.Sequential(nn.Linear(4, 4), nn.Conv2d(1, 2, 3), nn.Embedding(5, 3))
    om.manual_seed(7)
    b = nn.Sequential(nn.Linear(4, 4), nn.Conv2d(1, 2, 3), nn.Embedding(5, 3))
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb
        close(va, vb, 0)


def test_conv2d_formula():
    conv = nn.Conv2d(2, 3, 3, stride=2, padding=1)
    assert conv.weight.shape == (3, 2, 3, 3) and conv.bias.shape == (3,)
    bound = 1 / math.sqrt(2 * 9)
    assert np.abs(conv.weight.numpy()).max() <= bound
    x = randn(2, 2, 7, 6)
    y = conv(x)
    assert y.shape == (2, 3, 4, 3)
    close(y, np_conv2d(x.numpy(), conv.weight.numpy(), conv.bias.numpy(), 2, 1), 1e-4)
    same = nn.Conv2d(2, 4, 3, padding="same", bias=False)
    assert same(x).shape == (2, 4, 7, 6)
    assert nn.Conv2d(4, 4, 3, groups=2).weight.shape == (4, 2, 3, 3)


def test_pools():
    x = randn(2, 3, 6, 6)
    mp = nn.MaxPool2d(2)
    assert mp.stride == 2
    close(mp(x), np_pool(x.numpy(), 2, 2, np.max))
    close(nn.MaxPool2d(3, stride=1)(x), np_pool(x.numpy(), 3, 1, np.max))
    close(nn.AvgPool2d(2)(x), np_pool(x.numpy(), 2, 2, np.mean))
    assert nn.MaxPool2d(2, padding=1)(x).shape == (2, 3, 4, 4)


def test_batch_norm_train_and_eval():
    bn = nn.BatchNorm2d(3)
    assert [k for k in bn.state_dict()] == ["weight", "bias", "running_mean", "running_var",
                                            "num_batches_tracked"]
    close(bn.weight, np.ones(3))
    close(bn.bias, np.zeros(3))
    assert bn.num_batches_tracked.dtype == DType.I64
    x = randn(4, 3, 5, 5) * 2 + 1
    xa = x.numpy().astype(np.float64)
    mean = xa.mean(axis=(0, 2, 3))
    var = xa.var(axis=(0, 2, 3))
    y = bn(x)
    ref = (xa - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5)
    close(y, ref, 1e-4)
    n = 4 * 25
    close(bn.running_mean, 0.1 * mean, 1e-5)
    close(bn.running_var, 0.9 + 0.1 * var * n / (n - 1), 1e-5)
    assert int(bn.num_batches_tracked.item()) == 1
    bn.eval()
    y = bn(x)
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    close(y, (xa - rm.reshape(1, 3, 1, 1)) / np.sqrt(rv.reshape(1, 3, 1, 1) + 1e-5), 1e-4)
    assert int(bn.num_batches_tracked.item()) == 1  # eval does not update the statistics
    cum = nn.BatchNorm2d(3, momentum=None)
    cum(x)
    close(cum.running_mean, mean, 1e-5)  # a cumulative average: the first batch's mean
    with pytest.raises(ValueError, match="4D"):
        bn(randn(3, 4))


def test_layer_norm_formula():
    ln = nn.LayerNorm(6)
    ln.weight = Parameter(randn(6))
    ln.bias = Parameter(randn(6))
    x = randn(2, 4, 6)
    close(ln(x), np_layer_norm(x.numpy(), ln.weight.numpy(), ln.bias.numpy()), 1e-5)
    ln2 = nn.LayerNorm((4, 6), elementwise_affine=False)
    assert list(ln2.state_dict()) == []
    xa = x.numpy()
    mu = xa.mean(axis=(1, 2), keepdims=True)
    close(ln2(x), (xa - mu) / np.sqrt(xa.var(axis=(1, 2), keepdims=True) + 1e-5), 1e-5)


def test_embedding_lookup_init_and_padding_idx():
    om.manual_seed(0)
    emb = nn.Embedding(1000, 16)
    w = emb.weight.numpy()
    assert w.shape == (1000, 16)
    assert abs(w.mean()) < 0.05 and abs(w.std() - 1) < 0.05  # N(0, 1)
    idx = Tensor.from_list([[1, 5, 7], [0, 0, 999]])
    close(emb(idx), w[idx.numpy()])
    pad = nn.Embedding(4, 3, padding_idx=0)
    close(pad.weight.numpy()[0], np.zeros(3))
    out = pad(Tensor.from_list([0, 1, 0, 2]))
    (out * randn(4, 3)).sum().backward()
    close(pad.weight.grad.numpy()[0], np.zeros(3))
    assert np.abs(pad.weight.grad.numpy()[1]).sum() > 0


def test_dropout_train_and_eval():
    om.manual_seed(0)
    drop = nn.Dropout(0.25)
    x = Tensor.ones(DType.F32, 200, 50)
    y = drop(x).numpy()
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02
    drop.eval()
    close(drop(x), x)
    with pytest.raises(ValueError, match="probability"):
        nn.Dropout(1.5)


def test_activations_softmax_flatten():
    x = randn(3, 4, 5)
    xa = x.numpy()
    close(nn.ReLU()(x), np.maximum(xa, 0))
    close(nn.GELU()(x), np_gelu(xa.astype(np.float64)), 1e-5)
    tanh_gelu = 0.5 * xa * (1 + np.tanh(math.sqrt(2 / math.pi) * (xa + 0.044715 * xa ** 3)))
    close(nn.GELU(approximate="tanh")(x), tanh_gelu, 1e-5)
    close(nn.Sigmoid()(x), 1 / (1 + np.exp(-xa)))
    close(nn.Tanh()(x), np.tanh(xa))
    close(nn.Softmax(dim=1)(x), np_softmax(xa, 1))
    close(nn.Softmax(dim=-1)(x), np_softmax(xa, -1))
    assert nn.Flatten()(x).shape == (3, 20)
    assert nn.Flatten(0, 1)(x).shape == (12, 5)
    close(nn.Flatten()(x), xa.reshape(3, 20))


def test_sequential_indexing_and_names():
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert len(seq) == 3
    assert isinstance(seq[0], nn.Linear) and isinstance(seq[-1], nn.Linear)
    assert seq[-1] is seq[2]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is seq[0]
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear"]
    x = randn(5, 3)
    close(seq(x), seq[2](seq[1](seq[0](x))))
    with pytest.raises(IndexError):
        seq[3]  # noqa: B018
    named = nn.Sequential(OrderedDict(fc=nn.Linear(3, 3), act=nn.Tanh()))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"]
    assert named.act is named[1]
    seq.append(nn.Sigmoid())
    assert len(seq) == 4 and seq(x).shape == (5, 2)
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]


def test_multihead_attention_formula_batch_first_and_not():
    om.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    assert list(mha.state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                      "out_proj.bias"]
    assert mha.in_proj_weight.shape == (24, 8)
    close(mha.in_proj_bias, np.zeros(24))
    close(mha.out_proj.bias, np.zeros(8))
    q, k = randn(2, 3, 8), randn(2, 5, 8)
    out, w = mha(q, k, k)
    assert out.shape == (2, 3, 8) and w.shape == (2, 3, 5)
    ref_out, ref_w = np_mha(q.numpy().astype(np.float64), k.numpy().astype(np.float64),
                            k.numpy().astype(np.float64), mha)
    close(out, ref_out, 1e-5)
    close(w, ref_w, 1e-5)
    _, per_head = mha(q, k, k, average_attn_weights=False)
    assert per_head.shape == (2, 2, 3, 5)
    out2, none = mha(q, k, k, need_weights=False)
    assert none is None
    close(out2, out, 1e-6)

    seq_first = nn.MultiheadAttention(8, 2)
    seq_first.load_state_dict(mha.state_dict())
    out_sf, w_sf = seq_first(q.transpose(0, 1), k.transpose(0, 1), k.transpose(0, 1))
    assert out_sf.shape == (3, 2, 8)
    close(out_sf.transpose(0, 1), out, 1e-6)
    close(w_sf, w, 1e-6)
    unbatched, uw = mha(q[0], k[0], k[0])
    assert unbatched.shape == (3, 8) and uw.shape == (3, 5)
    close(unbatched, out.numpy()[0], 1e-5)


def test_multihead_attention_masks():
    om.manual_seed(1)
    mha = nn.MultiheadAttention(4, 2, batch_first=True)
    x = randn(2, 4, 4)
    xa = x.numpy().astype(np.float64)
    causal = np.triu(np.ones((4, 4), dtype=bool), 1)        # True = may not attend
    out, w = mha(x, x, x, attn_mask=Tensor.from_numpy(causal))
    add = np.where(causal, -np.inf, 0.0)
    ref_out, ref_w = np_mha(xa, xa, xa, mha, add)
    close(out, ref_out, 1e-5)
    close(w, ref_w, 1e-5)
    assert np.all(w.numpy()[:, 0, 1:] == 0)
    pad = np.array([[False, False, False, True], [False, False, True, True]])
    out, w = mha(x, x, x, key_padding_mask=Tensor.from_numpy(pad))
    ref_out, _ = np_mha(xa, xa, xa, mha, np.where(pad, -np.inf, 0.0)[:, None, None, :])
    close(out, ref_out, 1e-5)
    assert np.all(w.numpy()[1, :, 2:] == 0)
    float_mask = randn(4, 4)
    out, _ = mha(x, x, x, attn_mask=float_mask)
    close(out, np_mha(xa, xa, xa, mha, float_mask.numpy())[0], 1e-5)
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(6, 4)


def _np_encoder_layer(layer, x, norm_first, act):
    sd = {k: np.asarray(v, dtype=np.float64) for k, v in layer.state_dict().items()}

    def sa(t):
        return np_mha(t, t, t, layer.self_attn)[0]

    def ff(t):
        return act(t @ sd["linear1.weight"].T + sd["linear1.bias"]) @ sd["linear2.weight"].T \
            + sd["linear2.bias"]

    def n1(t):
        return np_layer_norm(t, sd["norm1.weight"], sd["norm1.bias"])

    def n2(t):
        return np_layer_norm(t, sd["norm2.weight"], sd["norm2.bias"])

    if norm_first:
        x = x + sa(n1(x))
        return x + ff(n2(x))
    x = n1(x + sa(x))
    return n2(x + ff(x))


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_layer_formula(norm_first, activation):
    om.manual_seed(2)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation=activation,
                                       batch_first=True, norm_first=norm_first)
    assert [n for n, _ in layer.named_children()] == [
        "self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"]
    assert list(layer.state_dict()) == [
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
        "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
        "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]
    layer.eval()
    for p in (layer.norm1.weight, layer.norm2.bias):  # make the norms' parameters matter
        p._data[...] = RNG.standard_normal(p.shape)
    x = randn(2, 5, 8)
    act = (lambda t: np.maximum(t, 0)) if activation == "relu" else np_gelu
    ref = _np_encoder_layer(layer, x.numpy().astype(np.float64), norm_first, act)
    close(layer(x), ref, 1e-4)
    seq_first = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation=activation,
                                           norm_first=norm_first).eval()
    seq_first.load_state_dict(layer.state_dict())
    close(seq_first(x.transpose(0, 1)).transpose(0, 1), ref, 1e-4)
    assert nn.TransformerEncoderLayer(8, 2).linear1.weight.shape == (2048, 8)


def test_transformer_encoder_layer_trains_with_dropout():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    out = layer(randn(2, 5, 8))
    out.sum().backward()
    assert all(p.grad is not None for p in layer.parameters())


# -- losses -------------------------------------------------------------------------------------
def test_mse_loss():
    a, b = randn(4, 3), randn(4, 3)
    d = a.numpy() - b.numpy()
    close(nn.MSELoss()(a, b), (d ** 2).mean())
    close(nn.MSELoss(reduction="sum")(a, b), (d ** 2).sum(), 1e-4)
    close(nn.MSELoss(reduction="none")(a, b), d ** 2)
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")


def _np_log_softmax(x, axis=1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def test_cross_entropy_indices_weights_ignore_and_smoothing():
    logits = randn(6, 4)
    la = logits.numpy().astype(np.float64)
    t = np.array([0, 3, 1, 1, 2, 0])
    logp = _np_log_softmax(la)
    nll = -logp[np.arange(6), t]
    close(nn.CrossEntropyLoss()(logits, Tensor.from_numpy(t)), nll.mean())
    close(nn.CrossEntropyLoss(reduction="none")(logits, Tensor.from_numpy(t)), nll)
    close(nn.CrossEntropyLoss(reduction="sum")(logits, Tensor.from_numpy(t)), nll.sum(), 1e-4)
    w = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
    close(nn.CrossEntropyLoss(weight=Tensor.from_numpy(w))(logits, Tensor.from_numpy(t)),
          (nll * w[t]).sum() / w[t].sum())
    ti = t.copy()
    ti[[1, 4]] = -100
    keep = ti != -100
    close(nn.CrossEntropyLoss()(logits, Tensor.from_numpy(ti)), nll[keep].mean())
    eps = 0.1
    smooth = -logp.sum(axis=1)
    ref = ((1 - eps) * nll + eps / 4 * smooth).mean()
    close(nn.CrossEntropyLoss(label_smoothing=eps)(logits, Tensor.from_numpy(t)), ref)
    probs = np_softmax(RNG.standard_normal((6, 4)))
    close(nn.CrossEntropyLoss()(logits, Tensor.from_numpy(probs.astype(np.float32))),
          (-(probs * logp).sum(axis=1)).mean())
    # spatial targets: logits (N, C, d)
    logits3 = randn(2, 4, 3)
    t3 = RNG.integers(0, 4, (2, 3))
    lp3 = _np_log_softmax(logits3.numpy().astype(np.float64))
    ref3 = -np.take_along_axis(lp3, t3[:, None, :], axis=1)[:, 0, :]
    close(nn.CrossEntropyLoss()(logits3, Tensor.from_numpy(t3)), ref3.mean())


def test_cross_entropy_gradient_flows():
    logits = Parameter(randn(3, 5))
    nn.CrossEntropyLoss(label_smoothing=0.2)(logits, Tensor.from_list([0, 4, 2])).backward()
    g = logits.grad.numpy()
    assert g.shape == (3, 5)
    close(g.sum(axis=1), np.zeros(3), 1e-6)  # softmax minus a distribution sums to zero


def test_ctc_loss_small_cases():
    om.manual_seed(0)
    logits = randn(2, 1, 3)                   # T=2, N=1, C=3 (blank 0)
    log_probs = nn.LogSoftmax(dim=-1)(logits)
    lp = log_probs.numpy().astype(np.float64)[:, 0, :]
    targets = Tensor.from_list([[1]])
    il, tl = Tensor.from_list([2]), Tensor.from_list([1])
    # alignments of "1" over two frames: (1,1), (1,0), (0,1)
    paths = [(1, 1), (1, 0), (0, 1)]
    nll = -np.log(sum(np.exp(lp[0, a] + lp[1, b]) for a, b in paths))
    close(nn.CTCLoss(reduction="sum")(log_probs, targets, il, tl), nll, 1e-5)
    close(nn.CTCLoss()(log_probs, targets, il, tl), nll / 1, 1e-5)
    # an impossible alignment (target longer than the input) is inf, or 0 with zero_infinity
    long_t, long_l = Tensor.from_list([[1, 2, 1]]), Tensor.from_list([3])
    assert np.isinf(nn.CTCLoss(reduction="sum")(log_probs, long_t, il, long_l).item())
    assert nn.CTCLoss(reduction="sum", zero_infinity=True)(log_probs, long_t, il,
                                                           long_l).item() == 0.0


def test_module_trace_keeps_batch_and_sequence_symbolic():
    om.manual_seed(3)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    layer.train()
    traced = layer.trace(randn(3, 5, 8), "batch", "seq", None)
    assert layer.training  # the mode comes back after tracing
    layer.eval()
    for shape in [(2, 7, 8), (4, 3, 8)]:
        x = randn(*shape)
        close(traced(x), layer(x), 1e-5)
