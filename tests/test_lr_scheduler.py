"""om.optim.lr_scheduler: each schedule against its closed form written out here (torch's
documented formulas), the chained form against the closed form, torch's step-order warnings,
state_dict resume, bad arguments; and, where torch is installed, 40 epochs against torch."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from onemodel import Tensor
from onemodel.nn import Parameter
from onemodel.optim import SGD, Adam
from onemodel.optim import lr_scheduler as S


def make_opt(lrs=(0.1,), cls=SGD, **kw):
    groups = [{"params": [Parameter(Tensor.from_numpy(np.ones(2)))], "lr": lr} for lr in lrs]
    return cls(groups, lr=lrs[0], **kw)


def lrs_of(sched, opt, epochs):
    """The lr of each group at epochs 0..epochs-1, stepping in torch's order."""
    out = [sched.get_last_lr()]
    for _ in range(epochs - 1):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr())
    return np.array(out)


def closed(fn, base, epochs):
    return np.array([[fn(b, e) for b in base] for e in range(epochs)])


BASE = (0.1, 0.03)
REFS = {
    "StepLR": (lambda o: S.StepLR(o, step_size=3, gamma=0.5),
               lambda b, e: b * 0.5 ** (e // 3)),
    "MultiStepLR": (lambda o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.1),
                    lambda b, e: b * 0.1 ** sum(m <= e for m in (2, 5, 5, 9))),
    "ExponentialLR": (lambda o: S.ExponentialLR(o, gamma=0.9), lambda b, e: b * 0.9 ** e),
    "CosineAnnealingLR": (lambda o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
                          lambda b, e: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * e / 7)) / 2),
    "LambdaLR": (lambda o: S.LambdaLR(o, lambda e: 1 / (1 + e)), lambda b, e: b / (1 + e)),
    "MultiplicativeLR": (lambda o: S.MultiplicativeLR(o, lambda e: 0.95),
                         lambda b, e: b * 0.95 ** e),
    "LinearLR": (lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=6),
                 lambda b, e: b * (0.25 + 0.5 * min(e, 6) / 6)),
    "ConstantLR": (lambda o: S.ConstantLR(o, factor=0.5, total_iters=4),
                   lambda b, e: b * (0.5 if e < 4 else 1.0)),
    "PolynomialLR": (lambda o: S.PolynomialLR(o, total_iters=8, power=2.0),
                     lambda b, e: b * (1 - min(e, 8) / 8) ** 2),
    "CosineAnnealingWarmRestarts": (
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.0),
        # periods 3, 6, 12: epoch e sits at T_cur within its period T_i
        lambda b, e: b * (1 + math.cos(math.pi * _sgdr(e)[0] / _sgdr(e)[1])) / 2),
}


def _sgdr(e, t0=3, mult=2):
    t = t0
    while e >= t:
        e -= t
        t *= mult
    return e, t


@pytest.mark.parametrize("name", sorted(REFS))
def test_schedule_matches_its_closed_form(name):
    make, ref = REFS[name]
    opt = make_opt(BASE)
    sched = make(opt)
    got = lrs_of(sched, opt, 25)
    np.testing.assert_allclose(got, closed(ref, BASE, 25), rtol=1e-12, atol=1e-15)
    assert [g["initial_lr"] for g in opt.param_groups] == list(BASE)
    assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
                                  "LinearLR", "ConstantLR"])
def test_step_with_an_epoch_uses_the_closed_form_and_warns(name):
    make, ref = REFS[name]
    opt = make_opt(BASE)
    sched = make(opt)
    opt.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(11)
    np.testing.assert_allclose(sched.get_last_lr(), [ref(b, 11) for b in BASE], rtol=1e-12)


