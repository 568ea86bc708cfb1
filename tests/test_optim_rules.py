"""Every optimizer option (maximize, dampening, nesterov, weight_decay, amsgrad, RMSprop's
centered/momentum, Adagrad's lr_decay/initial_accumulator_value) against an independent numpy
reference of torch's documented update rule; then the same 50 steps against torch itself."""
from __future__ import annotations

import math

import numpy as np
import pytest

from onemodel import Tensor
from onemodel.nn import Parameter
from onemodel.optim import SGD, Adagrad, Adam, AdamW, RMSprop

RNG = np.random.default_rng(7)
P0 = RNG.normal(size=(3, 4))
GRADS = [RNG.normal(size=(3, 4)) for _ in range(50)]


def run(make, grads=GRADS, dtype=np.float64):
    p = Parameter(Tensor.from_numpy(P0.astype(dtype)))
    opt = make([p])
    out = []
    for g in grads:
        p.grad = Tensor.from_numpy(g.astype(dtype))
        opt.step()
        out.append(p.numpy().copy())
    return out


# -- references: the formulas of torch's documentation, written out ----------------------------
def sgd_ref(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    x, b, out = P0.copy(), None, []
    for g in GRADS:
        g = -g if maximize else g
        g = g + weight_decay * x
        if momentum:
            b = g.copy() if b is None else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        x = x - lr * g
        out.append(x)
    return out


def adam_ref(lr, b1, b2, eps, weight_decay=0.0, amsgrad=False, maximize=False, decoupled=False):
    x = P0.copy()
    m = np.zeros_like(x)
    v = np.zeros_like(x)
    vmax = np.zeros_like(x)
    out = []
    for t, g in enumerate(GRADS, start=1):
        g = -g if maximize else g
        if decoupled:
            x = x * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * x
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat = m / (1 - b1 ** t)
        if amsgrad:
            vmax = np.maximum(vmax, v)
            vhat = vmax / (1 - b2 ** t)
        else:
            vhat = v / (1 - b2 ** t)
        x = x - lr * mhat / (np.sqrt(vhat) + eps)
        out.append(x)
    return out


def rmsprop_ref(lr, alpha, eps, weight_decay=0.0, momentum=0.0, centered=False,
                maximize=False):
    x = P0.copy()
    s = np.zeros_like(x)
    a = np.zeros_like(x)
    b = np.zeros_like(x)
    out = []
    for g in GRADS:
        g = -g if maximize else g
        g = g + weight_decay * x
        s = alpha * s + (1 - alpha) * g * g
        if centered:
            a = alpha * a + (1 - alpha) * g
            d = np.sqrt(s - a * a) + eps
        else:
            d = np.sqrt(s) + eps
        if momentum > 0:
            b = momentum * b + g / d
            x = x - lr * b
        else:
            x = x - lr * g / d
        out.append(x)
    return out


def adagrad_ref(lr, lr_decay=0.0, weight_decay=0.0, init=0.0, eps=1e-10, maximize=False):
    x = P0.copy()
    s = np.full_like(x, init)
    out = []
    for t, g in enumerate(GRADS, start=1):
        g = -g if maximize else g
        g = g + weight_decay * x
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        x = x - clr * g / (np.sqrt(s) + eps)
        out.append(x)
    return out


CASES = {
    "sgd": (lambda ps: SGD(ps, lr=0.05), lambda: sgd_ref(0.05)),
    "sgd_momentum_dampening": (
        lambda ps: SGD(ps, lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
        lambda: sgd_ref(0.05, 0.9, 0.3, 0.01)),
    "sgd_nesterov_maximize": (
        lambda ps: SGD(ps, lr=0.05, momentum=0.8, nesterov=True, maximize=True),
        lambda: sgd_ref(0.05, 0.8, nesterov=True, maximize=True)),
    "adam": (lambda ps: Adam(ps, lr=0.01), lambda: adam_ref(0.01, 0.9, 0.999, 1e-8)),
    "adam_wd_amsgrad_maximize": (
        lambda ps: Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1,
                        amsgrad=True, maximize=True),
        lambda: adam_ref(0.01, 0.8, 0.99, 1e-6, 0.1, amsgrad=True, maximize=True)),
    "adam_decoupled": (
        lambda ps: Adam(ps, lr=0.01, weight_decay=0.05, decoupled_weight_decay=True),
        lambda: adam_ref(0.01, 0.9, 0.999, 1e-8, 0.05, decoupled=True)),
    "adamw_amsgrad": (
        lambda ps: AdamW(ps, lr=0.01, weight_decay=0.05, amsgrad=True),
        lambda: adam_ref(0.01, 0.9, 0.999, 1e-8, 0.05, amsgrad=True, decoupled=True)),
    "rmsprop": (lambda ps: RMSprop(ps, lr=0.01), lambda: rmsprop_ref(0.01, 0.99, 1e-8)),
    "rmsprop_centered_momentum": (
        lambda ps: RMSprop(ps, lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.01, momentum=0.5,
                           centered=True, maximize=True),
        lambda: rmsprop_ref(0.01, 0.9, 1e-6, 0.01, 0.5, centered=True, maximize=True)),
    "adagrad": (lambda ps: Adagrad(ps, lr=0.1), lambda: adagrad_ref(0.1)),
    "adagrad_all": (
        lambda ps: Adagrad(ps, lr=0.1, lr_decay=0.01, weight_decay=0.02,
                           initial_accumulator_value=0.1, eps=1e-8, maximize=True),
        lambda: adagrad_ref(0.1, 0.01, 0.02, 0.1, 1e-8, maximize=True)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fifty_steps_match_the_numpy_reference(case):
    make, ref = CASES[case]
    got = run(make)
    for step, (a, b) in enumerate(zip(got, ref())):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"step {step + 1}")


def test_maximize_is_descent_on_the_negated_gradient():
    up = run(lambda ps: Adam(ps, lr=0.01, maximize=True))
    down = run(lambda ps: Adam(ps, lr=0.01), grads=[-g for g in GRADS])
    np.testing.assert_array_equal(up[-1], down[-1])


def test_adagrad_has_state_before_the_first_step():
    p = Parameter(Tensor.from_numpy(P0.copy()))
    opt = Adagrad([p], initial_accumulator_value=0.5)
    sd = opt.state_dict()
    assert sd["state"][0]["step"] == 0
    np.testing.assert_array_equal(sd["state"][0]["sum"].numpy(), np.full((3, 4), 0.5))


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
@pytest.mark.parametrize("case", sorted(CASES))
def test_fifty_steps_match_torch(case, dtype, tol):
    torch = pytest.importorskip("torch")
    make, _ = CASES[case]
    name = case.split("_")[0]
    ours = make([Parameter(Tensor.from_numpy(P0.copy()))])
    group = {k: v for k, v in ours.param_groups[0].items() if k != "params"}
    if name == "adamw":
        del group["decoupled_weight_decay"]  # torch's AdamW sets it itself
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
           "rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad}[name]
    tp = torch.nn.Parameter(torch.tensor(P0.astype(dtype)))
    topt = cls([tp], **group)
    got = run(make, dtype=dtype)
    for step, g in enumerate(GRADS):
        tp.grad = torch.tensor(g.astype(dtype))
        topt.step()
        np.testing.assert_allclose(got[step], tp.detach().numpy(), rtol=tol, atol=tol,
                                   err_msg=f"step {step + 1}")
    assert math.isfinite(float(got[-1].sum()))
