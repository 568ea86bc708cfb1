"""Lowering: a graph at one shape signature becomes native segments (flat instruction arrays over
the weight block and one scratch arena) with numpy steps between them for ops without a
lowering.

Every value the native code touches is a `Loc`: a buffer, an offset and strides (in elements of
its dtype; `program.addr` makes the byte address an instruction holds), so views (reshape,
transpose, expand) are new strides over the same memory and cost nothing. A kernel that needs
contiguous input gets a copy made right before it. Arena space is given out by liveness (a
value's memory is reused once every value seeing it is dead).

Besides float32, native code sees two dtypes: bool values are stored as float32 0.0 / 1.0 (what
numpy's promotion to float gives), so masks run in the pointwise VM; int64 values (an int feed
such as token ids, its views, integer constants) keep their 8-byte elements, addressed by
their own bytes (a `Loc` of dtype int64), and only the rules that ask (``loc(v, ints=True)``:
views, gather indices, the VM's int64 load) read them.

The result is plain data: `Lowering.program` gives the immutable `lowered.Program` that the plan
runs, the plan cache stores and plan_check validates; the lowering itself is dropped after.
"""
from __future__ import annotations

import copy
import math
from typing import Any, Mapping, Sequence

import attrs
import numpy as np

from onemodel.core.graph import Graph, Node, live_nodes
from onemodel.core.kernel_call import check_outputs, fold_fits
from onemodel.core.symbolic import evaluate, evaluate_nested
from onemodel.core.types import TensorType

from . import heuristics
from . import program as P
from .arena import Arena
from .lowered import Loc, NativeSegment, Program, PyStep, contiguous_strides
from .pointwise import Unsupported
from .weights import WeightBlock

INF = 1 << 60


def signature_types(graph: Graph, env: Mapping[str, int]) -> dict:
    """Every value's type at one shape signature (its symbolic axes evaluated)."""
    return {name: TensorType(v.type.dtype, tuple(evaluate(d, env) for d in v.type.shape))
            for name, v in graph.values.items()}


@attrs.frozen
class _Native:
    """One native instruction emitted, and its node (grouped into segments by `program`)."""

    ins: list
    node: Node


@attrs.define
class Trial:
    """What a rule may change while it lowers a node, and what a rule that gives up (returns
    False or raises `Unsupported`) rolls back: `Lowering` keeps every field here (its
    attributes of these names read and write them), and a trial copies them all, so a field
    added here is rolled back with no other change."""

    #: `_Native` instructions and `PyStep`s in order (`program` groups them into segments)
    steps: list = attrs.field(factory=list)
    locs: dict = attrs.field(factory=dict)            # value -> Loc
    direct: dict = attrs.field(factory=dict)          # output index -> value written directly
    accs: dict = attrs.field(factory=dict)  # id(sum node) -> (Loc, absorbed input positions)
    absorbed: set = attrs.field(factory=set)  # values whose producer wrote an accumulator
    fused: dict = attrs.field(factory=dict)   # id(node) -> its output, from an earlier node
    arena: Arena = attrs.field(factory=Arena)
    temps: list = attrs.field(factory=list)           # scratch allocations freed after a node
    alloc_refs: dict = attrs.field(factory=dict)      # allocation -> values that see it
    alloc_span: dict = attrs.field(factory=dict)      # allocation -> (offset, bytes)
    next_alloc: int = 0

    def copy(self) -> "Trial":
        return Trial(**{f.name: copy.copy(getattr(self, f.name)) for f in attrs.fields(Trial)})


