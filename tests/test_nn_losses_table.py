"""The loss modules of issue 24, one row per configuration: eager against the numpy reference of
tests/references, the input's gradient against finite differences, the refusal to be traced
(losses are computed outside the graph), and (with torch installed) PyTorch's values, buffers
and repr."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import onemodel as om
from onemodel import GradMode, Tensor

from .references import REFERENCES as R

nn = om.nn
W3 = np.array([0.5, 1.0, 2.0])


def _probs(rng, shape):
    return rng.uniform(0.05, 0.95, shape)


def _log_probs(rng, shape):
    z = rng.standard_normal(shape)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _classes(rng, shape, c=3, ignored=-100):
    t = rng.integers(0, c, shape)
    t.reshape(-1)[1] = ignored
    return t


@dataclass
class LossRow:
    id: str
    name: str
    inputs: Callable          # rng -> (input, target)
    ref: Callable             # (input, target) -> expected
    kwargs: dict = field(default_factory=dict)


LOSSES = [
    LossRow("l1", "L1Loss", lambda r: (r.standard_normal((4, 3)), r.standard_normal((4, 3))),
            lambda x, t: R["l1_loss"](x, t)),
    LossRow("l1_sum_legacy", "L1Loss",
            lambda r: (r.standard_normal((4, 3)), r.standard_normal((4, 3))),
            lambda x, t: R["l1_loss"](x, t, reduction="sum"), dict(size_average=False)),
    LossRow("smooth_l1_beta", "SmoothL1Loss",
            lambda r: (r.standard_normal((4, 3)), r.standard_normal((4, 3))),
            lambda x, t: R["smooth_l1_loss"](x, t, beta=0.5), dict(beta=0.5)),
    LossRow("huber_delta_none", "HuberLoss",
            lambda r: (2 * r.standard_normal((4, 3)), r.standard_normal((4, 3))),
            lambda x, t: R["huber_loss"](x, t, reduction="none", delta=1.5),
            dict(delta=1.5, reduction="none")),
    LossRow("bce_weight", "BCELoss", lambda r: (_probs(r, (4, 3)), r.uniform(0, 1, (4, 3))),
            lambda x, t: R["binary_cross_entropy"](x, t, np.broadcast_to(W3, x.shape)),
            dict(weight=W3)),
    LossRow("bce_sum", "BCELoss", lambda r: (_probs(r, (5,)), r.integers(0, 2, 5) * 1.0),
            lambda x, t: R["binary_cross_entropy"](x, t, reduction="sum"),
            dict(reduction="sum")),
    LossRow("bce_logits_pos_weight", "BCEWithLogitsLoss",
            lambda r: (3 * r.standard_normal((4, 3)), r.uniform(0, 1, (4, 3))),
            lambda x, t: R["binary_cross_entropy_with_logits"](
                x, t, np.broadcast_to(W3[::-1], x.shape), np.broadcast_to(W3, x.shape)),
            dict(weight=W3[::-1].copy(), pos_weight=W3)),
    LossRow("bce_logits_none", "BCEWithLogitsLoss",
            lambda r: (3 * r.standard_normal((4, 3)), r.integers(0, 2, (4, 3)) * 1.0),
            lambda x, t: R["binary_cross_entropy_with_logits"](x, t, reduction="none"),
            dict(reduction="none")),
    LossRow("nll_weight_ignore", "NLLLoss", lambda r: (_log_probs(r, (5, 3)), _classes(r, 5)),
            lambda x, t: R["nll_loss"](x, t, W3), dict(weight=W3)),
    LossRow("nll_spatial_ignore1", "NLLLoss",
            lambda r: (_log_probs(r, (2, 3, 4)), _classes(r, (2, 4), ignored=1)),
            lambda x, t: R["nll_loss"](x, t, ignore_index=1, reduction="sum"),
            dict(ignore_index=1, reduction="sum")),
    LossRow("kl_batchmean", "KLDivLoss", lambda r: (_log_probs(r, (4, 3)), _probs(r, (4, 3))),
            lambda x, t: R["kl_div"](x, t, reduction="batchmean"), dict(reduction="batchmean")),
    LossRow("kl_log_target_sum", "KLDivLoss",
            lambda r: (_log_probs(r, (4, 3)), _log_probs(r, (4, 3))),
            lambda x, t: R["kl_div"](x, t, reduction="sum", log_target=True),
            dict(reduction="sum", log_target=True)),
]
IDS = [r.id for r in LOSSES]


def build(row: LossRow):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy size_average/reduce warning
        return getattr(nn, row.name)(**row.kwargs)


def inputs(row: LossRow):
    return row.inputs(np.random.default_rng(0))


@pytest.mark.parametrize("row", LOSSES, ids=IDS)
def test_loss_matches_the_numpy_reference(row):
    x, t = inputs(row)
    got = build(row)(Tensor.from_numpy(x), Tensor.from_numpy(t)).numpy()
    np.testing.assert_allclose(got, row.ref(x, t), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("row", LOSSES, ids=IDS)
def test_loss_input_gradient_matches_finite_differences(row):
    x, t = inputs(row)
    loss = build(row)
    xt = Tensor.from_numpy(x.copy()).requires_grad_()
    out = loss(xt, Tensor.from_numpy(t))
    g = np.random.default_rng(1).standard_normal(out.shape)
    (out * Tensor.from_numpy(g)).sum().backward()
    eps = 1e-6
    flat = x.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        vals = []
        for v in (old + eps, old - eps):
            flat[i] = v
            with GradMode.no_grad():
                vals.append(float((loss(Tensor.from_numpy(x), Tensor.from_numpy(t)).numpy()
                                   * g).sum()))
        flat[i] = old
        fd = (vals[0] - vals[1]) / (2 * eps)
        got = xt.grad.numpy().reshape(-1)[i]
        assert abs(got - fd) <= 1e-5 + 1e-4 * abs(fd), (row.id, i, got, fd)


@pytest.mark.parametrize("row", LOSSES, ids=IDS)
def test_losses_refuse_to_be_traced(row):
    x, t = inputs(row)
    loss = build(row)
    with pytest.raises(om.TraceException, match="losses are for training"):
        loss.trace({"input": (Tensor.from_numpy(x.astype(np.float32)), "batch",
                              *[None] * (x.ndim - 1)),
                    "target": (Tensor.from_numpy(t), "batch", *[None] * (t.ndim - 1))})


@pytest.mark.parametrize("row", LOSSES, ids=IDS)
def test_loss_matches_torch(row):
    torch = pytest.importorskip("torch")
    kwargs = {k: torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v
              for k, v in row.kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl = getattr(torch.nn, row.name)(**kwargs)
    loss = build(row)
    assert repr(loss) == repr(tl)
    assert list(loss.state_dict()) == list(tl.state_dict())
    x, t = inputs(row)
    want = tl(torch.from_numpy(x), torch.from_numpy(t)).numpy()
    np.testing.assert_allclose(loss(Tensor.from_numpy(x), Tensor.from_numpy(t)).numpy(), want,
                               rtol=1e-7, atol=1e-10)


def test_legacy_reduction_arguments_warn_and_map_as_torch():
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.BCELoss(reduce=False).reduction == "none"
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.NLLLoss(size_average=False).reduction == "sum"
    assert nn.KLDivLoss(reduction="batchmean").reduction == "batchmean"
