"""Optimizer state_dict / load_state_dict: torch's layout, a resumed run that continues
bit-identically, the checks on load (each error names the key), zero_grad(set_to_none)."""
from __future__ import annotations

import numpy as np
import pytest

from onemodel import Tensor
from onemodel.nn import Parameter
from onemodel.optim import SGD, Adagrad, Adam, AdamW, OptimizerError, RMSprop

RNG = np.random.default_rng(3)
SHAPES = [(3, 2), (4,), ()]
GRADS = [[RNG.normal(size=s) for s in SHAPES] for _ in range(20)]

MAKERS = {
    "SGD": lambda g: SGD(g, lr=0.1, momentum=0.9, nesterov=True),
    "Adam": lambda g: Adam(g, lr=0.01, amsgrad=True),
    "AdamW": lambda g: AdamW(g, lr=0.01),
    "RMSprop": lambda g: RMSprop(g, lr=0.01, momentum=0.5, centered=True),
    "Adagrad": lambda g: Adagrad(g, lr=0.1, lr_decay=0.01),
}


def params():
    return [Parameter(Tensor.from_numpy(np.linspace(-1, 1, int(np.prod(s))).reshape(s)))
            for s in SHAPES]


def groups(ps):
    return [{"params": ps[:2]}, {"params": ps[2:], "lr": 0.05}]


def steps(opt, ps, grads):
    for gs in grads:
        for p, g in zip(ps, gs):
            p.grad = Tensor.from_numpy(g.copy())
        opt.step()


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_a_resumed_run_continues_bit_identically(name):
    make = MAKERS[name]
    ps = params()
    opt = make(groups(ps))
    steps(opt, ps, GRADS)
    straight = [p.numpy().copy() for p in ps]

    ps = params()
    opt = make(groups(ps))
    steps(opt, ps, GRADS[:9])
    saved = opt.state_dict()
    values = [p.numpy().copy() for p in ps]
    steps(opt, ps, GRADS[9:12])  # the snapshot must not move on with these steps

    ps2 = [Parameter(Tensor.from_numpy(v.copy())) for v in values]
    opt2 = make(groups(ps2))
    opt2.load_state_dict(saved)
    steps(opt2, ps2, GRADS[9:])
    for a, b in zip(ps2, straight):
        np.testing.assert_array_equal(a.numpy(), b)


def test_layout_is_torchs():
    ps = params()
    opt = Adam(groups(ps), lr=0.01)
    steps(opt, ps, GRADS[:2])
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.05
    assert set(sd["state"]) == {0, 1, 2}
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    assert sd["state"][0]["step"] == 2
    assert isinstance(sd["state"][0]["exp_avg"], Tensor)
    assert sd["state"][0]["exp_avg"].shape == (3, 2)


def test_loads_torchs_state_dict_and_torch_loads_ours():
    torch = pytest.importorskip("torch")
    tps = [torch.nn.Parameter(torch.tensor(p.numpy())) for p in params()]
    topt = torch.optim.Adam([{"params": tps[:2]}, {"params": tps[2:], "lr": 0.05}], lr=0.01)
    for gs in GRADS[:5]:
        for p, g in zip(tps, gs):
            p.grad = torch.tensor(g)
        topt.step()
    ps = [Parameter(Tensor.from_numpy(p.detach().numpy().copy())) for p in tps]
    opt = Adam(groups(ps), lr=0.01)
    opt.load_state_dict(topt.state_dict())
    for gs in GRADS[5:]:
        for p, g in zip(tps, gs):
            p.grad = torch.tensor(g)
        topt.step()
    steps(opt, ps, GRADS[5:])
    for a, b in zip(ps, tps):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-15)
    # and back: torch takes our layout (arrays as torch tensors)
    sd = opt.state_dict()
    state = {i: {k: (torch.tensor(float(v)) if k == "step" else torch.tensor(v.numpy()))
                 for k, v in s.items()} for i, s in sd["state"].items()}
    topt.load_state_dict({"state": state, "param_groups": sd["param_groups"]})


def test_sgd_without_momentum_keeps_no_state():
    ps = params()
    opt = SGD(ps, lr=0.1)
    steps(opt, ps, GRADS[:2])
    assert opt.state_dict()["state"] == {}


def test_load_checks_name_what_is_wrong():
    ps = params()
    opt = Adam(groups(ps), lr=0.01)
    steps(opt, ps, GRADS[:2])
    good = opt.state_dict()
    fresh = Adam(groups(params()), lr=0.01)

    def bad(mutate, match):
        sd = opt.state_dict()
        mutate(sd)
        with pytest.raises(OptimizerError, match=match):
            fresh.load_state_dict(sd)

    bad(lambda sd: sd["param_groups"].pop(), "2 groups|1 groups")
    bad(lambda sd: sd["param_groups"][0]["params"].pop(), r"param_groups\[0\]\['params'\] has 1")
    bad(lambda sd: sd["state"][0].__setitem__("exp_avg", np.zeros((2, 3))),
        r"state\[0\]\['exp_avg'\]: shape \(2, 3\)")
    bad(lambda sd: sd["state"][1].pop("exp_avg_sq"), r"state\[1\] lacks 'exp_avg_sq'")
    bad(lambda sd: sd["state"][1].__setitem__("momentum_buffer", np.zeros(4)),
        r"'momentum_buffer'\] is not state Adam keeps")
    bad(lambda sd: sd["state"][0].__setitem__("step", -1), r"'step'\]: a step count")
    bad(lambda sd: sd["state"][0].__setitem__("exp_avg", None), r"'exp_avg'\] is None")
    bad(lambda sd: sd["state"].__setitem__(7, {}), r"state\[7\] names no parameter")
    bad(lambda sd: sd["param_groups"][1].__setitem__("lr", -1.0), r"param_groups\[1\].*lr")
    bad(lambda sd: sd["param_groups"][0].__setitem__("betas", (0.9,)), "betas")
    bad(lambda sd: sd.pop("state"), "no 'state' key")
    with pytest.raises(OptimizerError, match="expected a dict"):
        fresh.load_state_dict([1, 2])
    # a failed load changed nothing; a good one works afterwards
    assert fresh.state == {} and fresh.param_groups[1]["lr"] == 0.05
    fresh.load_state_dict(good)
    assert len(fresh.state) == 3


def test_loaded_state_is_a_copy_cast_to_the_parameters_dtype():
    p = Parameter(Tensor.from_numpy(np.zeros(3, np.float32)))
    opt = SGD([p], lr=0.1, momentum=0.9)
    buf = np.ones(3)
    opt.load_state_dict({"state": {0: {"momentum_buffer": buf}},
                         "param_groups": [{**opt.state_dict()["param_groups"][0]}]})
    p.grad = Tensor.from_numpy(np.ones(3, np.float32))
    opt.step()
    assert buf.tolist() == [1, 1, 1]
    assert opt.state[id(p)]["momentum_buffer"].dtype == np.float32
    np.testing.assert_allclose(p.numpy(), -0.1 * 1.9 * np.ones(3), rtol=1e-6)


def test_older_state_dicts_get_new_defaults():
    ps = params()
    opt = SGD(ps, lr=0.1, momentum=0.9)
    sd = opt.state_dict()
    del sd["param_groups"][0]["maximize"]
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["maximize"] is False


def test_zero_grad_set_to_none_false_zeroes_in_place():
    p = Parameter(Tensor.from_numpy(np.ones(2)))
    opt = SGD([p], lr=0.1)
    g = p.grad = Tensor.from_numpy(np.ones(2))
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g.numpy().tolist() == [0, 0]
    opt.zero_grad()
    assert p.grad is None
