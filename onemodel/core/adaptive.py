"""`TimedChoice`: of several ways to run the same work, the one that has lately been fastest.

A backend with more than one way to run a shape signature (the threaded backend's sequential
and parallel plans, the compiled backend's run with or without its thread pool) cannot know
beforehand which wins: that depends on the machine at the time (a core busy with another
program, a CPU sharing its FMA units). So it times them, with this one rule:

* the first ``WARMUP_ROUNDS * k`` runs go round the ``k`` candidates (from ``start``);
* then the fastest by the median of its last `WINDOW` timings runs; a candidate other than the
  *baseline* (index 0: the way that keeps only the calling thread busy) is chosen only when its
  median is below `MARGIN` times the baseline's, so noise on a busy machine does not hand work
  to threads for nothing;
* one run in `PROBE` times another candidate (in turn) and the choice is made again, so a change
  in the machine's load is noticed within a few dozen runs, at a cost of at most 1/`PROBE` of
  the difference between the candidates.

The constants are read when used: a test or a measuring tool may set them on this module.
"""
from __future__ import annotations

import collections
import time
from typing import Callable, TypeVar

#: rounds through every candidate before choosing
WARMUP_ROUNDS = 3
#: after the warm-up, one run in PROBE times a candidate not chosen (in turn)
PROBE = 16
#: timings kept per candidate (their median decides)
WINDOW = 7
#: a candidate other than the baseline must be at least this much faster to be chosen
MARGIN = 0.95

T = TypeVar("T")


class TimedChoice:
    """Which of ``k`` candidates each run takes (`next`), learning from their timings
    (`record`); `run` does both around one call. Not locked: a race between two threads costs
    at most one timing in the wrong place."""

    def __init__(self, k: int, start: int = 0) -> None:
        if k < 1:
            raise ValueError(f"TimedChoice needs at least one candidate, got {k}")
        self.k = k
        self.start = start % k
        self.times: list[collections.deque[float]] = [collections.deque(maxlen=WINDOW)
                                                      for _ in range(k)]
        self.count = 0
        #: the candidate most runs take now (the baseline until the warm-up is over)
        self.choice = 0
        self._probe = 0

    def next(self) -> int:
        """The candidate this run takes (call `record` with its timing afterwards)."""
        n, k = self.count, self.k
        self.count = n + 1
        if n < WARMUP_ROUNDS * k:
            return (self.start + n) % k
        if n % PROBE == 0 and k > 1:
            self._probe = (self._probe + 1) % k
            return self._probe if self._probe != self.choice else (self.choice + 1) % k
        return self.choice

    def record(self, i: int, seconds: float) -> None:
        """The timing of a run of candidate ``i`` (the one `next` gave for run ``count - 1``)."""
        self.times[i].append(seconds)
        n, k = self.count - 1, self.k
        if n == WARMUP_ROUNDS * k - 1 or (n >= WARMUP_ROUNDS * k and n % PROBE == 0):
            self.choose()

    def run(self, call: Callable[[int], T]) -> T:
        """``call(i)`` for the candidate `next` gives, timed and recorded."""
        i = self.next()
        t0 = time.perf_counter()
        out = call(i)
        self.record(i, time.perf_counter() - t0)
        return out

    def choose(self) -> None:
        """The fastest candidate by median, the baseline's median counted at `MARGIN` times its
        value (so another wins only by beating it by the margin; ties go to the baseline; 0
        keeps the baseline, infinity the fastest other); a candidate with no timing yet counts
        as infinitely slow."""
        inf = float("inf")
        medians = [sorted(ts)[len(ts) // 2] if ts else inf for ts in self.times]
        best, best_t = 0, MARGIN * medians[0] if medians[0] != inf else inf
        for i, t in enumerate(medians[1:], 1):
            if t < best_t:
                best, best_t = i, t
        self.choice = best


__all__ = ["TimedChoice", "WARMUP_ROUNDS", "PROBE", "WINDOW", "MARGIN"]
