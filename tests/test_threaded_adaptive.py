"""The threaded backend's adaptive choice (`adaptive.AdaptivePlan`, on `core.adaptive`): the
parallel plan only when its recent median beats the sequential plan's by the margin; ties go to
the sequential plan, which keeps one thread busy instead of several."""
from __future__ import annotations

import pytest

from onemodel.core import adaptive as rule

adaptive = pytest.importorskip("onemodel_backend_threaded.adaptive")


class FakePlan:
    output_names = ["y"]
    n_nodes = 1

    def __init__(self):
        self.runs = 0

    def run(self, feeds):
        self.runs += 1
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


def test_runs_go_round_then_probe_the_other_candidate():
    p = adaptive.AdaptivePlan([("sequential", FakePlan()), ("parallel", FakePlan())], "src")
    warm = rule.WARMUP_ROUNDS * 2
    for _ in range(warm):
        p.run({})
    seq, par = (c[1] for c in p.candidates)
    assert seq.runs == par.runs == rule.WARMUP_ROUNDS
    before = (seq.runs, par.runs)
    for _ in range(rule.PROBE * 4):
        p.run({})
    chosen, other = (seq, par) if p.chosen == "sequential" else (par, seq)
    before_other = before[0] if other is seq else before[1]
    assert 3 <= other.runs - before_other <= 5   # one probe in PROBE runs
