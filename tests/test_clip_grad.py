"""om.nn.utils.clip_grad_norm_ / clip_grad_value_ against numpy formulas (and torch where
installed): the returned total norm, the scale min(1, max_norm / (norm + 1e-6)), inf norm."""
from __future__ import annotations

import math

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.nn import Parameter
from onemodel.nn.utils import clip_grad_norm_, clip_grad_value_
from onemodel.nn.utils.clip_grad import NonFiniteNormError

RNG = np.random.default_rng(11)
GRADS = [RNG.normal(size=(4, 3)), RNG.normal(size=(5,)), RNG.normal(size=())]


def with_grads(grads=GRADS, dtype=np.float64):
    ps = []
    for g in grads:
        p = Parameter(Tensor.from_numpy(np.zeros(np.shape(g), dtype)))
        p.grad = Tensor.from_numpy(np.asarray(g, dtype).copy())
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm(norm_type, max_norm):
    ps = with_grads()
    flat = np.concatenate([np.ravel(g) for g in GRADS])
    want = (np.abs(flat).max() if norm_type == math.inf
            else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type))
    total = clip_grad_norm_(ps, max_norm, norm_type=norm_type)
    assert isinstance(total, Tensor) and total.shape == ()
    assert total.item() == pytest.approx(want, rel=1e-12)
    scale = min(1.0, max_norm / (want + 1e-6))
    for p, g in zip(ps, GRADS):
        np.testing.assert_allclose(p.grad.numpy(), np.asarray(g) * scale, rtol=1e-12)


def test_clip_grad_norm_in_place_skips_missing_grads_and_takes_one_tensor():
    ps = with_grads()
    held = ps[0].grad
    extra = Parameter(Tensor.from_numpy(np.ones(2)))
    clip_grad_norm_(ps + [extra], 0.1)
    assert ps[0].grad is held and extra.grad is None
    total = clip_grad_norm_(ps[0], 1.0, norm_type="inf")
    assert total.item() == pytest.approx(np.abs(held.numpy()).max())
    assert clip_grad_norm_([extra], 1.0).item() == 0.0


def test_nonfinite_norm():
    ps = with_grads([np.array([1.0, np.inf])])
    with pytest.raises(NonFiniteNormError, match="non-finite|inf"):
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    assert issubclass(NonFiniteNormError, om.OneModelError)
    total = clip_grad_norm_(ps, 1.0)
    assert math.isinf(total.item())


def test_float32_grads_stay_float32():
    ps = with_grads(dtype=np.float32)
    total = clip_grad_norm_(ps, 0.5)
    assert total.numpy().dtype == np.float32 and ps[0].grad.numpy().dtype == np.float32


def test_clip_grad_value():
    ps = with_grads()
    clip_grad_value_(ps, 0.3)
    for p, g in zip(ps, GRADS):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -0.3, 0.3))


def test_bad_arguments():
    ps = with_grads()
    with pytest.raises(om.ArgumentError, match="max_norm"):
        clip_grad_norm_(ps, "big")
    with pytest.raises(om.ArgumentError, match=r"parameters\[1\]"):
        clip_grad_norm_([ps[0], 3], 1.0)
    with pytest.raises(om.ArgumentError, match="clip_value"):
        clip_grad_value_(ps, None)


@pytest.mark.parametrize("norm_type", [2.0, math.inf])
def test_matches_torch(norm_type):
    torch = pytest.importorskip("torch")
    tps = []
    for g in GRADS:
        t = torch.nn.Parameter(torch.zeros(np.shape(g), dtype=torch.float64))
        t.grad = torch.tensor(np.asarray(g))
        tps.append(t)
    ps = with_grads()
    want = torch.nn.utils.clip_grad_norm_(tps, 0.7, norm_type=norm_type)
    got = clip_grad_norm_(ps, 0.7, norm_type=norm_type)
    assert got.item() == pytest.approx(want.item(), rel=1e-13)
    for p, t in zip(ps, tps):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-13)
