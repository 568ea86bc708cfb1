"""The "threaded" backend: the numpy backend's plans, run on a thread pool where that pays.

``om.Session(model, backend="threaded", threads=None, schedule="auto", handoff_flops=None,
split_flops=None, max_plans=32)``:

* ``threads``: the most threads one run uses, the calling thread and BLAS included (default:
  the cores this process may use). A run works on the calling thread and at most
  ``threads - 1`` pool workers, with BLAS held to one thread while it runs (whatever the plan),
  so the two levels never add up to more than ``threads``; 1 means the numpy backend's
  sequential plan.
* ``schedule``: ``"auto"`` (where the cost model says parallelism pays, the parallel plan or
  the sequential one, whichever has lately been faster (`adaptive.AdaptivePlan`); elsewhere
  the sequential plan), ``"parallel"`` (always the parallel plan, for tests and measurements)
  or ``"sequential"``.
* ``handoff_flops`` / ``split_flops``: the thresholds of `costs` (FLOP-equivalents).

Kernels: the ones registered for backend "numpy" (read from the registry when a session is
compiled, so this plugin imports no other plugin), overridden by any registered for "threaded".
"""
from __future__ import annotations

import numbers

from onemodel.core.plan import CompiledGraph, PlanBackend, build_plan
from onemodel.core.threads import cores
from onemodel.errors import OneModelError

from . import costs
from .adaptive import AdaptivePlan
from .parallel import ParallelPlan
from .pool import pool_for
from .schedule import analyse

SCHEDULES = ("auto", "parallel", "sequential")


class ThreadedOptionError(OneModelError, ValueError):
    """A bad option of the threaded backend (names the option and the value)."""


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ThreadedOptionError(f"threaded backend: {name} must be a positive int, got "
                                  f"{value!r}")
    return int(value)


def _threshold(name: str, value, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
        raise ThreadedOptionError(f"threaded backend: {name} must be a number >= 0, got "
                                  f"{value!r}")
    return float(value)


class ThreadedBackend(PlanBackend):
    options = ("threads", "schedule", "handoff_flops", "split_flops", "max_plans")

    def __init__(self, threads=None, schedule: str = "auto", handoff_flops=None,
                 split_flops=None, max_plans: int = 32) -> None:
        super().__init__("threaded", max_plans=_positive_int("max_plans", max_plans))
        if threads is None:
            threads = cores()
        self.threads = _positive_int("threads", threads)
        if schedule not in SCHEDULES:
            raise ThreadedOptionError(f"threaded backend: schedule must be one of "
                                      f"{', '.join(map(repr, SCHEDULES))}, got {schedule!r}")
        self.schedule = schedule
        self.handoff_flops = _threshold("handoff_flops", handoff_flops, costs.HANDOFF_FLOPS)
        self.split_flops = _threshold("split_flops", split_flops, costs.SPLIT_FLOPS)

    def kernel_table(self) -> dict:
        from onemodel.registry import kernels

        table = kernels()
        mine = {op: k for (backend, op), k in table.items() if backend == "numpy"}
        mine.update({op: k for (backend, op), k in table.items() if backend == self.name})
        return mine

    def compile(self, graph) -> "ThreadedGraph":
        return ThreadedGraph(graph, self, self.kernel_table())


class ThreadedGraph(CompiledGraph):
    """Plans per shape signature, each either the sequential plan or a `ParallelPlan`."""

    def __init__(self, graph, backend: ThreadedBackend, kernels) -> None:
        # BLAS at one thread for every plan: the pool is the parallelism, and an OpenBLAS
        # worker keeps spinning on a core for seconds after a multi-threaded call, taking that
        # core from the pool (and from ``threads``' bound) long after the call.
        super().__init__(graph, backend.name, kernels, max_plans=backend.max_plans,
                         blas_threads=1)
        self.config = backend

    def build(self, env, output_names):
        """The plan for these sizes; its ``schedule_summary`` (also the first line of its
        ``source``, so ``session.plan_source(feeds)`` shows it) says what was decided."""
        cfg = self.config
        plan = build_plan(self.graph, env, output_names, self.kernels, self.ops)
        if cfg.threads < 2 or cfg.schedule == "sequential":
            return _labelled(plan, "sequential: " + (
                "threads=1" if cfg.threads < 2 else "schedule='sequential'"))
        sched = analyse(plan, self.graph, env, self.kernels, threads=cfg.threads,
                        handoff=cfg.handoff_flops, split=cfg.split_flops)
        if not (sched.parallel or cfg.schedule == "parallel"):
            return _labelled(plan, "sequential: " + sched.summary())
        out_map = dict(self.graph.outputs)
        par = ParallelPlan(self.graph, plan.steps, plan.types,
                           [v.name for v in self.graph.inputs], self.graph.initializers,
                           [out_map[o] for o in output_names], list(output_names), sched,
                           pool_for(cfg.threads - 1), cfg.threads)
        if cfg.schedule == "parallel":
            return _labelled(par, "parallel: " + sched.summary())
        adaptive = AdaptivePlan([("sequential", plan), ("parallel", par)], par.source)
        return _labelled(adaptive, "adaptive (sequential, parallel): " + sched.summary())


def _labelled(plan, summary: str):
    plan.schedule_summary = summary
    plan.source = f"# threaded backend: {summary}\n{plan.source}"
    return plan


def create(**options) -> ThreadedBackend:
    unknown = set(options) - set(ThreadedBackend.options)
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; the threaded backend takes "
                        f"{', '.join(ThreadedBackend.options)}")
    return ThreadedBackend(**options)


__all__ = ["ThreadedBackend", "ThreadedGraph", "ThreadedOptionError", "create", "SCHEDULES"]
