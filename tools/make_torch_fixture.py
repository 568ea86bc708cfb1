"""Build tests/fixtures/torch_models.npz: PyTorch models, their state dicts, inputs and outputs.

tests/test_torch_state_dict.py loads these state dicts into the same models written with om.nn
and checks that the outputs agree, so the suite checks PyTorch compatibility without torch.

Run it in a throwaway environment (the project's own venv stays torch-free):

    python -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch==2.13.0 numpy
    /tmp/torchvenv/bin/python tools/make_torch_fixture.py

Keys: ``<model>/state/<name>`` (state dict entries), ``<model>/in/<name>``, ``<model>/out/<name>``;
``loss/...`` and ``optim/...`` hold loss values and optimizer trajectories.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "torch_models.npz"


class ConvNet(nn.Module):
    """Conv2d + BatchNorm2d + ReLU + MaxPool2d + Conv2d + AvgPool2d + Flatten + Linear ..."""

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


class TextNet(nn.Module):
    """Embedding + LayerNorm + MultiheadAttention + two TransformerEncoderLayers + Linear."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 16, padding_idx=0)
        self.norm = nn.LayerNorm(16)
        self.attn = nn.MultiheadAttention(16, 4, batch_first=True)
        self.enc1 = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.1,
                                               activation="gelu", batch_first=True,
                                               norm_first=True)
        self.enc2 = nn.TransformerEncoderLayer(16, 2, dim_feedforward=24)  # (L, N, E), post-norm
        self.head = nn.Linear(16, 3)

    def forward(self, tokens, pad_mask):
        x = self.norm(self.embed(tokens))
        a, weights = self.attn(x, x, x, key_padding_mask=pad_mask)
        x = x + a
        x = self.enc1(x, src_key_padding_mask=pad_mask)
        x = self.enc2(x.transpose(0, 1)).transpose(0, 1)
        return self.head(x), weights


def put_model(store: dict, name: str, model: nn.Module) -> None:
    for key, value in model.state_dict().items():
        store[f"{name}/state/{key}"] = value.detach().numpy().copy()


def main() -> int:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    store: dict[str, np.ndarray] = {}

    # -- a small CNN, with running statistics from a few training batches ------------------
    cnn = ConvNet()
    bn = cnn.features[1]
    with torch.no_grad():  # a non-trivial affine batch norm
        bn.weight.copy_(torch.randn(4) * 0.5 + 1.0)
        bn.bias.copy_(torch.randn(4) * 0.5)
    cnn.train()
    for _ in range(3):
        cnn(torch.randn(8, 1, 12, 12) * 2 + 0.5)
    cnn.eval()
    x = rng.standard_normal((3, 1, 12, 12)).astype(np.float32)
    with torch.no_grad():
        y, probs = cnn(torch.from_numpy(x))
    put_model(store, "cnn", cnn)
    store["cnn/in/x"] = x
    store["cnn/out/y"] = y.numpy()
    store["cnn/out/probs"] = probs.numpy()

    # -- a small transformer ----------------------------------------------------------------
    text = TextNet().eval()
    tokens = np.array([[3, 7, 1, 19, 4, 0, 0], [5, 5, 2, 8, 11, 12, 6]], dtype=np.int64)
    pad = tokens == 0
    with torch.no_grad():
        logits, weights = text(torch.from_numpy(tokens), torch.from_numpy(pad))
    put_model(store, "text", text)
    store["text/in/tokens"] = tokens
    store["text/in/pad_mask"] = pad
    store["text/out/logits"] = logits.numpy()
    store["text/out/weights"] = weights.numpy()

    # -- a causal-masked attention with per-head weights (sequence first) ----------------------
    mha = nn.MultiheadAttention(8, 2).eval()
    q = rng.standard_normal((5, 2, 8)).astype(np.float32)
    causal = np.triu(np.ones((5, 5), dtype=bool), 1)
    with torch.no_grad():
        out, w = mha(torch.from_numpy(q), torch.from_numpy(q), torch.from_numpy(q),
                     attn_mask=torch.from_numpy(causal), average_attn_weights=False)
    put_model(store, "mha", mha)
    store["mha/in/q"] = q
    store["mha/in/causal"] = causal
    store["mha/out/out"] = out.numpy()
    store["mha/out/weights"] = w.numpy()

    # -- losses on fixed inputs --------------------------------------------------------------
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    target = np.array([0, 3, -100, 1, 2, 0], dtype=np.int64)
    weight = np.array([1.0, 2.0, 0.5, 3.0], dtype=np.float32)
    store["loss/in/logits"] = logits
    store["loss/in/target"] = target
    store["loss/in/weight"] = weight
    lt, tt = torch.from_numpy(logits), torch.from_numpy(target)
    store["loss/out/ce_weight_ignore_smooth"] = nn.CrossEntropyLoss(
        weight=torch.from_numpy(weight), label_smoothing=0.1)(lt, tt).numpy()
    store["loss/out/ce_none"] = nn.CrossEntropyLoss(reduction="none")(lt, tt).numpy()
    probs = torch.softmax(torch.from_numpy(rng.standard_normal((6, 4)).astype(np.float32)), 1)
    store["loss/in/probs"] = probs.numpy()
    store["loss/out/ce_probs_smooth"] = nn.CrossEntropyLoss(label_smoothing=0.2)(lt, probs).numpy()
    pred = rng.standard_normal((3, 4)).astype(np.float32)
    goal = rng.standard_normal((3, 4)).astype(np.float32)
    store["loss/in/pred"], store["loss/in/goal"] = pred, goal
    store["loss/out/mse"] = nn.MSELoss()(torch.from_numpy(pred), torch.from_numpy(goal)).numpy()
    log_probs = torch.log_softmax(torch.from_numpy(
        rng.standard_normal((6, 2, 5)).astype(np.float32)), -1)
    ctc_t = np.array([[1, 2, 2], [3, 4, 0]], dtype=np.int64)
    ctc_il, ctc_tl = np.array([6, 5], dtype=np.int64), np.array([3, 2], dtype=np.int64)
    store["loss/in/log_probs"] = log_probs.numpy()
    store["loss/in/ctc_targets"], store["loss/in/ctc_il"], store["loss/in/ctc_tl"] = \
        ctc_t, ctc_il, ctc_tl
    store["loss/out/ctc_mean"] = nn.CTCLoss()(log_probs, torch.from_numpy(ctc_t),
                                              torch.from_numpy(ctc_il),
                                              torch.from_numpy(ctc_tl)).numpy()

    # -- optimizer trajectories on fixed gradients -------------------------------------------
    p0 = rng.standard_normal(5).astype(np.float32)
    grads = rng.standard_normal((4, 5)).astype(np.float32)
    store["optim/p0"], store["optim/grads"] = p0, grads
    for name, make in [
            ("adam", lambda ps: torch.optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-6,
                                                 weight_decay=0.1)),
            ("sgd", lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01))]:
        p = torch.nn.Parameter(torch.from_numpy(p0.copy()))
        opt = make([p])
        traj = []
        for g in grads:
            p.grad = torch.from_numpy(g.copy())
            opt.step()
            traj.append(p.detach().numpy().copy())
        store[f"optim/{name}"] = np.stack(traj)

    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **store)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(store)} arrays, torch "
          f"{torch.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
