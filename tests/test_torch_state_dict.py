"""PyTorch compatibility without torch: state dicts saved by tools/make_torch_fixture.py (PyTorch
2.13) load into the same models written with om.nn, and the outputs agree within 1e-5. Loss
values and optimizer trajectories are checked against PyTorch's too."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.nn import NnModule, Parameter

nn = om.nn
FIXTURE = Path(__file__).parent / "fixtures" / "torch_models.npz"


@pytest.fixture(scope="module")
def data():
    with np.load(FIXTURE) as f:
        return {k: f[k] for k in f.files}


def part(data, prefix):
    return {k[len(prefix):]: v for k, v in data.items() if k.startswith(prefix)}


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


class ConvNet(NnModule):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 6, 3, stride=1), nn.AvgPool2d(2))
        self.flatten = nn.Flatten()
        self.classifier = nn.Sequential(
            nn.Linear(24, 16), nn.Tanh(), nn.Dropout(0.3), nn.Linear(16, 8), nn.Sigmoid(),
            nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 5))
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        h = self.classifier(self.flatten(self.features(x)))
        return h, self.softmax(h)


class TextNet(NnModule):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 16, padding_idx=0)
        self.norm = nn.LayerNorm(16)
        self.attn = nn.MultiheadAttention(16, 4, batch_first=True)
        self.enc1 = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.1,
                                               activation="gelu", batch_first=True,
                                               norm_first=True)
        self.enc2 = nn.TransformerEncoderLayer(16, 2, dim_feedforward=24)
        self.head = nn.Linear(16, 3)

    def forward(self, tokens, pad_mask):
        x = self.norm(self.embed(tokens))
        a, weights = self.attn(x, x, x, key_padding_mask=pad_mask)
        x = x + a
        x = self.enc1(x, src_key_padding_mask=pad_mask)
        x = self.enc2(x.transpose(0, 1)).transpose(0, 1)
        return self.head(x), weights


def test_fixture_is_small():
    assert FIXTURE.stat().st_size < 300_000


def test_cnn_state_dict_keys_and_outputs(data):
    model = ConvNet()
    state = part(data, "cnn/state/")
    assert list(model.state_dict()) == list(state)  # PyTorch's names and order
    model.load_state_dict(state)
    assert int(model.features[1].num_batches_tracked.item()) == 3
    model.eval()
    y, probs = model(Tensor.from_numpy(data["cnn/in/x"]))
    close(y, data["cnn/out/y"])
    close(probs, data["cnn/out/probs"])


def test_cnn_loads_tensors_and_round_trips(data):
    model = ConvNet()
    model.load_state_dict({k: Tensor.from_numpy(v) for k, v in part(data, "cnn/state/").items()})
    again = ConvNet()
    again.load_state_dict(model.state_dict())
    for k, v in again.state_dict().items():
        np.testing.assert_array_equal(np.asarray(v), data["cnn/state/" + k])


def test_transformer_state_dict_keys_and_outputs(data):
    model = TextNet()
    state = part(data, "text/state/")
    assert list(model.state_dict()) == list(state)
    model.load_state_dict(state)
    model.eval()
    logits, weights = model(Tensor.from_numpy(data["text/in/tokens"]),
                            Tensor.from_numpy(data["text/in/pad_mask"]))
    close(logits, data["text/out/logits"])
    close(weights, data["text/out/weights"])


def test_masked_attention_per_head_weights(data):
    mha = nn.MultiheadAttention(8, 2)
    mha.load_state_dict(part(data, "mha/state/"))
    mha.eval()
    q = Tensor.from_numpy(data["mha/in/q"])
    out, w = mha(q, q, q, attn_mask=Tensor.from_numpy(data["mha/in/causal"]),
                 average_attn_weights=False)
    close(out, data["mha/out/out"])
    close(w, data["mha/out/weights"])


def test_losses_match_pytorch(data):
    logits = Tensor.from_numpy(data["loss/in/logits"])
    target = Tensor.from_numpy(data["loss/in/target"])
    weight = Tensor.from_numpy(data["loss/in/weight"])
    close(nn.CrossEntropyLoss(weight=weight, label_smoothing=0.1)(logits, target),
          data["loss/out/ce_weight_ignore_smooth"])
    close(nn.CrossEntropyLoss(reduction="none")(logits, target), data["loss/out/ce_none"])
    close(nn.CrossEntropyLoss(label_smoothing=0.2)(logits, Tensor.from_numpy(
        data["loss/in/probs"])), data["loss/out/ce_probs_smooth"])
    close(nn.MSELoss()(Tensor.from_numpy(data["loss/in/pred"]),
                       Tensor.from_numpy(data["loss/in/goal"])), data["loss/out/mse"])
    close(nn.CTCLoss()(Tensor.from_numpy(data["loss/in/log_probs"]),
                       Tensor.from_numpy(data["loss/in/ctc_targets"]),
                       Tensor.from_numpy(data["loss/in/ctc_il"]),
                       Tensor.from_numpy(data["loss/in/ctc_tl"])), data["loss/out/ctc_mean"])


@pytest.mark.parametrize("name", ["adam", "sgd"])
def test_optimizer_trajectories_match_pytorch(data, name):
    p = Parameter(Tensor.from_numpy(data["optim/p0"].copy()))
    if name == "adam":
        opt = om.optim.Adam([p], lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)
    else:
        opt = om.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    for g, expected in zip(data["optim/grads"], data[f"optim/{name}"]):
        p.grad = Tensor.from_numpy(g.copy())
        opt.step()
        close(p, expected, 1e-6)
