"""Traced graphs equal eager code at three other sizes, for every layer and reference model."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor

nn = om.nn


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(1568, 128), nn.ReLU(), nn.Linear(128, 10))


def check_at_sizes(model, example, axis_names, make, sizes=(2, 5, 17), rtol=1e-4, atol=1e-5):
    traced = model.trace(example, *axis_names)
    traced.graph.verify()
    model.eval()
    for n in sizes:
        x = make(n)
        got = traced(x)
        want = model(x)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=atol)
    return traced


def randn(*shape, seed=0):
    return Tensor.randn(DType.F32, *shape, seed=seed)


class Batched(nn.NnModule):
    """Wrap a layer so a test can add the reshapes a layer alone would not need."""

    def __init__(self, inner, fn):
        super().__init__()
        self.inner = inner
        self.fn = fn

    def forward(self, x):
        return self.fn(self.inner, x)


LAYERS = {
    "Linear": (lambda: nn.Linear(6, 3), (4, 6), ("batch", None)),
    "Conv2d": (lambda: nn.Conv2d(2, 3, 3, stride=2, padding=1), (4, 2, 7, 7), ("batch", None, None, None)),
    "MaxPool2d": (lambda: nn.MaxPool2d(2), (4, 3, 6, 6), ("batch", None, None, None)),
    "AvgPool2d": (lambda: nn.AvgPool2d(3, stride=1, padding=1), (4, 3, 5, 5), ("batch", None, None, None)),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), (4, 3, 5, 5), ("batch", None, None, None)),
    "LayerNorm": (lambda: nn.LayerNorm(6), (4, 5, 6), ("batch", "seq", None)),
    "Dropout": (lambda: nn.Dropout(0.3), (4, 6), ("batch", None)),
    "ReLU": (lambda: nn.ReLU(), (4, 6), ("batch", None)),
    "GELU": (lambda: nn.GELU(), (4, 6), ("batch", None)),
    "GELU-tanh": (lambda: nn.GELU(approximate="tanh"), (4, 6), ("batch", None)),
    "Sigmoid": (lambda: nn.Sigmoid(), (4, 6), ("batch", None)),
    "Tanh": (lambda: nn.Tanh(), (4, 6), ("batch", None)),
    "Softmax": (lambda: nn.Softmax(dim=-1), (4, 6), ("batch", None)),
    "Flatten": (lambda: nn.Flatten(), (4, 3, 5), ("batch", None, None)),
    "Sequential": (lambda: nn.Sequential(nn.Linear(6, 5), nn.Tanh()), (4, 6), ("batch", None)),
    "MultiheadAttention": (lambda: Batched(nn.MultiheadAttention(8, 2, batch_first=True),
                                           lambda m, x: m(x, x, x)[0]), (5, 6, 8), ("batch", "seq", None)),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16,
                                                                   batch_first=True),
                                (5, 6, 8), ("batch", "seq", None)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_every_layer_traces(name):
    om.manual_seed(0)
    make_layer, shape, axes = LAYERS[name]
    layer = make_layer()
    sym = [i for i, a in enumerate(axes) if a]

    def make(n):
        s = list(shape)
        for i in sym:
            s[i] = n + 3 if axes[i] == "seq" else n
        return randn(*s, seed=n)

    check_at_sizes(layer, randn(*shape), axes, make)


def test_embedding_traces_with_integer_tokens():
    om.manual_seed(0)
    emb = nn.Embedding(10, 4)
    tokens = Tensor.from_numpy(np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9], [0, 1, 2]], dtype=np.int64))
    check_at_sizes(emb, tokens, ("batch", None),
                   lambda n: Tensor.from_numpy(np.arange(n * 3, dtype=np.int64).reshape(n, 3) % 10))


def test_mlp():
    om.manual_seed(1)
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 3))
    check_at_sizes(mlp, randn(4, 8), ("batch", None), lambda n: randn(n, 8, seed=n))


def test_cnn():
    om.manual_seed(2)
    check_at_sizes(lenet(), randn(4, 1, 28, 28), ("batch", None, None, None),
                   lambda n: randn(n, 1, 28, 28, seed=n), sizes=(2, 5, 9))


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_batch_and_seq_symbolic(norm_first):
    om.manual_seed(3)
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True, norm_first=norm_first,
                                       activation="gelu")
    # example sizes differ from the model's own constants (head size 4): see the tracing guide
    traced = check_at_sizes(layer, randn(5, 6, 16), ("batch", "seq", None),
                            lambda n: randn(n, n + 3, 16, seed=n))
    text = str(traced.graph)
    assert "batch" in text and "seq" in text


def test_module_mode_restored_after_trace_and_after_failure():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    model.train()
    model.trace(randn(4, 3), "batch", None)
    assert model.training and all(m.training for m in model.children())

    class Bad(nn.NnModule):
        def forward(self, x):
            return x.numpy()

    bad = Bad()
    bad.train()
    with pytest.raises(om.TraceException):
        bad.trace(randn(4, 3), "batch", None)
    assert bad.training


def test_parameters_keep_their_names_and_state_is_unchanged():
    om.manual_seed(4)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm2d(4) if False else nn.ReLU(), nn.Linear(4, 2))
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    traced = model.trace(randn(5, 3), "batch", None)
    assert {"0.weight", "0.bias", "2.weight", "2.bias"} <= set(traced.graph.initializers)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])


def test_batch_norm_running_stats_unchanged_by_trace():
    om.manual_seed(5)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    model.train()
    mean = model[1].running_mean.numpy().copy()
    model.trace(randn(4, 1, 6, 6), "batch", None, None, None)
    np.testing.assert_array_equal(model[1].running_mean.numpy(), mean)


def test_head_count_equal_to_the_example_batch_stays_a_constant():
    # 2 heads traced at batch 2... and 4 heads at batch 4: a plain int is never read as an axis
    om.manual_seed(0)
    for heads, batch in ((2, 2), (4, 4)):
        layer = Batched(nn.MultiheadAttention(8, heads, batch_first=True),
                        lambda m, x: m(x, x, x)[0])
        check_at_sizes(layer, randn(batch, 6, 8), ("batch", "seq", None),
                       lambda n: randn(n, n + 1, 8, seed=n), sizes=(1, 3, 7))