class Lowering:
    """One shape signature of one graph, lowered (see the module doc)."""

    def __init__(self, graph: Graph, env: Mapping[str, int], output_names: Sequence[str],
                 weights: WeightBlock, ops: Mapping[str, Any], rules: Mapping[str, Any],
                 numpy_kernels: Mapping[str, Any] | None = None) -> None:
        self.graph, self.env, self.weights, self.ops, self.rules = graph, env, weights, ops, rules
        self.output_names = list(output_names)
        out_map = dict(graph.outputs)
        self.wanted = [out_map[o] for o in output_names]
        self.nodes = live_nodes(graph.nodes, self.wanted,
                                lambda n: n.op in ops and not ops[n.op].is_pure(n.params))
        self.types = signature_types(graph, env)
        self.consts = dict(graph.initializers)  # and the values folded for this signature
        self.folded: set[str] = set()
        self.feeds = [v.name for v in graph.inputs]
        self.n_feeds = len(self.feeds)
        self.trial = Trial()  # locs, steps, the arena, ... (`Trial`)
        self.uses: dict[str, list] = {}
        for idx, node in enumerate(self.nodes):
            for i in node.inputs:
                if i is not None:
                    self.uses.setdefault(i, []).append(idx)
        self.last_use = {v: max(ix) for v, ix in self.uses.items()}
        counts: dict[str, int] = {}
        for w in self.wanted:
            counts[w] = counts.get(w, 0) + 1
            self.last_use[w] = INF
        produced = {o for n in self.nodes for o in n.outputs}
        #: outputs a kernel may write straight into the array returned to the caller
        self.direct_ok = {w: j for j, w in enumerate(self.wanted)
                          if counts[w] == 1 and w in produced
                          and self.types[w].dtype.numpy == np.float32}
        for i, f in enumerate(self.feeds):
            t = self.types[f]
            if t.dtype.numpy == np.float32:
                self.locs[f] = Loc(2 + i, 0, t.shape, contiguous_strides(t.shape))
            elif t.dtype.numpy == np.int64:
                self.locs[f] = Loc(2 + i, 0, t.shape, contiguous_strides(t.shape), None,
                                   "int64")
            elif t.dtype.numpy == np.bool_:  # handed over as float32 0 / 1 (plan.feed_as)
                self.locs[f] = Loc(2 + i, 0, t.shape, contiguous_strides(t.shape))
        self.numpy_kernels = numpy_kernels or {}
        #: the kernel choices measured for the copy in use (heuristics.py)
        self.heuristics = heuristics.current()
        self.native_nodes = 0
        self.fallback_nodes: list[str] = []
        #: why a node a rule was tried on runs on numpy (by its id): the Unsupported message,
        #: a formula's call the VM lacks say (describe() prints it)
        self.fallback_reasons: dict[int, str] = {}
        self._lower()

    # -- memory ----------------------------------------------------------------------------------
    def shape(self, value: str) -> tuple:
        return self.types[value].shape

    def is_f32(self, value: str | None) -> bool:
        return value is not None and self.types[value].dtype.numpy == np.float32

    def is_bool(self, value: str | None) -> bool:
        """A bool value: native code holds it as float32 0.0 / 1.0."""
        return value is not None and self.types[value].dtype.numpy == np.bool_

    def is_i64(self, value: str | None) -> bool:
        return value is not None and self.types[value].dtype.numpy == np.int64

    def new_alloc(self, n: int, owner: str | None) -> Loc:
        """``n`` floats of the arena (which counts bytes)."""
        nbytes = 4 * int(n)
        at = self.arena.alloc(nbytes)
        off = at // 4
        aid = self.next_alloc
        self.next_alloc += 1
        self.alloc_span[aid] = (at, nbytes)
        self.alloc_refs[aid] = {owner} if owner is not None else set()
        if owner is None:
            self.temps.append(aid)
        return Loc(P.ARENA, off, (), (), aid)

    def dest(self, value: str) -> Loc:
        """Memory for a new contiguous value: the caller's output array when it may be, else
        the arena."""
        shape = self.shape(value)
        if value in self.direct_ok:
            j = self.direct_ok[value]
            self.direct[j] = value
            return Loc(2 + self.n_feeds + j, 0, shape, contiguous_strides(shape))
        loc = self.new_alloc(max(1, math.prod(shape)), value)
        return loc.with_view(shape, contiguous_strides(shape))

    def scratch(self, n: int) -> Loc:
        return self.new_alloc(max(1, int(n)), None)

    def own(self, loc: Loc) -> Loc:
        """A scratch allocation kept past this node: it becomes the memory of the value bound
        to it next."""
        if loc.alloc in self.temps:
            self.temps.remove(loc.alloc)
        return loc

    def bind(self, value: str, loc: Loc) -> None:
        self.locs[value] = loc
        if loc.alloc is not None:
            self.alloc_refs[loc.alloc].add(value)

    def loc(self, value: str, ints: bool = False) -> Loc:
        """The native location of an input value (constants go to the weight block). An int64
        value only for a rule that reads int64 elements (``ints``)."""
        if self.is_i64(value):
            if not ints:
                raise Unsupported(f"{value} is int64")
            if value not in self.locs and value in self.consts:
                arr = np.asarray(self.consts[value])
                off = self.weights.ints(self.const_key(value), arr)
                self.locs[value] = Loc(P.WEIGHTS, off, tuple(arr.shape),
                                       contiguous_strides(arr.shape), None, "int64")
        if value in self.locs:
            return self.locs[value]
        if value in self.consts:
            arr = np.asarray(self.consts[value])
            off = self.weights.plain(self.const_key(value), arr)
            loc = Loc(P.WEIGHTS, off, tuple(arr.shape), contiguous_strides(arr.shape))
            self.locs[value] = loc
            return loc
        raise Unsupported(f"{value} is not available to native code")

    def contiguous(self, value_or_loc) -> Loc:
        """A contiguous location of a value, copying a strided view into scratch first."""
        loc = self.loc(value_or_loc) if isinstance(value_or_loc, str) else value_or_loc
        if loc.contiguous:
            return loc.with_view(loc.shape, contiguous_strides(loc.shape))
        shape, strides = squeeze_dims(loc.shape, loc.strides)
        if len(shape) > 6:
            raise Unsupported("a copy of more than 6 dims")
        pad = 6 - len(shape)
        tmp = self.scratch(loc.size)
        self.emit(P.instruction(P.I_COPY, loc.addr, tmp.addr, *((1,) * pad + shape),
                                *((0,) * pad + strides)))
        return tmp.with_view(loc.shape, contiguous_strides(loc.shape))

    def matrix(self, value_or_loc) -> tuple[Loc, int, int, int]:
        """``(loc, M, K, lda)`` reading a value as rows of its last axis."""
        loc = self.loc(value_or_loc) if isinstance(value_or_loc, str) else value_or_loc
        k = loc.shape[-1]
        m = math.prod(loc.shape[:-1])
        if len(loc.shape) == 1 or m == 1:
            if loc.strides[-1] == 1 or k == 1:
                return loc, m, k, k
        elif loc.strides[-1] == 1 or k == 1:
            lead, lst = squeeze_dims(loc.shape[:-1], loc.strides[:-1])
            if len(lead) <= 1:
                return loc, m, k, (lst[0] if lst else k)
        c = self.contiguous(loc)
        return c, m, k, k

    # -- emitting --------------------------------------------------------------------------------
    def emit(self, ins: list) -> None:
        self.steps.append(_Native(ins, self.current))

    # -- the walk --------------------------------------------------------------------------------
    def _lower(self) -> None:
        for idx, node in enumerate(self.nodes):
            self.current = node
            params = evaluate_nested(dict(node.params), self.env)
            if self._fold(node, params):
                self._release(idx, node)
                continue
            done = False
            rule = self.rules.get(node.op)
            op = self.ops.get(node.op)
            if rule is None and op is not None and getattr(op, "traits", None) is not None \
                    and op.traits.pointwise is not None:
                rule = self.rules.get("*pointwise")
            if rule is not None and self._lowerable(node):
                before = self.trial.copy()
                try:
                    done = rule(self, node, params) is not False
                except Unsupported as exc:
                    done = False
                    self.fallback_reasons[id(node)] = str(exc)
                if not done:
                    self.trial = before
            if done:
                self.native_nodes += 1
            else:
                self._fallback(node, params)
            self._release(idx, node)

    def const_key(self, value: str):
        """The weight block's key of a constant: a value folded for this signature may differ
        in the next one (the weight block is the session's)."""
        if value in self.folded:
            return value, tuple(sorted(self.env.items()))
        return value

    def _fold(self, node: Node, params: dict) -> bool:
        """Compute a node whose inputs are all constants (or that has none) once, for this
        shape signature: its outputs become constants. A text model's position ids (arange over
        the sequence), masks built from them and their casts and reshapes then cost nothing per
        run. A kernel that fails is left to fail at run time, naming its node."""
        op = self.ops.get(node.op)
        if op is None or not op.is_pure(node.params) \
                or any(o in self.wanted for o in node.outputs) \
                or any(v is not None and v not in self.consts for v in node.inputs) \
                or not fold_fits([self.types[o] for o in node.outputs]):
            return False
        kernel, provider = self._numpy_kernel(node, op, params)
        try:
            with np.errstate(all="ignore"):
                res = kernel(*[None if v is None else self.consts[v] for v in node.inputs],
                             **params)
            res = check_outputs(res, [self.types[o] for o in node.outputs], node.op, provider)
        except Exception:  # noqa: BLE001 - run on numpy at run time, where it names the node
            return False
        out = dict(zip(node.outputs, res))
        self.consts.update(out)
        self.folded.update(out)
        return True

    def _lowerable(self, node: Node) -> bool:
        for v in list(node.inputs) + list(node.outputs):
            if v is None:
                continue
            t = self.types[v]
            if any(int(d) <= 0 for d in t.shape):
                return False
        return all(self.is_f32(o) or self.is_bool(o)
                   or (self.is_i64(o) and self._is_view(node)) for o in node.outputs)

    def _is_view(self, node: Node) -> bool:
        """The op's record declares a view (its lowering only re-views the input): its int64
        outputs stay native too."""
        return getattr(getattr(self.ops.get(node.op), "traits", None), "view", None) is not None

    def _release(self, idx: int, node: Node) -> None:
        dead = [v for v in node.inputs if v is not None and self.last_use.get(v) == idx]
        dead += [o for o in node.outputs if o not in self.last_use]
        for v in dead:
            loc = self.locs.get(v)
            if loc is not None and loc.alloc is not None:
                refs = self.alloc_refs.get(loc.alloc)
                if refs is not None:
                    refs.discard(v)
                    if not refs:
                        self._free(loc.alloc)
        for aid in self.temps:
            self._free(aid)
        self.temps = []

    def _free(self, aid: int) -> None:
        span = self.alloc_span.pop(aid, None)
        if span is not None:
            self.alloc_refs.pop(aid, None)
            self.arena.release(*span)

    def _fallback(self, node: Node, params: dict) -> None:
        op = self.ops.get(node.op)
        self.fallback_nodes.append(node.op)
        ins = []
        for v in node.inputs:
            if v is None:
                ins.append(None)
            elif v in self.locs:
                kind = "loc_bool" if self.is_bool(v) else "loc_i64" if self.is_i64(v) else "loc"
                ins.append((kind, self.locs[v]))
            elif v in self.consts:
                ins.append(("const", self.consts[v]))
            elif v in self.feeds:
                ins.append(("feed", v))
            else:
                ins.append(("py", v))
        outs = []
        for o in node.outputs:
            t = self.types[o]
            if self.is_f32(o) and all(int(d) > 0 for d in t.shape) and o in self.last_use:
                loc = self.dest(o)
                self.bind(o, loc)
                outs.append(("loc", loc))
            else:
                outs.append(("py", o))
        kernel, provider = self._numpy_kernel(node, op, params)
        self.steps.append(PyStep(node, kernel, params, ins, outs, provider))

    def _numpy_kernel(self, node, op, params):
        """The numpy backend's kernel for this op when it has a plain one, else the op's own."""
        kdef = self.numpy_kernels.get(node.op)
        if kdef is not None and kdef.kernel is not None and kdef.make is None:
            return kdef.kernel, kdef.provider
        return op.kernel, op.provider

    # -- the result ------------------------------------------------------------------------------
    def segments(self) -> list:
        """The steps grouped: runs of native instructions become one `NativeSegment` each."""
        out: list = []
        run: list = []
        for st in self.steps + [None]:
            if isinstance(st, _Native):
                run.append(st)
                continue
            if run:
                out.append(NativeSegment(P.assemble([x.ins for x in run]),
                                         tuple(x.node for x in run)))
                run = []
            if st is not None:
                out.append(st)
        return out

    def program(self) -> Program:
        """The lowering's result as plain data (`lowered.Program`)."""
        segments = self.segments()
        fetch = []
        for j, w in enumerate(self.wanted):
            if j in self.direct:
                fetch.append(None)
            elif w in self.locs:
                fetch.append(("loc", self.locs[w]))
            elif w in self.consts:
                fetch.append(("const", self.consts[w]))
            elif w in self.feeds:
                fetch.append(("feed", w))
            else:
                fetch.append(("py", w))
        return Program(
            env={k: int(v) for k, v in self.env.items()}, feeds=self.feeds,
            output_names=self.output_names, wanted=self.wanted,
            direct=[j in self.direct for j in range(len(self.wanted))], fetch=fetch,
            segments=segments, locs=self.locs,
            folded={k: self.consts[k] for k in sorted(self.folded) if k in self.consts},
            arena_bytes=int(self.arena.size), source=self.describe(segments))

    def describe(self, segments=None) -> str:
        lines = [f"# compiled backend: {self.native_nodes} native node(s), "
                 f"{len(self.fallback_nodes)} on numpy"
                 + (f" ({', '.join(sorted(set(self.fallback_nodes)))})"
                    if self.fallback_nodes else "")
                 + (f", {len(self.folded)} value(s) folded" if self.folded else "")
                 + f"; arena {self.arena.size} bytes"]
        for seg in self.segments() if segments is None else segments:
            if isinstance(seg, NativeSegment):
                lines.append("native segment:")
                for ins, node in zip(seg.instructions, seg.nodes):
                    lines.append(f"  {P.NAMES.get(ins[0], ins[0]):<11} "
                                 f"{node.op} -> %{', %'.join(node.outputs)}")
            else:
                why = self.fallback_reasons.get(id(seg.node))
                lines.append(f"numpy: {seg.node.op} -> %{', %'.join(seg.node.outputs)}"
                             + (f"  (not native: {why})" if why else ""))
        return "\n".join(lines) + "\n"


def squeeze_dims(shape, strides) -> tuple[tuple, tuple]:
    """Drop size-1 dims and merge dims that are contiguous with each other."""
    dims = [(int(d), int(s)) for d, s in zip(shape, strides) if int(d) != 1]
    out: list[list[int]] = []
    for d, s in dims:
        if out and out[-1][1] == s * d:
            out[-1] = [out[-1][0] * d, s]
        else:
            out.append([d, s])
    return tuple(d for d, _ in out), tuple(s for _, s in out)


def _trial_field(name: str) -> property:
    return property(lambda self: getattr(self.trial, name),
                    lambda self, value: setattr(self.trial, name, value),
                    doc=f"The lowering's {name} (`Trial`).")


for _f in attrs.fields(Trial):
    setattr(Lowering, _f.name, _trial_field(_f.name))
del _f

__all__ = ["Lowering", "Trial", "Loc", "NativeSegment", "PyStep", "Program", "contiguous_strides",
           "squeeze_dims", "signature_types"]
