"""The "compiled" backend: ``om.Session(model, backend="compiled", threads=None, max_plans=32,
cache=None)``.

``compile(graph)`` packs the graph's weights once (GEMM panels) into a `WeightBlock` shared by
every shape signature; each signature is lowered (`lower.Lowering`, milliseconds, no C compiler)
into native segments run by the kernel library built at install time. ``cache`` (None: on unless
``ONEMODEL_CACHE=0``) keeps each signature's plan and the packed weights on disk
(`plan_cache`), so a new process loads them instead; packing then waits for the first signature
the cache does not hold. ``threads`` (default 1) bounds a run's threads: with ``threads`` above
1 the session owns a native pool of ``threads - 1`` workers (started at the first split, joined
when the session is dropped) over which the executor splits large instructions by rows, images
or heads (csrc/om_split.h; never at batch 1, nor for work too small to pay a hand-off; each plan
also times its runs with and without the pool and keeps the faster, plan.py), and BLAS for ops
that fall back to numpy gets at most ``threads``. The backend declares ``threads`` so the
session does not bound BLAS around a run itself: a plan that is all native code never calls
BLAS, and one with numpy steps bounds it here (2-3 us a run saved).
"""
from __future__ import annotations

import numbers

import numpy as np

from onemodel import cache as disk_cache
from onemodel.core.plan import CompiledGraph
from onemodel.errors import OneModelError

from . import _native, dispatch, lowerings, plan_check
from .lower import Lowering
from .plan import NativePlan
from .plan_cache import PlanCache
from .rules import linear_rule
from .weights import ALIGN, WeightBlock


class CompiledOptionError(OneModelError, ValueError):
    """A bad option of the compiled backend (names the option and the value)."""


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise CompiledOptionError(f"compiled backend: {name} must be a positive int, got "
                                  f"{value!r}")
    return int(value)


class CompiledBackend:
    options = ("threads", "max_plans", "cache")

    def __init__(self, threads=None, max_plans: int = 32, cache=None) -> None:
        dispatch.check()  # a bad $ONEMODEL_COMPILED_ISA is named here
        self.name = "compiled"
        self.requested_threads = None if threads is None else _positive("threads", threads)
        self.threads = self.requested_threads or 1
        self.max_plans = _positive("max_plans", max_plans)
        if cache is not None and not isinstance(cache, bool):
            raise CompiledOptionError(f"compiled backend: cache must be True, False or None, "
                                      f"got {cache!r}")
        #: the on-disk plan cache (plan_cache.py): None follows $ONEMODEL_CACHE
        self.cache = disk_cache.enabled() if cache is None else cache
        if self.cache:
            disk_cache.max_bytes()  # a bad ONEMODEL_CACHE_MAX_MB is named now, not at a run

    def compile(self, graph) -> "NativeGraph":
        return NativeGraph(graph, self)


class NativeGraph(CompiledGraph):
    """Plans per shape signature over one weight block packed at session creation."""

    def __init__(self, graph, backend: CompiledBackend) -> None:
        from onemodel.registry import REGISTRY

        tables = REGISTRY.tables()
        super().__init__(graph, backend.name, {}, max_plans=backend.max_plans,
                         blas_threads=backend.threads)
        self.weights = WeightBlock()
        self._last = None
        self.numpy_kernels = {op: k for (b, op), k in tables.kernels.items() if b == "numpy"}
        #: each op's native lowering, from the registry (`lowerings.table`), and the records
        #: they came from (the plan cache keys on their providers)
        self.rules = lowerings.table(tables)
        self.lowering_records = lowerings.records(tables)
        #: the graph has an op another plugin lowers: its plans are checked as loaded ones
        self.foreign_lowerings = bool(lowerings.foreign(self.lowering_records)
                                      & {n.op for n in graph.nodes})
        #: intra-op threads for every plan of this session (None at one thread)
        self.pool = _native.Pool(backend.threads) if backend.threads > 1 else None
        #: with the cache on, packing waits for the first signature the cache does not hold
        self.plan_cache = PlanCache(graph) if backend.cache else None
        if self.plan_cache is None:
            self._pack(graph)

    def _pack(self, graph) -> None:
        """Pre-pack the constant weights of linear layers now, not at the first run."""
        if self.weights.array.size <= ALIGN:  # the first time: room for every float constant
            self.weights.reserve(sum(int(np.size(a)) + 2 * ALIGN
                                     for a in graph.initializers.values()
                                     if np.asarray(a).dtype == np.float32) * 5 // 4)
        for node in graph.nodes:  # the nodes the linear lowering will lower (rules.py)
            if self.rules.get(node.op) is linear_rule and len(node.inputs) > 1:
                w = node.inputs[1]
                if w in graph.initializers:
                    W = np.asarray(graph.initializers[w])
                    if W.ndim == 2 and W.dtype == np.float32:
                        self.weights.panels((w, "^T"), lambda W=W: W.T)

    def run(self, feeds, env, output_names=None):
        """A plan that is native code only runs without the BLAS limiter and numpy's error
        state (it calls neither); one with numpy steps runs as on the numpy backend."""
        last = self._last  # (env, output_names, plan) of the previous run: one read, thread-safe
        if last is not None and last[1] is output_names and last[0] == env:
            plan = last[2]
        else:
            plan = self.plan(env, output_names)
            self._last = (dict(env), output_names, plan)
        if plan.only_native:
            return plan.run(feeds)
        return super().run(feeds, env, output_names)

    def build(self, env, output_names):
        cache = self.plan_cache
        if cache is not None:
            plan = cache.load(self, env, output_names)
            if plan is not None:
                return plan
            self._pack(self.graph)  # keys packed already are kept
        lw = Lowering(self.graph, env, output_names, self.weights, self.ops, self.rules,
                      self.numpy_kernels)
        program, types = lw.program(), lw.types
        del lw  # the plan, the cache and the checks read the program alone
        if plan_check.lowered_checks_enabled() or self.foreign_lowerings:
            # the tests (no lowered plan is refused), and another plugin's instructions
            plan_check.check(program, self.graph, self.weights, types)
        plan = NativePlan(program, self.graph, self.ops, self.weights, self.pool, types)
        if cache is not None:
            cache.store(self, env, output_names, program)
        return plan


def create(**options) -> CompiledBackend:
    unknown = set(options) - set(CompiledBackend.options)
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; the compiled backend takes "
                        f"{', '.join(CompiledBackend.options)}")
    return CompiledBackend(**options)


__all__ = ["CompiledBackend", "NativeGraph", "CompiledOptionError", "create"]
