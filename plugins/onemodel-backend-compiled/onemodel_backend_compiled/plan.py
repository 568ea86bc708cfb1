"""A lowered shape signature ready to run: native segments called with one C call each, numpy
steps between them, outputs written straight into the arrays handed back where possible."""
from __future__ import annotations

import numpy as np

from onemodel.core.adaptive import TimedChoice
from onemodel.core.interpreter import node_error
from onemodel.core.kernel_call import check_outputs
from onemodel.core.symbolic import evaluate_nested
from onemodel.errors import OneModelError

from . import _native
from .lower import signature_types
from .lowered import Loc, NativeSegment, Program, PyStep


class NativeError(OneModelError):
    """A native segment failed and the reference path did not reproduce it."""


def _view(bufs, loc: Loc) -> np.ndarray:
    """The elements of a location, in the dtype native memory holds them in."""
    size = loc.itemsize
    return np.ndarray(loc.shape, loc.dtype, buffer=bufs[loc.buf], offset=loc.off * size,
                      strides=tuple(s * size for s in loc.strides))


def _typed(bufs, loc: Loc, dtype) -> np.ndarray:
    """A value in native memory as numpy sees it: float32 and int64 as they are, bool from
    its 0.0 / 1.0 floats (a copy) (`lower` module doc)."""
    v = _view(bufs, loc)
    return v if v.dtype == np.dtype(dtype) else v.astype(dtype)


def batch_of(program: Program, types) -> int:
    """The run's batch: the leading dimension of the first feed with two or more (1 if none)."""
    for f in program.feeds:
        shape = types[f].shape
        if len(shape) >= 2:
            return int(shape[0])
    return 1


