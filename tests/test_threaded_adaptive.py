"""The threaded backend's adaptive choice (`adaptive.AdaptivePlan`, on `core.adaptive`): the
parallel plan only when its recent median beats the sequential plan's by the margin; ties go to
the sequential plan, which keeps one thread busy instead of several."""
from __future__ import annotations

import pytest

from onemodel.core import adaptive as rule

adaptive = pytest.importorskip("onemodel_backend_threaded.adaptive")


class FakeClock:
    """`time.perf_counter` as the chooser sees it: it advances only by what a fake plan says
    its run cost, so the choice is decided by the test, never by the machine's noise."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakePlan:
    output_names = ["y"]
    n_nodes = 1

    def __init__(self, cost=0.0, clock=None):
        self.runs = 0
        self.cost, self.clock = cost, clock

    def run(self, feeds):
        self.runs += 1
        if self.clock is not None:
            self.clock.now += self.cost
        return {"y": None}


def plan_with(seq, par):
    p = adaptive.AdaptivePlan([("sequential", FakePlan()), ("parallel", FakePlan())], "src")
    p.chooser.times[0].extend(seq)
    p.chooser.times[1].extend(par)
    p.chooser.choose()
    return p.chosen


@pytest.mark.parametrize("seq,par,chosen", [
    ([1.00] * 5, [0.80] * 5, "parallel"),
    ([1.00] * 5, [0.97] * 5, "sequential"),        # within the margin: not worth the threads
    ([1.00] * 5, [1.30] * 5, "sequential"),
    ([1.00, 1.00, 9.0, 1.00, 1.00], [0.5, 0.5, 0.5, 9.0, 9.0], "parallel"),  # medians decide
    ([], [0.5] * 5, "parallel"),                  # nothing known of the sequential plan yet
])
def test_choice(seq, par, chosen):
    assert plan_with(seq, par) == chosen


@pytest.mark.parametrize("seq_cost,par_cost,chosen", [
    (1.0, 2.0, "sequential"), (2.0, 1.0, "parallel")])
def test_runs_go_round_then_probe_the_other_candidate(monkeypatch, seq_cost, par_cost, chosen):
    clock = FakeClock()
    monkeypatch.setattr(rule.time, "perf_counter", clock)
    seq, par = FakePlan(seq_cost, clock), FakePlan(par_cost, clock)
    p = adaptive.AdaptivePlan([("sequential", seq), ("parallel", par)], "src")
    for _ in range(rule.WARMUP_ROUNDS * 2):
        p.run({})
    assert seq.runs == par.runs == rule.WARMUP_ROUNDS
    assert p.chosen == chosen
    other = par if chosen == "sequential" else seq
    before = other.runs
    for _ in range(rule.PROBE * 4):
        p.run({})
    assert p.chosen == chosen
    assert other.runs - before == 4   # one probe in PROBE runs
