"""om.optim: SGD and Adam updates against numpy formulas (PyTorch's rules), argument errors, and
small training runs whose loss must fall below a stated threshold."""
from __future__ import annotations

import math

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.nn import Parameter
from onemodel.optim import SGD, Adam, OptimizerError


def param(values):
    return Parameter(Tensor.from_numpy(np.array(values, dtype=np.float64)))


def set_grad(p, g):
    p.grad = Tensor.from_numpy(np.array(g, dtype=np.float64))


P0 = [1.0, -2.0, 0.5]
G1 = [0.1, 0.4, -0.3]
G2 = [-0.2, 0.1, 0.05]


def test_sgd_plain_step():
    p = param(P0)
    opt = SGD([p], lr=0.1)
    set_grad(p, G1)
    opt.step()
    np.testing.assert_allclose(p.numpy(), np.array(P0) - 0.1 * np.array(G1), rtol=1e-12)


def test_sgd_momentum_and_weight_decay_two_steps():
    p = param(P0)
    opt = SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    x = np.array(P0)
    buf = None
    for g in (G1, G2):
        set_grad(p, g)
        opt.step()
        d = np.array(g) + 0.01 * x
        buf = d if buf is None else 0.9 * buf + d
        x = x - 0.1 * buf
        np.testing.assert_allclose(p.numpy(), x, rtol=1e-12)


def test_sgd_nesterov():
    p = param(P0)
    opt = SGD([p], lr=0.1, momentum=0.5, nesterov=True)
    x, buf = np.array(P0), None
    for g in (G1, G2):
        set_grad(p, g)
        opt.step()
        g = np.array(g)
        buf = g if buf is None else 0.5 * buf + g
        x = x - 0.1 * (g + 0.5 * buf)
        np.testing.assert_allclose(p.numpy(), x, rtol=1e-12)


def adam_reference(x, grads, lr, b1, b2, eps, wd=0.0):
    m = np.zeros_like(x)
    v = np.zeros_like(x)
    for t, g in enumerate(grads, start=1):
        g = np.array(g) + wd * x
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        # torch.optim.Adam: lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
        x = x - (lr / (1 - b1 ** t)) * m / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
    return x


def test_adam_one_step_is_lr_times_sign():
    p = param(P0)
    opt = Adam([p], lr=0.01)
    set_grad(p, G1)
    opt.step()
    # after one step m_hat / sqrt(v_hat) = g / |g|: each entry moves by lr (up to eps)
    np.testing.assert_allclose(p.numpy(), np.array(P0) - 0.01 * np.sign(G1), rtol=1e-6)
    np.testing.assert_allclose(p.numpy(), adam_reference(np.array(P0), [G1], 0.01, 0.9, 0.999,
                                                         1e-8), rtol=1e-12)


def test_adam_steps_with_weight_decay_match_formula():
    p = param(P0)
    opt = Adam([p], lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)
    grads = [G1, G2, G1]
    for g in grads:
        set_grad(p, g)
        opt.step()
    ref = adam_reference(np.array(P0), grads, 0.05, 0.8, 0.99, 1e-6, wd=0.1)
    np.testing.assert_allclose(p.numpy(), ref, rtol=1e-12)


def test_adam_float32_parameters_stay_float32():
    p = Parameter(Tensor.from_numpy(np.array(P0, dtype=np.float32)))
    opt = Adam([p], lr=0.01)
    p.grad = Tensor.from_numpy(np.array(G1, dtype=np.float32))
    opt.step()
    assert p.numpy().dtype == np.float32
    np.testing.assert_allclose(p.numpy(), np.array(P0) - 0.01 * np.sign(G1), rtol=1e-5)


def test_step_skips_params_without_grad_and_is_not_recorded():
    a, b = param(P0), param(P0)
    opt = Adam([a, b], lr=0.1)
    set_grad(a, G1)
    version = a._version
    opt.step()
    assert a._version == version + 1
    np.testing.assert_array_equal(b.numpy(), P0)
    assert a.is_leaf and a.requires_grad and a._node is None


def test_zero_grad_sets_none():
    p = param(P0)
    opt = SGD([p], lr=0.1)
    set_grad(p, G1)
    opt.zero_grad()
    assert p.grad is None
    set_grad(p, G1)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), [0, 0, 0])


def test_param_groups_with_their_own_lr():
    a, b = param(P0), param(P0)
    opt = SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    set_grad(a, G1)
    set_grad(b, G1)
    opt.step()
    np.testing.assert_allclose(a.numpy(), np.array(P0) - 0.1 * np.array(G1))
    np.testing.assert_allclose(b.numpy(), np.array(P0) - 1.0 * np.array(G1))
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 1.0


def test_bad_arguments_name_the_argument():
    p = param(P0)
    with pytest.raises(OptimizerError, match="lr"):
        SGD([p], lr=-0.1)
    with pytest.raises(OptimizerError, match="lr"):
        SGD([p])
    with pytest.raises(OptimizerError, match="lr"):
        Adam([p], lr="fast")
    with pytest.raises(OptimizerError, match=r"betas\[1\]"):
        Adam([p], betas=(0.9, 1.0))
    with pytest.raises(OptimizerError, match=r"betas\[0\]"):
        Adam([p], betas=(-0.1, 0.9))
    with pytest.raises(OptimizerError, match="betas"):
        Adam([p], betas=0.9)
    with pytest.raises(OptimizerError, match="eps"):
        Adam([p], eps=-1.0)
    with pytest.raises(OptimizerError, match="momentum"):
        SGD([p], lr=0.1, momentum=-1)
    with pytest.raises(OptimizerError, match="weight_decay"):
        Adam([p], weight_decay=-1)
    with pytest.raises(OptimizerError, match="empty parameter list"):
        Adam([])
    with pytest.raises(OptimizerError, match="non-leaf"):
        Adam([p * 2])
    assert issubclass(OptimizerError, om.OneModelError) and issubclass(OptimizerError, ValueError)


# -- training runs ------------------------------------------------------------------------------
def two_moons(n=256, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, math.pi, n)
    upper = np.stack([np.cos(t), np.sin(t)], 1)
    lower = np.stack([1 - np.cos(t), 0.5 - np.sin(t)], 1)
    y = rng.integers(0, 2, n)
    x = np.where(y[:, None] == 0, upper, lower) + rng.normal(0, 0.1, (n, 2))
    return x.astype(np.float32), y.astype(np.int64)


def train_mlp(make_opt, steps):
    om.manual_seed(0)
    nn = om.nn
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                          nn.Linear(32, 2))
    x, y = two_moons()
    xt, yt = Tensor.from_numpy(x), Tensor.from_numpy(y)
    loss_fn = nn.CrossEntropyLoss()
    opt = make_opt(model.parameters())
    first = None
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(xt), yt)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    with om.GradMode.no_grad():
        final = loss_fn(model(xt), yt).item()
        acc = (model(xt).numpy().argmax(1) == y).mean()
    return first, final, acc


def test_sgd_trains_an_mlp_on_two_moons():
    first, final, acc = train_mlp(lambda ps: SGD(ps, lr=0.3, momentum=0.9), 300)
    assert first > 0.5
    assert final < 0.05, f"loss {first:.3f} -> {final:.3f}"
    assert acc > 0.98


def test_adam_trains_an_mlp_on_two_moons():
    first, final, acc = train_mlp(lambda ps: Adam(ps, lr=0.02), 300)
    assert first > 0.5
    assert final < 0.05, f"loss {first:.3f} -> {final:.3f}"
    assert acc > 0.98
