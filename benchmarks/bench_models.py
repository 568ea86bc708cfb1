"""The benchmark models (shared by test_bench_session.py and test_bench_backends.py): the models
of onemodel.testing.models and two recurrent layers, each with its input shape, symbolic axes
and batch sizes."""
from __future__ import annotations

import onemodel as om
from onemodel.testing import models


def _encoder():
    fn, _ = models.encoder_layer(primitives=True)
    return fn, (64, 128), ("batch",)


def _encoder_ops():
    fn, _ = models.encoder_layer(primitives=False)
    return fn, (64, 128), ("batch",)


def _rnn(cls):
    """Issue 26's recurrent row: cls(64, 128) over 32 steps, batch first, the whole output."""
    def build():
        om.manual_seed(0)
        layer = cls(64, 128, batch_first=True).eval()

        def fn(x):
            return layer(x)[0]

        fn.layer = layer  # for the torch twin (benchmarks/torch_twins.py)
        return fn, (32, 64), ("batch",)
    return build


MODELS = {
    "mlp": lambda: (*models.mlp(), ("batch",)),
    "cnn": lambda: (*models.cnn(), ("batch",)),
    "transformer": _encoder,
    "transformer_ops": _encoder_ops,
    "deep100": lambda: (*models.deep(), ("batch",)),
    "branches8": lambda: (*models.branches(), ("batch",)),
    "lstm": _rnn(om.nn.LSTM),
    "gru": _rnn(om.nn.GRU),
}
BATCHES = {"transformer": (1, 16), "transformer_ops": (1, 16), "lstm": (1, 16), "gru": (1, 16)}
CASES = [(m, b) for m in MODELS for b in BATCHES.get(m, (1, 64))]
_TRACED: dict = {}


def model(name):
    """(fn, input shape without the batch axis, traced model), traced once per process."""
    if name not in _TRACED:
        fn, shape, axes = MODELS[name]()
        _TRACED[name] = (fn, shape, models.trace(fn, shape, axes=axes))
    return _TRACED[name]


__all__ = ["MODELS", "BATCHES", "CASES", "model", "models"]
