"""Issue 24's layers beyond the table: training-mode statistics and channel dropout, the
containers' names and state dicts, ConvTranspose's output_size, and the constructor errors."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, OneModelError, Tensor
from onemodel.nn import Parameter

nn = om.nn


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5)])
def test_batch_norm1d_running_statistics(momentum, shape):
    bn = nn.BatchNorm1d(3, momentum=momentum).double()
    mean, var = np.zeros(3), np.ones(3)
    axes = (0,) if len(shape) == 2 else (0, 2)
    batches = [_x(*shape, seed=s) * (s + 1) + s for s in range(3)]
    for step, x in enumerate(batches, 1):
        y = bn(Tensor.from_numpy(x)).numpy()
        n = x.size // 3
        f = 1.0 / step if momentum is None else momentum  # None: the cumulative average
        mean = (1 - f) * mean + f * x.mean(axis=axes)
        var = (1 - f) * var + f * x.var(axis=axes) * n / (n - 1)
        view = (1, 3) + (1,) * (len(shape) - 2)
        batch = (x - x.mean(axis=axes).reshape(view)) / np.sqrt(
            x.var(axis=axes).reshape(view) + 1e-5)
        np.testing.assert_allclose(y, batch, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(bn.running_mean.numpy(), mean, rtol=1e-10)
    np.testing.assert_allclose(bn.running_var.numpy(), var, rtol=1e-10)
    assert int(bn.num_batches_tracked.item()) == 3
    bn.eval()
    x = batches[0]
    view = (1, 3) + (1,) * (len(shape) - 2)
    np.testing.assert_allclose(bn(Tensor.from_numpy(x)).numpy(),
                               (x - mean.reshape(view)) / np.sqrt(var.reshape(view) + 1e-5),
                               rtol=1e-7, atol=1e-9)


def test_batch_norm1d_refuses_other_ranks():
    with pytest.raises(OneModelError, match="BatchNorm1d: expected 2D or 3D input"):
        nn.BatchNorm1d(3)(Tensor.zeros(DType.F32, 2, 3, 4, 4))
    with pytest.raises(OneModelError, match="more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(Tensor.zeros(DType.F32, 1, 3))
    assert nn.BatchNorm1d(3).eval()(Tensor.zeros(DType.F32, 1, 3)).shape == (1, 3)


@pytest.mark.parametrize("momentum", [0.3, None])
def test_instance_norm_running_statistics_as_torch(momentum):
    norm = nn.InstanceNorm1d(2, momentum=momentum, track_running_stats=True).double()
    x = _x(4, 2, 6) * 2 + 1
    norm(Tensor.from_numpy(x))
    f = 0.0 if momentum is None else momentum  # PyTorch passes momentum=None on as 0
    mean = (1 - f) * 0 + f * x.mean(axis=2).mean(axis=0)
    var = (1 - f) * 1 + f * x.var(axis=2, ddof=1).mean(axis=0)
    np.testing.assert_allclose(norm.running_mean.numpy(), mean, rtol=1e-10)
    np.testing.assert_allclose(norm.running_var.numpy(), var, rtol=1e-10)
    norm.eval()  # normalised with the running statistics now
    want = (x - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5)
    np.testing.assert_allclose(norm(Tensor.from_numpy(x)).numpy(), want, rtol=1e-7, atol=1e-9)


def test_instance_norm_unbatched_input():
    x = _x(3, 4, 5)
    norm = nn.InstanceNorm2d(3).double()
    np.testing.assert_allclose(norm(Tensor.from_numpy(x)).numpy(),
                               norm(Tensor.from_numpy(x[None])).numpy()[0], rtol=1e-12)
    with pytest.raises(OneModelError, match="InstanceNorm2d: expected 3D or 4D input"):
        norm(Tensor.from_numpy(_x(3, 4)))


@pytest.mark.parametrize("cls, shape", [("Dropout1d", (6, 5, 7)), ("Dropout1d", (5, 7)),
                                        ("Dropout2d", (6, 5, 3, 4))])
def test_channel_dropout_zeroes_whole_channels(cls, shape):
    p = 0.4
    layer = getattr(nn, cls)(p)
    x = np.abs(_x(*shape)) + 0.5  # no zero to begin with
    om.manual_seed(3)
    y = layer(Tensor.from_numpy(x)).numpy()
    lead = 2 if len(shape) > 2 and cls == "Dropout2d" or len(shape) == 3 else 1
    per_channel = y.reshape(shape[:lead] + (-1,))
    xs = x.reshape(shape[:lead] + (-1,))
    dropped = (per_channel == 0).all(axis=-1)
    kept = np.isclose(per_channel, xs / (1 - p)).all(axis=-1)
    assert (dropped | kept).all()           # each channel is dropped or kept whole
    assert dropped.any() and kept.any()
    om.manual_seed(3)
    np.testing.assert_array_equal(layer(Tensor.from_numpy(x)).numpy(), y)  # seeded
    layer.eval()
    np.testing.assert_array_equal(layer(Tensor.from_numpy(x)).numpy(), x)


def test_channel_dropout_gradient_follows_the_mask():
    layer = nn.Dropout2d(0.5)
    x = Tensor.from_numpy(np.ones((4, 6, 2, 2))).requires_grad_()
    y = layer(x)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.numpy())  # ones * mask


def test_dropout2d_takes_3d_input_as_torch_with_its_warning():
    with pytest.warns(UserWarning, match="3D input to dropout2d"):
        y = nn.Dropout2d(0.5)(Tensor.ones(DType.F32, 4, 8, 5)).numpy()
    assert ((y == 0).all(axis=2) | (y == 2).all(axis=2)).all()   # (N, C, L) channels


def test_module_dict_names_and_state_dict():
    blocks = nn.ModuleDict({"conv": nn.Conv1d(2, 3, 3), "act": nn.SiLU()})
    blocks["norm"] = nn.GroupNorm(1, 3)
    assert list(blocks) == ["conv", "act", "norm"] and "act" in blocks and len(blocks) == 3
    assert list(blocks.state_dict()) == ["conv.weight", "conv.bias", "norm.weight", "norm.bias"]
    assert isinstance(blocks.pop("act"), nn.SiLU) and list(blocks.keys()) == ["conv", "norm"]
    x = Tensor.randn(DType.F32, 2, 2, 7, seed=0)
    y = blocks["norm"](blocks["conv"](x))
    assert y.shape == (2, 3, 5)
    assert repr(blocks).startswith("ModuleDict(\n  (conv): Conv1d(2, 3, kernel_size=(3,)")
    blocks.update([("extra", nn.Identity())])
    assert list(blocks) == ["conv", "norm", "extra"]


def test_parameter_list_and_dict():
    params = nn.ParameterList([Parameter(Tensor.ones(DType.F32, 2, 3)), Tensor.zeros(DType.F32, 3)])
    params.append(np.full(4, 2.0, np.float32))
    assert [tuple(p.shape) for p in params] == [(2, 3), (3,), (4,)]
    assert all(isinstance(p, Parameter) and p.requires_grad for p in params)
    assert list(params.state_dict()) == ["0", "1", "2"]
    assert len(list(params.parameters())) == 3 and params[-1].shape == (4,)
    assert repr(params) == ("ParameterList(\n"
                            "    (0): Parameter containing: [float32 of size 2x3]\n"
                            "    (1): Parameter containing: [float32 of size 3]\n"
                            "    (2): Parameter containing: [float32 of size 4]\n)")
    table = nn.ParameterDict({"scale": Tensor.ones(DType.F32, 3)})
    table["shift"] = Parameter(Tensor.zeros(DType.F32, 3))
    assert list(table) == ["scale", "shift"] and list(table.state_dict()) == ["scale", "shift"]
    table.load_state_dict({"scale": np.full(3, 2.0, np.float32), "shift": np.ones(3, np.float32)})
    assert table["scale"].tolist() == [2.0, 2.0, 2.0]

    class Model(om.nn.NnModule):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleDict({"a": nn.Linear(3, 2)})
            self.extra = nn.ParameterList([Tensor.ones(DType.F32, 2)])
            self.table = table

    keys = list(Model().state_dict())
    assert keys == ["heads.a.weight", "heads.a.bias", "extra.0", "table.scale", "table.shift"]
    with pytest.raises(OneModelError, match="ParameterDict: expected an om.nn.Parameter"):
        table["bad"] = "text"


def test_containers_state_dict_keys_as_torch():
    torch = pytest.importorskip("torch")
    tm = torch.nn.ModuleDict({"a": torch.nn.Conv1d(2, 3, 3), "b": torch.nn.BatchNorm1d(3)})
    om_ = nn.ModuleDict({"a": nn.Conv1d(2, 3, 3), "b": nn.BatchNorm1d(3)})
    assert list(om_.state_dict()) == list(tm.state_dict())
    om_.load_state_dict(tm.state_dict())
    assert repr(om_) == repr(tm)
    tp = torch.nn.ParameterDict({"w": torch.nn.Parameter(torch.ones(2))})
    op = nn.ParameterDict({"w": Tensor.ones(DType.F32, 2)})
    assert list(op.state_dict()) == list(tp.state_dict())
    tl = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2)), torch.ones(3)])
    ol = nn.ParameterList([Tensor.ones(DType.F32, 2), Tensor.ones(DType.F32, 3)])
    assert list(ol.state_dict()) == list(tl.state_dict())
    assert repr(ol) == repr(tl).replace("torch.float32", "float32")


def test_conv_transpose_output_size():
    up = nn.ConvTranspose2d(2, 2, 3, stride=2, padding=1)
    x = Tensor.randn(DType.F32, 1, 2, 4, 5, seed=0)
    assert up(x).shape == (1, 2, 7, 9)
    assert up(x, output_size=(8, 10)).shape == (1, 2, 8, 10)
    assert up(x, output_size=[1, 2, 8, 9]).shape == (1, 2, 8, 9)
    with pytest.raises(OneModelError, match="ConvTranspose2d: requested an output size"):
        up(x, output_size=(10, 10))


BAD = [
    (lambda: nn.Conv1d(3, 4, 0), "Conv1d: kernel_size"),
    (lambda: nn.Conv1d(3, 4, 3, groups=2), "Conv1d: in_channels"),
    (lambda: nn.Conv1d(3, 4, 3, padding="full"), "Conv1d: invalid padding string"),
    (lambda: nn.Conv1d(3, 3, 3, stride=2, padding="same"), "Conv1d: padding='same'"),
    (lambda: nn.Conv1d(3, 3, 3, padding_mode="circular"), "Conv1d: padding_mode"),
    (lambda: nn.Conv1d(3, 3, 3, padding_mode="mirror"), "Conv1d: padding_mode"),
    (lambda: nn.ConvTranspose1d(2, 2, 3, stride=2, output_padding=2),
     "ConvTranspose1d: output_padding"),
    (lambda: nn.ConvTranspose2d(3, 2, 3, groups=2), "ConvTranspose2d: in_channels"),
    (lambda: nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"), "ConvTranspose2d: padding_mode"),
    (lambda: nn.MaxPool1d(2, padding=2), "MaxPool1d: padding"),
    (lambda: nn.MaxPool1d(2, return_indices=True), "MaxPool1d: return_indices"),
    (lambda: nn.AvgPool1d(0), "AvgPool1d: kernel_size"),
    (lambda: nn.AdaptiveAvgPool2d((2, 2, 2)), "AdaptiveAvgPool2d: output_size"),
    (lambda: nn.AdaptiveMaxPool2d(0), "AdaptiveMaxPool2d: output_size"),
    (lambda: nn.Upsample(), "Upsample: give exactly one of size and scale_factor"),
    (lambda: nn.Upsample(scale_factor=2, mode="bicubic"), "Upsample: mode 'bicubic'"),
    (lambda: nn.Upsample(scale_factor=2, mode="cubic"), "Upsample: mode must be"),
    (lambda: nn.Upsample(scale_factor=2, align_corners=True), "Upsample: align_corners"),
    (lambda: nn.Upsample(scale_factor=-1), "Upsample: scale_factor"),
    (lambda: nn.PixelShuffle(0), "PixelShuffle: upscale_factor"),
    (lambda: nn.PixelUnshuffle(1.5), "PixelUnshuffle: downscale_factor"),
    (lambda: nn.BatchNorm1d(0), "BatchNorm1d: num_features"),
    (lambda: nn.BatchNorm1d(3, momentum=2.0), "BatchNorm1d: momentum"),
    (lambda: nn.GroupNorm(3, 4), "GroupNorm: num_channels"),
    (lambda: nn.GroupNorm(2, 4, eps=-1), "GroupNorm: eps"),
    (lambda: nn.InstanceNorm1d(3, affine="yes"), "InstanceNorm1d: affine"),
    (lambda: nn.RMSNorm((3, 0)), "RMSNorm: normalized_shape"),
    (lambda: nn.LeakyReLU("0.1"), "LeakyReLU: negative_slope"),
    (lambda: nn.ELU(alpha=None), "ELU: alpha"),
    (lambda: nn.Softplus(beta=0), "Softplus: beta"),
    (lambda: nn.Hardtanh(1.0, -1.0), "Hardtanh: max_val"),
    (lambda: nn.PReLU(0), "PReLU: num_parameters"),
    (lambda: nn.GLU(dim=1.5), "GLU: dim"),
    (lambda: nn.SiLU(inplace=1), "SiLU: inplace"),
    (lambda: nn.Dropout1d(1.5), "Dropout1d: p"),
    (lambda: nn.Dropout2d(-0.1), "Dropout2d: p"),
    (lambda: nn.Unflatten(1, (2, -1, -1)), "Unflatten: only one size"),
    (lambda: nn.Unflatten(1, 6), "Unflatten: unflattened_size"),
    (lambda: nn.ZeroPad2d((1, 2)), "ZeroPad2d: padding"),
    (lambda: nn.ReflectionPad1d(-1), "ReflectionPad1d: padding"),
    (lambda: nn.ConstantPad1d(1, "x"), "ConstantPad1d: value"),
    (lambda: nn.ModuleDict({"a": 3}), "not an NnModule"),
    (lambda: nn.ModuleDict(5), "ModuleDict.update"),
    (lambda: nn.ParameterList([1, 2]), "ParameterList: expected"),
    (lambda: nn.L1Loss(reduction="avg"), "L1Loss: reduction"),
    (lambda: nn.HuberLoss(delta=0), "HuberLoss: delta"),
    (lambda: nn.SmoothL1Loss(beta=-1), "SmoothL1Loss: beta"),
    (lambda: nn.NLLLoss(ignore_index=1.5), "NLLLoss: ignore_index"),
    (lambda: nn.KLDivLoss(log_target="no"), "KLDivLoss: log_target"),
]


@pytest.mark.parametrize("make, message", BAD, ids=[m for _f, m in BAD])
def test_bad_constructor_arguments_name_the_layer_and_argument(make, message):
    with pytest.raises(OneModelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_unsupported_arguments_are_also_not_implemented_errors():
    with pytest.raises(NotImplementedError):
        nn.Upsample(scale_factor=2, mode="trilinear")
    with pytest.raises(NotImplementedError):
        nn.AdaptiveMaxPool2d(2, return_indices=True)


@pytest.mark.parametrize("make, shape", [
    (lambda: nn.Conv1d(3, 4, 3), (3, 9)),
    (lambda: nn.Conv1d(3, 4, 4, padding="same", padding_mode="reflect"), (3, 9)),
    (lambda: nn.ConvTranspose1d(3, 2, 3, stride=2), (3, 5)),
    (lambda: nn.ConvTranspose2d(3, 2, 3), (3, 4, 5)),
    (lambda: nn.MaxPool1d(2), (3, 9)),
    (lambda: nn.AvgPool1d(3, stride=2), (3, 9)),
    (lambda: nn.InstanceNorm1d(3, affine=True), (3, 9)),
    (lambda: nn.Dropout1d(0.5), (3, 9)),
    (lambda: nn.ReflectionPad2d(1), (3, 4, 5)),
])
def test_unbatched_input_as_torch(make, shape):
    layer = make()
    x = _x(*shape).astype(np.float32)
    om.manual_seed(0)
    one = layer(Tensor.from_numpy(x)).numpy()
    om.manual_seed(0)
    batched = layer(Tensor.from_numpy(x[None])).numpy()[0]
    np.testing.assert_allclose(one, batched, rtol=1e-6, atol=1e-7)