def test_one_cycle_lr_and_momentum_follow_the_two_phases():
    opt = make_opt((0.1,), momentum=0.9)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.25)
    lrs, moms = [], []
    for _ in range(20):
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        if len(lrs) < 20:
            sched.step()

    def cos(a, b, pct):
        return b + (a - b) / 2 * (math.cos(math.pi * pct) + 1)

    up_end = 0.25 * 20 - 1
    for i in range(20):
        if i <= up_end:
            pct = i / up_end
            lr, mom = cos(1 / 25, 1.0, pct), cos(0.95, 0.85, pct)
        else:
            pct = (i - up_end) / (19 - up_end)
            lr, mom = cos(1.0, 1 / 25 / 1e4, pct), cos(0.85, 0.95, pct)
        assert lrs[i] == pytest.approx(lr, rel=1e-12), i
        assert moms[i] == pytest.approx(mom, rel=1e-12), i
    with pytest.raises(S.SchedulerError, match="total_steps"):
        sched.step()
        sched.step()


def test_one_cycle_cycles_adams_beta1():
    opt = make_opt((0.1,), cls=Adam)
    S.OneCycleLR(opt, max_lr=0.5, total_steps=10)
    assert opt.param_groups[0]["betas"] == (0.95, 0.999)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5 / 25)


def test_cyclic_lr_triangular_follows_the_papers_formula():
    opt = make_opt(BASE, momentum=0.9)
    sched = S.CyclicLR(opt, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=4)
    got = lrs_of(sched, opt, 20)

    def tri(base, top, e, step=4):  # Smith (2017): x = |e / step - 2 * cycle + 1|
        cycle = math.floor(1 + e / (2 * step))
        x = abs(e / step - 2 * cycle + 1)
        return base + (top - base) * max(0.0, 1 - x)

    want = [[tri(0.01, 0.1, e), tri(0.01, 0.05, e)] for e in range(20)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    x = abs(19 / 4 - 2 * 3 + 1)  # the last epoch, 19, is in cycle 3
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.9 - 0.1 * (1 - x))


