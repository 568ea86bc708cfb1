"""Build tests/fixtures/torch_rnn.npz: torch.nn.LSTM / GRU state dicts, inputs, outputs and
gradients, so tests/test_rnn_torch.py checks om.nn.LSTM / GRU against PyTorch without torch.

Run it where torch is importable (the project's own venv stays torch-free), e.g.

    pip install --target /tmp/torchlib torch==2.13.0
    PYTHONPATH=/tmp/torchlib .venv/bin/python tools/make_rnn_fixture.py

Keys per case: ``<case>/config`` (the constructor's keyword arguments as JSON text),
``<case>/state/<name>``, ``<case>/in/x``, ``<case>/in/h0`` / ``in/c0`` (when given),
``<case>/out/<k>`` (output, h_n[, c_n]), ``<case>/grad/<name>`` (gradient of
sum(out_k * weight_k) over every output, with ``<case>/weight/<k>`` the weights) for ``x`` and
every parameter.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "torch_rnn.npz"

#: name, class, constructor arguments, input shape, whether to pass initial states
CASES = [
    ("lstm_basic", "LSTM", dict(input_size=3, hidden_size=5), (4, 2, 3), False),
    ("lstm_deep", "LSTM", dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True,
                               batch_first=True), (2, 5, 3), True),
    ("lstm_unbatched", "LSTM", dict(input_size=2, hidden_size=3, bias=False), (6, 2), True),
    ("gru_basic", "GRU", dict(input_size=3, hidden_size=5), (4, 2, 3), False),
    ("gru_deep", "GRU", dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True,
                             batch_first=True), (2, 5, 3), True),
    ("gru_unbatched", "GRU", dict(input_size=2, hidden_size=3, bias=False), (6, 2), True),
    ("lstm_three_layers", "LSTM", dict(input_size=2, hidden_size=3, num_layers=3), (3, 4, 2),
     False),
]


def main() -> int:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    store: dict[str, np.ndarray] = {}
    for name, cls, kwargs, shape, with_state in CASES:
        m = getattr(torch.nn, cls)(**kwargs).eval()
        store[f"{name}/config"] = np.array(json.dumps({"class": cls, **kwargs}))
        for key, value in m.state_dict().items():
            store[f"{name}/state/{key}"] = value.detach().numpy().copy()
        x = torch.randn(*shape, requires_grad=True)
        store[f"{name}/in/x"] = x.detach().numpy().copy()
        layers = m.num_layers * (2 if m.bidirectional else 1)
        hx = None
        if with_state:
            batch = () if len(shape) == 2 else (shape[0] if m.batch_first else shape[1],)
            states = [torch.randn(layers, *batch, m.hidden_size) for _ in
                      range(2 if cls == "LSTM" else 1)]
            for k, s in zip(("h0", "c0"), states):
                store[f"{name}/in/{k}"] = s.numpy().copy()
            hx = tuple(states) if cls == "LSTM" else states[0]
        out, h = m(x, hx)
        outs = [out, *(h if cls == "LSTM" else (h,))]
        loss = 0
        for k, o in enumerate(outs):
            store[f"{name}/out/{k}"] = o.detach().numpy().copy()
            w = torch.randn(o.shape)
            store[f"{name}/weight/{k}"] = w.numpy().copy()
            loss = loss + (o * w).sum()
        loss.backward()
        store[f"{name}/grad/x"] = x.grad.numpy().copy()
        for key, p in m.named_parameters():
            store[f"{name}/grad/{key}"] = p.grad.numpy().copy()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **store)
    tmp.replace(OUT)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(CASES)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
