"""One training step (forward, cross-entropy, backward, Adam) of a LeNet-like CNN at batch 64:
OneModel eagerly, and PyTorch on the same model when ``torch`` is importable (skipped otherwise).

Both run single-threaded: BLAS limited to one thread with threadpoolctl for OneModel, and
``torch.set_num_threads(1)`` for PyTorch. Run with
``python -m pytest benchmarks/test_bench_training.py --benchmark-group-by=group``; the medians and
their ratio are in docs/benchmarks.md ("Training step").
"""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor

threadpoolctl = pytest.importorskip("threadpoolctl")

BATCH = 64
GROUP = f"training step lenet b{BATCH}"


@pytest.fixture(scope="module", autouse=True)
def single_thread():
    with threadpoolctl.threadpool_limits(1):
        yield


@pytest.fixture(scope="module")
def batch():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32),
            rng.integers(0, 10, BATCH).astype(np.int64))


def onemodel_lenet():
    nn = om.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


@pytest.mark.benchmark(group=GROUP)
def test_onemodel_training_step(benchmark, batch):
    om.manual_seed(0)
    model = onemodel_lenet()
    opt = om.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = om.nn.CrossEntropyLoss()
    x, y = Tensor.from_numpy(batch[0]), Tensor.from_numpy(batch[1])

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    first = step().item()
    benchmark.pedantic(step, rounds=20, iterations=1, warmup_rounds=2)
    assert step().item() < first  # it trains


@pytest.mark.benchmark(group=GROUP)
def test_torch_training_step(benchmark, batch):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.from_numpy(batch[0]), torch.from_numpy(batch[1])

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    first = step().item()
    benchmark.pedantic(step, rounds=20, iterations=1, warmup_rounds=2)
    assert step().item() < first