class NativePlan:
    """What `CompiledGraph.plan` returns for the compiled backend (``run(feeds)``, ``source``):
    a `Program` bound to the session's graph (its nodes, constants and value types at the
    program's signature: ``types``, computed when not given), registry ``ops`` and weight
    block. The program is all it reads of the lowering."""

    def __init__(self, program: Program, graph, ops, weights, pool=None, types=None) -> None:
        self.program = program
        self.graph, self.ops = graph, ops
        self.types = signature_types(graph, program.env) if types is None else types
        self.weights = weights
        #: the session's intra-op threads (`_native.Pool`), None at batch 1: a hand-off costs
        #: more than it saves on the small instructions of one sample
        self.pool = pool if batch_of(program, self.types) > 1 else None
        #: with a pool, whether a run uses it is chosen by timing (`onemodel.core.adaptive`;
        #: running alone is the baseline, the pool is tried first). Splits that pay on free
        #: cores lose when another program holds them (branches8 at batch 64 ran 1.34x slower
        #: on 2 threads with the second core taken); this notices within a few dozen runs.
        self.chooser = TimedChoice(2, start=1)
        self.segments = program.segments
        self.output_names = program.output_names
        self.source = program.source
        self.arena_bytes = max(64, program.arena_bytes)
        self.feed_names = program.feeds
        types = self.types
        #: the dtype each feed is handed to native code in (None: not at all); a bool feed as
        #: float32 0.0 / 1.0, the form native code holds bools in
        self.feed_as = [{np.dtype(np.float32): np.float32, np.dtype(np.int64): np.int64,
                         np.dtype(np.bool_): np.float32}.get(np.dtype(types[f].dtype.numpy))
                        for f in program.feeds]
        self.feed_native = [d is not None for d in self.feed_as]
        self.direct = list(program.direct)
        self.out_types = [types[w] for w in program.wanted]
        #: how each wanted value is fetched when not written directly (None: it is)
        self.fetch = program.fetch
        self._idle: list = []
        self.only_native = all(isinstance(s, NativeSegment) for s in self.segments)
        #: one native segment writing every output straight into the returned arrays: `run`
        #: takes a short path (a b1 run of a small model is tens of microseconds)
        self._one = (self.segments[0] if self.only_native and len(self.segments) == 1
                     and all(self.direct) and len(set(self.output_names)) == len(self.direct)
                     else None)
        self._out_shapes = [tuple(t.shape) for t in self.out_types]
        self._feed_args = (self.feed_names[0] if self.feed_native == [True]
                           and types[program.feeds[0]].dtype.numpy == np.float32 else None)

    def _arena(self) -> np.ndarray:
        try:
            return self._idle.pop()
        except IndexError:
            return self._new_arena()

    def _new_arena(self) -> np.ndarray:
        """A scratch arena (plan_check bounds its size before a plan is built)."""
        try:
            return np.empty(self.arena_bytes, np.uint8)
        except MemoryError:
            raise NativeError(f"the compiled plan's scratch arena of {self.arena_bytes} "
                              f"bytes could not be allocated") from None

    def run(self, feeds) -> dict:
        if self.pool is None:
            if self._one is not None:
                return self._run_one(feeds, None)
            return self._run(feeds, None)
        run = self._run_one if self._one is not None else self._run
        pool = self.pool
        return self.chooser.run(lambda use: run(feeds, pool if use else None))

    @property
    def use_pool(self) -> bool:
        """Whether most runs use the pool now."""
        return self.chooser.choice == 1

    def _run_one(self, feeds, pool) -> dict:
        try:
            arena = self._idle.pop()
        except IndexError:
            arena = self._new_arena()
        try:
            f32 = np.float32
            outs = [np.empty(s, f32) for s in self._out_shapes]
            fa = self._feed_args
            if fa is not None:  # one float32 feed
                bufs = (self.weights.array, arena, np.ascontiguousarray(feeds[fa]), *outs)
            else:
                bufs = (self.weights.array, arena,
                        *[np.ascontiguousarray(feeds[n], dtype=d) if d is not None else None
                          for n, d in zip(self.feed_names, self.feed_as)], *outs)
            seg = self._one
            failed = _native.run(seg.program, bufs, pool)
            if failed >= 0:
                self._native_failure(seg, failed, bufs, {}, feeds)
            return dict(zip(self.output_names, outs))
        finally:
            self._idle.append(arena)

    def ready_arena(self) -> None:
        """Allocate one arena now (the plan cache does for a loaded plan: a size no memory
        holds is then a bad entry, not a failing run)."""
        self._idle.append(np.empty(self.arena_bytes, np.uint8))

    def buffers(self, feeds, arena) -> tuple:
        """``(bufs, outs)``: the buffers a native call takes (weights, arena, the feeds as
        native code reads them, the outputs written directly) and those outputs (None for one
        fetched otherwise). `_run` and tools/real_models.py's per-instruction profile use it."""
        fa = [np.ascontiguousarray(feeds[n], dtype=d) if d is not None else feeds[n]
              for n, d in zip(self.feed_names, self.feed_as)]
        outs = [np.empty(t.shape, np.float32) if d else None
                for d, t in zip(self.direct, self.out_types)]
        return (self.weights.array, arena, *fa, *outs), outs

    def _run(self, feeds, pool) -> dict:
        arena = self._arena()
        try:
            bufs, outs = self.buffers(feeds, arena)
            py: dict = {}
            for seg in self.segments:
                if seg.__class__ is NativeSegment:
                    failed = _native.run(seg.program, bufs, pool)
                    if failed >= 0:
                        self._native_failure(seg, failed, bufs, py, feeds)
                else:
                    self._py_step(seg, bufs, py, feeds)
            result = {}
            for name, how, o, t in zip(self.output_names, self.fetch, outs, self.out_types):
                if how is None:  # written directly
                    result[name] = o
                    continue
                kind, what = how
                if kind == "loc":
                    result[name] = np.array(_typed(bufs, what, t.dtype.numpy))
                elif kind == "const":
                    result[name] = np.array(what, dtype=t.dtype.numpy)
                elif kind == "feed":
                    result[name] = np.array(feeds[what], dtype=t.dtype.numpy)
                else:
                    result[name] = np.array(py[what], dtype=t.dtype.numpy)
            return result
        finally:
            self._idle.append(arena)

    def _py_step(self, st: PyStep, bufs, py, feeds) -> None:
        args = []
        for spec in st.inputs:
            if spec is None:
                args.append(None)
            elif spec[0] == "loc":
                args.append(_view(bufs, spec[1]))
            elif spec[0] == "loc_bool":
                args.append(_view(bufs, spec[1]) != 0)
            elif spec[0] == "loc_i64":
                args.append(_typed(bufs, spec[1], np.int64))
            elif spec[0] == "const":
                args.append(spec[1])
            elif spec[0] == "feed":
                args.append(feeds[spec[1]])
            else:
                args.append(py[spec[1]])
        types = self.types
        try:
            res = check_outputs(st.kernel(*args, **st.params),
                                [types[o] for o in st.node.outputs], st.node.op, st.provider)
        except Exception as exc:
            raise node_error(st.node, exc, st.provider) from exc
        for (kind, what), o, arr in zip(st.outputs, st.node.outputs, res):
            if kind == "loc":
                try:
                    np.copyto(_view(bufs, what), arr, casting="no")
                except ValueError as exc:
                    raise node_error(st.node, ValueError(
                        f"its kernel returned shape {arr.shape}, inferred {what.shape}"),
                        st.provider) from exc
            else:
                py[o] = arr

    def _native_failure(self, seg: NativeSegment, index: int, bufs, py, feeds) -> None:
        """Re-run the failing segment's nodes on their numpy kernels to name the node that
        fails; if none does, name the node of the failing instruction."""
        prog, ops, consts = self.program, self.ops, self.graph.initializers
        values: dict = {}

        def get(v):
            if v in values:
                return values[v]
            if v in prog.folded:
                return prog.folded[v]
            if v in consts:
                return consts[v]
            if v in py:
                return py[v]
            if v in feeds:
                return feeds[v]
            if v in prog.locs:
                return _typed(bufs, prog.locs[v], self.types[v].dtype.numpy)
            raise KeyError(v)

        seen = []
        for node in seg.nodes:
            if node not in seen:
                seen.append(node)
        for node in seen:
            try:
                args = [None if i is None else get(i) for i in node.inputs]
                params = evaluate_nested(dict(node.params), dict(prog.env))
                res = ops[node.op].kernel(*args, **params)
            except Exception as exc:
                raise node_error(node, exc, ops[node.op].provider) from exc
            res = res if len(node.outputs) > 1 else (res,)
            values.update(zip(node.outputs, res))
        node = seg.nodes[index] if 0 <= index < len(seg.nodes) else seen[-1]
        raise node_error(node, NativeError(
            f"native instruction {index} of the compiled backend failed; the numpy kernels ran "
            f"this segment without error"))

    def describe(self) -> str:
        return self.source


__all__ = ["NativePlan", "NativeError"]