def test_chained_scheduler_multiplies_the_factors():
    opt = make_opt(BASE)
    sched = S.ChainedScheduler([S.StepLR(opt, step_size=3, gamma=0.5),
                                S.ExponentialLR(opt, gamma=0.9)])
    got = lrs_of(sched, opt, 10)
    want = closed(lambda b, e: b * 0.5 ** (e // 3) * 0.9 ** e, BASE, 10)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_sequential_lr_switches_at_the_milestone():
    opt = make_opt((0.1,))
    warm = S.LinearLR(opt, start_factor=0.1, total_iters=3)
    decay = S.ExponentialLR(opt, gamma=0.5)
    sched = S.SequentialLR(opt, [warm, decay], milestones=[3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no epoch-deprecation warning at the milestone
        got = lrs_of(sched, opt, 7)[:, 0]
    want = [0.01, 0.04, 0.07, 0.1, 0.05, 0.025, 0.0125]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_reduce_lr_on_plateau():
    opt = make_opt((1.0, 0.5))
    sched = S.ReduceLROnPlateau(opt, patience=2, factor=0.5, cooldown=1, min_lr=[0.3, 0.0])
    metrics = [5, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3]
    lrs = []
    for m in metrics:
        sched.step(m)
        lrs.append(sched.get_last_lr())
    # bad epochs: 4 is not better than 4 by the relative threshold; after a cut the cooldown
    # eats one epoch; the first group stops at min_lr 0.3
    want = [[1, .5], [1, .5], [1, .5], [1, .5], [.5, .25], [.5, .25], [.5, .25], [.5, .25],
            [.5, .25], [.5, .25], [.5, .25], [.3, .125]]
    np.testing.assert_allclose(lrs, want)
    max_sched = S.ReduceLROnPlateau(make_opt((1.0,)), mode="max", patience=0,
                                    threshold_mode="abs", threshold=0.5)
    max_sched.step(1.0)
    max_sched.step(1.4)  # not better by 0.5: one bad epoch > patience 0
    assert max_sched.get_last_lr() == [0.1]


def test_warns_when_the_scheduler_steps_before_the_optimizer():
    opt = make_opt()
    sched = S.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match=r"before `optimizer.step\(\)`"):
        sched.step()
    opt2 = make_opt()
    sched2 = S.StepLR(opt2, step_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt2.step()
        sched2.step()
        sched2.step()  # only the first call is checked, as torch
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched2.get_lr()


@pytest.mark.parametrize("name", sorted(REFS) + ["OneCycleLR", "SequentialLR", "CyclicLR",
                                                 "ChainedScheduler"])
def test_state_dict_resumes_the_schedule(name):
    def build():
        opt = make_opt(BASE, momentum=0.9)
        if name == "OneCycleLR":
            return opt, S.OneCycleLR(opt, max_lr=[1.0, 0.5], total_steps=30)
        if name == "CyclicLR":
            return opt, S.CyclicLR(opt, 0.01, 0.1, step_size_up=3, mode="exp_range",
                                   gamma=0.95)
        if name == "ChainedScheduler":
            return opt, S.ChainedScheduler([S.ConstantLR(opt, 0.5, 4),
                                            S.CosineAnnealingLR(opt, 6)])
        if name == "SequentialLR":
            return opt, S.SequentialLR(opt, [S.ConstantLR(opt, 0.5, 4),
                                             S.CosineAnnealingLR(opt, 6)], [4])
        return opt, REFS[name][0](opt)

    opt, sched = build()
    straight = lrs_of(sched, opt, 20)
    opt, sched = build()
    lrs_of(sched, opt, 8)
    opt_state, sched_state = opt.state_dict(), sched.state_dict()
    opt2, sched2 = build()
    opt2.load_state_dict(opt_state)
    sched2.load_state_dict(sched_state)
    resumed = [sched2.get_last_lr()]
    for _ in range(12):
        opt2.step()
        sched2.step()
        resumed.append(sched2.get_last_lr())
    np.testing.assert_array_equal(np.array(resumed), straight[7:])


def test_lambda_state_dict_saves_no_function_but_a_callable_objects_attributes():
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, e):
            return self.rate ** e

    opt = make_opt(BASE)
    sched = S.LambdaLR(opt, [lambda e: 1.0, Decay()])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [None, {"rate": 0.5}]
    sd["lr_lambdas"][1]["rate"] = 0.25
    sched.load_state_dict(sd)
    assert sched.lr_lambdas[1].rate == 0.25


def test_bad_arguments_and_state_dicts_name_the_problem():
    opt = make_opt()
    with pytest.raises(S.SchedulerError, match="step_size"):
        S.StepLR(opt, step_size=0)
    with pytest.raises(S.SchedulerError, match="factor"):
        S.ConstantLR(opt, factor=2.0)
    with pytest.raises(S.SchedulerError, match="start_factor"):
        S.LinearLR(opt, start_factor=0.0)
    with pytest.raises(S.SchedulerError, match="T_0"):
        S.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(S.SchedulerError, match="total_steps"):
        S.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(S.SchedulerError, match="anneal_strategy"):
        S.OneCycleLR(opt, max_lr=0.1, total_steps=5, anneal_strategy="cosine")
    with pytest.raises(S.SchedulerError, match="lr_lambdas"):
        S.LambdaLR(opt, [lambda e: 1.0, lambda e: 1.0])
    with pytest.raises(S.SchedulerError, match="mode"):
        S.ReduceLROnPlateau(opt, mode="lowest")
    with pytest.raises(S.SchedulerError, match="factor"):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(S.SchedulerError, match="milestone"):
        S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(opt, 3)], milestones=[])
    with pytest.raises(S.SchedulerError, match="initial_lr"):
        S.StepLR(make_opt(), step_size=2, last_epoch=3)
    sched = S.StepLR(opt, step_size=2)
    with pytest.raises(S.SchedulerError, match="'bogus'"):
        sched.load_state_dict({"bogus": 1})
    with pytest.raises(S.SchedulerError, match="'gamma'"):
        sched.load_state_dict({"gamma": "fast"})
    assert sched.gamma == 0.1
    plateau = S.ReduceLROnPlateau(make_opt())
    with pytest.raises(S.SchedulerError, match="mode"):
        plateau.load_state_dict({**plateau.state_dict(), "mode": "lowest"})
    assert plateau.mode == "min"
    assert issubclass(S.SchedulerError, ValueError)


# -- torch ----------------------------------------------------------------------------------------
TORCH_ARGS = {
    "StepLR": dict(step_size=3, gamma=0.5),
    "MultiStepLR": dict(milestones=[2, 5, 5, 9], gamma=0.1),
    "ExponentialLR": dict(gamma=0.9),
    "CosineAnnealingLR": dict(T_max=7, eta_min=0.001),
    "LinearLR": dict(start_factor=0.25, end_factor=0.75, total_iters=6),
    "ConstantLR": dict(factor=0.5, total_iters=4),
    "CosineAnnealingWarmRestarts": dict(T_0=3, T_mult=2, eta_min=0.01),
    "OneCycleLR": dict(max_lr=[1.0, 0.5], total_steps=40, three_phase=True),
    "LambdaLR": dict(lr_lambda=lambda e: 0.9 ** e + 0.1),
    "MultiplicativeLR": dict(lr_lambda=lambda e: 0.97),
    "PolynomialLR": dict(total_iters=9, power=1.5),
    "CyclicLR": dict(base_lr=0.01, max_lr=[0.2, 0.1], step_size_up=3, step_size_down=5,
                     mode="triangular2"),
}


@pytest.mark.parametrize("name", sorted(TORCH_ARGS) + ["SequentialLR", "ReduceLROnPlateau",
                                                      "ChainedScheduler"])
def test_forty_epochs_match_torch(name):
    torch = pytest.importorskip("torch")
    tp = [torch.nn.Parameter(torch.ones(2)) for _ in BASE]
    topt = torch.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(tp, BASE)], lr=BASE[0],
                           momentum=0.9)
    opt = make_opt(BASE, momentum=0.9)
    if name == "SequentialLR":
        def build(mod, o):
            return mod.SequentialLR(o, [mod.LinearLR(o, 0.1, total_iters=5),
                                        mod.ExponentialLR(o, 0.8),
                                        mod.CosineAnnealingLR(o, T_max=9)], milestones=[5, 12])
    elif name == "ChainedScheduler":
        def build(mod, o):
            return mod.ChainedScheduler([mod.MultiStepLR(o, [3, 7]),
                                         mod.CosineAnnealingWarmRestarts(o, T_0=4)])
    elif name == "ReduceLROnPlateau":
        def build(mod, o):
            return mod.ReduceLROnPlateau(o, patience=1, cooldown=2, factor=0.3)
    else:
        def build(mod, o):
            return getattr(mod, name)(o, **TORCH_ARGS[name])
    tsched, sched = build(torch.optim.lr_scheduler, topt), build(S, opt)
    metrics = np.sin(np.arange(40)) + np.arange(40) * -0.01
    for epoch in range(39):
        assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-14, abs=0), epoch
        assert [g["lr"] for g in opt.param_groups] == pytest.approx(
            [g["lr"] for g in topt.param_groups], rel=1e-14, abs=0)
        if name in ("OneCycleLR", "CyclicLR"):
            assert [g["momentum"] for g in opt.param_groups] == pytest.approx(
                [g["momentum"] for g in topt.param_groups], rel=1e-14)
        opt.step()
        topt.step()
        if name == "ReduceLROnPlateau":
            sched.step(metrics[epoch])
            tsched.step(metrics[epoch])
        else:
            sched.step()
            tsched.step()
    own = {k for k in sched.state_dict()}
    theirs = {k for k in tsched.state_dict()}
    assert own == theirs, own ^ theirs
