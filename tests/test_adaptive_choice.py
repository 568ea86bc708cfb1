"""`core.adaptive.TimedChoice`, the timing rule both the threaded backend (sequential or
parallel plan) and the compiled backend (with or without its pool) choose by."""
from __future__ import annotations

import pytest

from onemodel.core import adaptive
from onemodel.core.adaptive import TimedChoice


def _drive(choice, seconds, runs):
    """``runs`` runs where candidate i takes ``seconds[i]``; how many each got."""
    got = [0] * choice.k
    for _ in range(runs):
        i = choice.next()
        got[i] += 1
        choice.record(i, seconds[i])
    return got


def test_the_warm_up_goes_round_from_start_then_the_fastest_runs():
    c = TimedChoice(2, start=1)
    order = [c.next() for _ in range(2 * adaptive.WARMUP_ROUNDS)]
    assert order == [1, 0] * adaptive.WARMUP_ROUNDS
    c = TimedChoice(3)
    assert _drive(c, [3.0, 1.0, 2.0], 3 * adaptive.WARMUP_ROUNDS) == [adaptive.WARMUP_ROUNDS] * 3
    assert c.choice == 1


@pytest.mark.parametrize("seq,par,chosen", [
    (1.0, 0.8, 1),
    (1.0, 0.97, 0),   # within the margin: the baseline keeps the run
    (1.0, 1.3, 0),
])
def test_another_candidate_must_beat_the_baseline_by_the_margin(seq, par, chosen):
    c = TimedChoice(2)
    _drive(c, [seq, par], 2 * adaptive.WARMUP_ROUNDS)
    assert c.choice == chosen


@pytest.mark.parametrize("margin,chosen", [(0.0, 0), (float("inf"), 1)])
def test_a_margin_of_zero_keeps_the_baseline_and_infinity_the_other(monkeypatch, margin,
                                                                    chosen):
    monkeypatch.setattr(adaptive, "MARGIN", margin)
    c = TimedChoice(2)
    _drive(c, [1.0, 5.0] if chosen else [5.0, 1.0], 2 * adaptive.WARMUP_ROUNDS)
    assert c.choice == chosen


def test_one_run_in_probe_times_the_other_and_a_change_is_noticed():
    c = TimedChoice(2)
    _drive(c, [1.0, 2.0], 2 * adaptive.WARMUP_ROUNDS)
    got = _drive(c, [1.0, 2.0], 4 * adaptive.PROBE)
    assert c.choice == 0 and 3 <= got[1] <= 5
    _drive(c, [1.0, 0.1], adaptive.PROBE * adaptive.WINDOW)  # the machine changed
    assert c.choice == 1


def test_run_times_the_call_it_makes():
    c = TimedChoice(2)
    assert [c.run(lambda i: i) for _ in range(4)] == [0, 1, 0, 1]
    assert all(len(t) == 2 for t in c.times)
    with pytest.raises(ValueError, match="at least one"):
        TimedChoice(0)
