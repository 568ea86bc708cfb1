"""`AdaptivePlan`: several ways to run one shape signature, and whichever has lately been
fastest.

The candidates (`backend.ThreadedGraph.build` picks which apply):

* ``sequential``: the numpy backend's plan;
* ``parallel``: the `parallel.ParallelPlan` on the pool.

Both run with BLAS at one thread (`backend.ThreadedGraph`). (A third candidate, the sequential
plan with BLAS allowed ``threads`` threads, was tried and dropped: OpenBLAS's worker threads
keep spinning for about three seconds after their last call, so one such run takes a core away
from every parallel run after it.)

The cost model says where parallelism *should* pay; whether it does depends on the machine at
the time (a core busy with other work, a CPU sharing its FMA units). So the first runs go round
the candidates, then the fastest (median of its recent timings; the parallel plan only when it
is at least 5 % faster than the sequential one) runs, and every `PROBE`-th run
times another one again, so a change in the machine's load is noticed within a few dozen runs.
Probing costs at most 1/`PROBE` of the difference between the candidates.
"""
from __future__ import annotations

import collections
import time
from typing import Mapping

#: rounds through every candidate before choosing
WARMUP_ROUNDS = 3
#: after the warm-up, one run in PROBE times a candidate not chosen (in turn)
PROBE = 16
#: timings kept per candidate (their median decides)
WINDOW = 7
#: a candidate other than the sequential plan must be at least this much faster to be chosen
MARGIN = 0.95


class AdaptivePlan:
    """Runs one of ``candidates``: ``(name, plan)`` pairs."""

    def __init__(self, candidates, source: str) -> None:
        self.candidates = list(candidates)
        self.names = [c[0] for c in self.candidates]
        self.times = [collections.deque(maxlen=WINDOW) for _ in self.candidates]
        self.count = 0
        self.choice = 0
        self.probe_next = 0
        self.source = source  # the parallel plan's, for plan_source and debugging
        first = self.candidates[0][1]
        self.output_names = first.output_names
        self.n_nodes = first.n_nodes

    def run(self, feeds: Mapping) -> dict:
        n = self.count
        self.count = n + 1
        k = len(self.candidates)
        warm = n < WARMUP_ROUNDS * k
        if warm:
            i = n % k
        elif n % PROBE == 0:
            self.probe_next = (self.probe_next + 1) % k
            i = self.probe_next if self.probe_next != self.choice else (self.choice + 1) % k
        else:
            i = self.choice
        plan = self.candidates[i][1]
        t0 = time.perf_counter()
        out = plan.run(feeds)
        self.times[i].append(time.perf_counter() - t0)
        if not warm and n % PROBE == 0 or n == WARMUP_ROUNDS * k - 1:
            self._choose()
        return out

    def _choose(self) -> None:
        """The fastest candidate by median; another than the first (the sequential plan, which
        keeps only the calling thread busy) only when it beats the first by `MARGIN`, so noise
        on a busy machine does not hand work to threads for nothing."""
        medians = [sorted(ts)[len(ts) // 2] if ts else None for ts in self.times]
        base = medians[0]
        best, best_t = 0, base
        for i, t in enumerate(medians[1:], 1):
            if t is None or (base is not None and t > MARGIN * base):
                continue
            if best_t is None or t < best_t:
                best, best_t = i, t
        self.choice = best

    @property
    def chosen(self) -> str:
        """The name of the candidate most runs use now."""
        return self.names[self.choice]

    def describe(self) -> str:
        return (f"# adaptive over {', '.join(self.names)}; {self.chosen} chosen now\n"
                f"{self.source}")


__all__ = ["AdaptivePlan", "WARMUP_ROUNDS", "PROBE", "WINDOW", "MARGIN"]
