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
the time, so the candidates are timed and chosen by the core's `onemodel.core.adaptive`
(`TimedChoice`: the rule and its constants, shared with the compiled backend's choice whether
a run uses its pool). The sequential plan is the baseline: the parallel plan runs only when it
has lately been at least 5 % faster.
"""
from __future__ import annotations

from typing import Mapping

from onemodel.core.adaptive import TimedChoice


class AdaptivePlan:
    """Runs one of ``candidates``: ``(name, plan)`` pairs, the first the baseline."""

    def __init__(self, candidates, source: str) -> None:
        self.candidates = list(candidates)
        self.names = [c[0] for c in self.candidates]
        self.chooser = TimedChoice(len(self.candidates))
        self.source = source  # the parallel plan's, for plan_source and debugging
        first = self.candidates[0][1]
        self.output_names = first.output_names
        self.n_nodes = first.n_nodes

    def run(self, feeds: Mapping) -> dict:
        plans = self.candidates
        return self.chooser.run(lambda i: plans[i][1].run(feeds))

    @property
    def chosen(self) -> str:
        """The name of the candidate most runs use now."""
        return self.names[self.chooser.choice]

    def describe(self) -> str:
        return (f"# adaptive over {', '.join(self.names)}; {self.chosen} chosen now\n"
                f"{self.source}")


__all__ = ["AdaptivePlan"]
