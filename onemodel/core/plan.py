"""The plan compiler shared by backends: a graph becomes, per shape signature, one generated
Python function calling prebound kernels over preassigned buffers.

How a graph runs fast in numpy (torch.fx's habit: generate the code, then `compile` it):

1. `CompiledGraph` (what ``backend.compile(graph)`` returns) keeps one `Plan` per *shape
   signature*: the sizes bound to the symbolic axes and the outputs asked for. Building a plan
   evaluates every symbolic shape and param, so a plan is all plain ints.
2. For each node the backend picks a kernel: a `KernelDef` registered for this backend (its
   ``make(params, input_types)`` may specialise it: pre-pack a weight, accept ``out=``), else the
   op's own eager `OpDef.kernel` (so a third-party op runs with no extra code).
3. Liveness: every value gets the set of buffers ("roots") it may alias. Kernels that write into
   ``out=`` get a pooled slot, reused once every value aliasing it is dead; elementwise kernels
   may write over a dying input. Views (reshape, transpose) alias their input.
4. Code generation: one function, one line per node, kernels/constants as closure variables,
   literal params inlined. ``run`` is a flat sequence of calls; nothing is looked up per node.
5. Each plan hands out *runners* (one set of slot buffers each) from a lock-free pool, so several
   threads can run one plan at once. Outputs never alias slots, feeds, constants or each other.

A kernel error names the node that was executing: the generated line number maps to the node.
"""
from __future__ import annotations

import collections
import math
import threading
from typing import Any, Callable, Mapping, Sequence

import attrs
import numpy as np

from ..errors import OneModelError
from . import fp_errors
from .dynamic_plan import DynamicPlan, data_symbols
from .graph import Graph, Node, live_nodes
from .kernel_call import OutputCheck
from .node_errors import node_error
from .symbolic import evaluate, evaluate_nested
from .threads import BLAS, check_threads
from .types import TensorType

#: How a kernel treats memory (`PlanKernel.kind`).
OUT = "out"          # fn(*arrays, out=buffer) writes the whole output into buffer
VIEW = "view"        # the output is a view of the first array input (reshape, transpose)
FRESH = "fresh"      # the output owns newly allocated memory, of the right dtype and shape
UNKNOWN = "unknown"  # anything: may return a view of any input, a scalar, another dtype
KINDS = (OUT, VIEW, FRESH, UNKNOWN)


@attrs.frozen
class ConstantType(TensorType):
    """An input type handed to ``KernelDef.make`` for an input that is a graph constant: it also
    carries the array, so a kernel may pre-pack it once (transpose a weight, fold a scale)."""

    value: np.ndarray = attrs.field(default=None, eq=False, repr=False, kw_only=True)


@attrs.frozen
class PlanKernel:
    """What ``KernelDef.make`` may return instead of a plain callable.

    * ``fn`` is called with the node's arrays (only those at positions ``inputs`` when given, so
      a kernel that packed a constant need not receive it again); params are already bound.
    * ``kind``: one of `OUT`, `VIEW`, `FRESH`, `UNKNOWN` (see above).
    * ``inplace``: with ``OUT``, ``out`` may be one of the inputs (same shape and dtype); true for
      elementwise kernels.
    * ``extra``: constant positional arguments passed after the arrays (``np.maximum(x, 0)``
      is ``PlanKernel(np.maximum, OUT, inplace=True, extra=(0,))``).
    """

    fn: Callable
    kind: str = attrs.field(default=UNKNOWN, validator=attrs.validators.in_(KINDS))
    inplace: bool = False
    inputs: tuple | None = None
    extra: tuple = ()


class PlanError(OneModelError):
    """A graph could not be compiled into a plan (a kernel's ``make`` failed, a bad record)."""


# -- the compiled graph --------------------------------------------------------------------------
class CompiledGraph:
    """What `PlanBackend.compile` returns: plans per shape signature, built on first use.

    ``run(feeds, env, output_names)`` takes validated numpy feeds and the sizes bound to the
    symbolic axes (the Session checks both) and returns fresh arrays by output name. While it
    runs, BLAS may use at most ``blas_threads`` threads (`onemodel.core.threads.BLAS`), and
    numpy's floating-point warnings follow `fp_errors.setting` (ignored unless asked for).
    """

    def __init__(self, graph: Graph, backend: str, kernels: Mapping[str, Any],
                 max_plans: int = 32, blas_threads: int = 1) -> None:
        from ..registry import REGISTRY

        self.blas_threads = int(blas_threads)
        self.fp_errors = fp_errors.setting()
        self.graph = graph
        self.backend = backend
        self.kernels = dict(kernels)
        self.ops = REGISTRY.tables().ops
        self.symbols = tuple(graph.symbols())
        # sizes decided by tensor data at run time: such a graph runs a DynamicPlan
        self.data_symbols = frozenset(data_symbols(graph))
        self.max_plans = int(max_plans)
        self._plans: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def plan(self, env: Mapping[str, int], output_names: Sequence[str] | None = None) -> "Plan":
        outs = tuple(output_names) if output_names is not None else tuple(self.graph.output_names)
        key = (tuple(int(env[s]) for s in self.symbols), outs)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                sizes = {s: int(env[s]) for s in self.symbols}
                plan = (DynamicPlan(self.graph, sizes, outs, self.ops) if self.data_symbols
                        else self.build(sizes, outs))
                self._plans[key] = plan
                while len(self._plans) > self.max_plans:
                    self._plans.popitem(last=False)
            return plan

    def build(self, env: dict[str, int], output_names: tuple) -> "Plan":
        """A new plan for these sizes and outputs (a backend with its own scheduling overrides
        this; `plan` caches the result)."""
        return build_plan(self.graph, env, output_names, self.kernels, self.ops)

    def run(self, feeds: Mapping[str, np.ndarray], env: Mapping[str, int],
            output_names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        plan = self.plan(env, output_names)
        token = object()  # made before try: see BlasLimiter
        try:
            BLAS.enter(self.blas_threads, token)
            with np.errstate(all=self.fp_errors):
                return plan.run(feeds)
        finally:
            BLAS.exit(token)


class PlanBackend:
    """A backend made of a kernel table: ``compile(graph)`` returns a `CompiledGraph`.

    Backends that only contribute kernels (the numpy backend) create one of these; a backend
    with its own scheduling can subclass it and reuse `build_plan`'s liveness and codegen.
    ``threads`` (None: `default_threads`) is the most threads one run may use; a plan runs on
    the calling thread, so all of them go to BLAS.
    """

    options = ("max_plans", "threads")
    #: one thread: BLAS threads only pay on large products, and a server runs several sessions
    default_threads = 1

    def __init__(self, name: str, max_plans: int = 32, threads: int | None = None) -> None:
        self.name = name
        self.max_plans = max_plans
        threads = check_threads(threads, f"backend {name!r}")
        self.threads = self.default_threads if threads is None else threads

    def kernel_table(self) -> dict[str, Any]:
        from ..registry import REGISTRY

        return {op: k for (backend, op), k in REGISTRY.tables().kernels.items()
                if backend == self.name}

    def compile(self, graph: Graph) -> CompiledGraph:
        return CompiledGraph(graph, self.name, self.kernel_table(), max_plans=self.max_plans,
                             blas_threads=self.threads)


# -- building a plan -----------------------------------------------------------------------------
@attrs.define
class PlanStep:
    """One node of a plan with the kernel chosen for it (what `Plan.steps` holds)."""

    node: Node
    kernel: PlanKernel
    args: list  # value names (None for absent) actually passed
    provider: str | None = None  # the plugin whose kernel runs (named in kernel errors)


def _concrete(t: TensorType, env) -> TensorType:
    return TensorType(t.dtype, tuple(evaluate(d, env) for d in t.shape))


def _choose_kernel(node: Node, op, kdef, params: dict, in_types: list) -> PlanKernel:
    if kdef is not None:
        if kdef.make is not None:
            made = kdef.make(params, in_types)
            if isinstance(made, PlanKernel):
                return made
            if made is not None:
                if not callable(made):
                    raise PlanError(f"KernelDef.make for {node.op!r} ({kdef.provider}) returned "
                                    f"{type(made).__name__}, not a callable or PlanKernel")
                return PlanKernel(made)
        elif kdef.kernel is not None:
            return PlanKernel(_bind(kdef.kernel, params))
    return PlanKernel(_bind(op.kernel, params))


def _provider(op, kdef, pk: PlanKernel) -> str | None:
    """Whose kernel ``pk`` is: the op's own (perhaps bound to its params), else the backend's."""
    fn = pk.fn.fn if isinstance(pk.fn, _Bound) else pk.fn
    if kdef is None or fn is op.kernel:
        return op.provider
    return kdef.provider


def _bind(fn: Callable, params: dict) -> Callable:
    if not params:
        return fn
    return _Bound(fn, params)


class _Bound:
    """A kernel with its params; the codegen inlines literal params instead of calling this."""

    __slots__ = ("fn", "params")

    def __init__(self, fn, params):
        self.fn, self.params = fn, params

    def __call__(self, *arrays):
        return self.fn(*arrays, **self.params)


def literal(v) -> str | None:
    """Python source that evaluates to ``v`` itself (same type, same bits), or None when there is
    none. Generated code inlines such values and passes anything else as a closure constant:
    ``repr`` alone prints ``inf``/``nan`` (names Python cannot read back) and ``np.float32(1.0)``
    for numpy scalars, and an int or str subclass may print anything."""
    t = type(v)
    if v is None or t is bool or t is int or t is str:
        return repr(v)
    if t is float:
        if math.isfinite(v):
            return repr(v)  # the shortest repr round-trips exactly, -0.0 and subnormals included
        sign = "-" if math.copysign(1.0, v) < 0 else ""
        return f"{sign}float({'nan' if math.isnan(v) else 'inf'!r})"
    if t is tuple or t is list:
        parts = [literal(x) for x in v]
        if any(p is None for p in parts):
            return None
        if t is list:
            return "[" + ", ".join(parts) + "]"
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    return None


def is_literal(v) -> bool:
    """Whether generated code can inline ``v`` (`literal`), not pass it as a constant."""
    return literal(v) is not None


def input_types(node: Node, types: Mapping[str, TensorType],
                consts: Mapping[str, np.ndarray]) -> list:
    """The concrete input types of ``node``: a `ConstantType` (carrying the array) for inputs
    that are graph constants, None for absent optional inputs."""
    out = []
    for i in node.inputs:
        if i is None:
            out.append(None)
        elif i in consts:
            t = types[i]
            out.append(ConstantType(t.dtype, t.shape, value=consts[i]))
        else:
            out.append(types[i])
    return out


def build_plan(graph: Graph, env: Mapping[str, int], output_names: Sequence[str],
               kernels: Mapping[str, Any], ops: Mapping[str, Any],
               plan_class: type | None = None, **plan_options: Any) -> "Plan":
    """Compile ``graph`` at the sizes in ``env`` for ``output_names`` (see the module doc).
    ``plan_class`` (a `Plan` subclass: the plan compiler's extension point) is constructed with
    the steps, types, feeds, constants, wanted values and output names, then ``plan_options``
    as keywords."""
    out_map = dict(graph.outputs)
    wanted = [out_map[o] for o in output_names]
    # Keep the nodes the asked outputs need (and impure ones: they run for their effects).
    keep = live_nodes(graph.nodes, wanted,
                      lambda n: n.op in ops and not ops[n.op].is_pure(n.params))

    consts = graph.initializers
    feeds = [v.name for v in graph.inputs]
    types = {name: _concrete(v.type, env) for name, v in graph.values.items()}

    steps: list[PlanStep] = []
    for node in keep:
        op = ops.get(node.op)
        if op is None:
            raise PlanError(f"node {node.describe()}: op {node.op!r} is not installed")
        params = evaluate_nested(dict(node.params), env)
        in_types = input_types(node, types, consts)
        try:
            pk = _choose_kernel(node, op, kernels.get(node.op), params, in_types)
        except PlanError:
            raise
        except Exception as exc:  # noqa: BLE001 - name the node whose kernel could not be made
            raise PlanError(f"cannot prepare a kernel for node {node.describe()}: "
                            f"{type(exc).__name__}: {exc}") from exc
        if pk.kind == OUT and len(node.outputs) != 1:
            pk = attrs.evolve(pk, kind=UNKNOWN, fn=_OutAsFresh(pk.fn, types[node.outputs[0]]))
        args = list(node.inputs) if pk.inputs is None else [node.inputs[j] for j in pk.inputs]
        steps.append(PlanStep(node, pk, args, _provider(op, kernels.get(node.op), pk)))
    return (plan_class or Plan)(graph, steps, types, feeds, consts, wanted, list(output_names),
                                **plan_options)


class _OutAsFresh:
    __slots__ = ("fn", "t")

    def __init__(self, fn, t):
        self.fn, self.t = fn, t

    def __call__(self, *arrays):
        return self.fn(*arrays, out=np.empty(self.t.shape, self.t.dtype.numpy))


class CodeGen:
    """Names for generated code: value -> variable (``names``), and constants passed into the
    closure (``const(obj)`` returns the variable that holds ``obj``; ``var(prefix)`` a fresh
    name). `Plan.generate` makes one; a subclass may add its own closure entries."""

    def __init__(self) -> None:
        self.closure: dict[str, Any] = {"_np_empty": np.empty, "_ndarray": np.ndarray}
        self.names: dict[str, str] = {}
        self.counter = 0

    def var(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, obj: Any, prefix: str = "k") -> str:
        n = self.var(prefix)
        self.closure[n] = obj
        return n


class Plan:
    """One compiled shape signature: the generated source, its slots and a pool of runners.

    A backend extends the plan compiler by subclassing (the threaded backend's `ParallelPlan`
    does; docs/guide/backends.md, "Extending the plan compiler"). The constructor computes the
    values' roots (which buffers each may alias), then calls two overridable steps:

    * ``compute_slots(roots, pooled, defined, wanted)``: assign pooled buffers. It gets
      ``roots`` (value -> frozenset of roots), ``pooled`` (slot root -> the value written into
      it), ``defined`` (value -> index of its step) and ``wanted`` (the output values); it must
      set ``self.roots``, ``self.slot_types`` (one `TensorType` per buffer) and
      ``self.slot_of`` (slot root -> buffer index).
    * ``generate(feeds, consts, wanted)``: write the code and end with `compile_functions`.
      It may use `emit_step` (a step's lines), `emit_return` (the line building the outputs)
      and a `CodeGen`.

    ``run(feeds)`` may be overridden too; it takes a runner with `take_runner`, hands it back
    with `return_runner`, and turns a failure into the node's error with `error_for`. Anything
    else here (leading underscore) is the core's own and may change.
    """

    def __init__(self, graph: Graph, steps: list, types: dict, feeds: list, consts: Mapping,
                 wanted: list, output_names: list) -> None:
        self.graph = graph
        self.steps = steps
        self.types = types
        self.output_names = output_names
        self._providers = {id(st.node): st.provider for st in steps}
        self._line_nodes: dict[int, Node] = {}
        self._assign(feeds, consts, wanted)
        self.generate(feeds, consts, wanted)
        self._idle: list = []

    # -- liveness and slots ----------------------------------------------------------------------
    def _assign(self, feeds, consts, wanted) -> None:
        # An OUT kernel whose result is (a view of) a graph output writes into a fresh array,
        # so the output needs no copy: find those first, then compute the roots for real.
        direct: set[str] = set(wanted)
        for _ in range(2):
            roots, pooled, defined = self._roots(feeds, consts, direct)
            direct = set(wanted)
            for w in wanted:
                rs = roots[w]
                if len(rs) == 1:
                    (kind, v), = rs
                    if kind in ("slot", "fresh"):
                        direct.add(v)
        self.compute_slots(roots, pooled, defined, wanted)

    def _roots(self, feeds, consts, direct):
        roots: dict[str, frozenset] = {}
        pooled: dict[tuple, str] = {}  # pooled root -> the value written into it
        defined: dict[str, int] = {}
        for f in feeds:
            roots[f] = frozenset({("feed", f)})
        for c in consts:
            roots[c] = frozenset({("const", c)})
        self.out_mode: dict[str, str] = {}  # value -> "slot" | "fresh_out" (OUT kernels)
        for idx, st in enumerate(self.steps):
            kind = st.kernel.kind
            in_roots = [roots[a] for a in st.args if a is not None]
            for o in st.node.outputs:
                defined[o] = idx
                if kind == OUT:
                    if o in direct:
                        roots[o] = frozenset({("fresh", o)})
                        self.out_mode[o] = "fresh_out"
                    else:
                        roots[o] = frozenset({("slot", o)})
                        pooled[("slot", o)] = o
                        self.out_mode[o] = "slot"
                elif kind == VIEW:
                    roots[o] = in_roots[0] if in_roots else frozenset({("fresh", o)})
                elif kind == FRESH:
                    roots[o] = frozenset({("fresh", o)})
                else:
                    roots[o] = frozenset().union(*in_roots, {("fresh", o)})
        return roots, pooled, defined

    def compute_slots(self, roots, pooled, defined, wanted) -> None:
        """Assign the pooled buffers (an extension point: the class doc). Here: in node order,
        a buffer is free again once every value aliasing its root has had its last use."""
        INF = len(self.steps) + 1
        last_use: dict[str, int] = {}
        for idx, st in enumerate(self.steps):
            for a in st.args:
                if a is not None:
                    last_use[a] = idx
        for w in wanted:
            last_use[w] = INF
        root_end: dict = {}
        for v, rs in roots.items():
            end = last_use.get(v, -1)
            for r in rs:
                if root_end.get(r, -1) < end:
                    root_end[r] = end
        self.roots = roots

        # Slot assignment in node order: a slot is free once its root's last user has run.
        ending: dict[int, list] = {}
        for r, v in pooled.items():
            ending.setdefault(max(root_end.get(r, -1), defined[v]), []).append(r)
        free: dict[tuple, list[int]] = {}
        slot_of: dict[tuple, int] = {}
        self.slot_types: list[TensorType] = []
        for idx, st in enumerate(self.steps):
            taken = None
            o = st.node.outputs[0] if st.node.outputs else None
            if st.kernel.kind == OUT and self.out_mode.get(o) == "slot":
                t = self.types[o]
                key = (t.dtype, t.shape)
                slot = None
                if st.kernel.inplace:
                    slot = taken = self._inplace_slot(st, idx, root_end, slot_of, key, pooled)
                if slot is None:
                    lst = free.get(key)
                    if lst:
                        slot = lst.pop()
                    else:
                        slot = len(self.slot_types)
                        self.slot_types.append(t)
                slot_of[("slot", o)] = slot
            for r in ending.get(idx, ()):
                s = slot_of[r]
                if s != taken:
                    t = self.slot_types[s]
                    free.setdefault((t.dtype, t.shape), []).append(s)
        self.slot_of = slot_of

    def _inplace_slot(self, st, idx, root_end, slot_of, key, pooled):
        """A dying input's slot the elementwise kernel may overwrite, or None."""
        args = [a for a in st.args if a is not None]
        for a in args:
            r = ("slot", a)
            if r not in pooled or root_end.get(r) != idx or self.roots[a] != frozenset({r}):
                continue
            t = self.types[a]
            if (t.dtype, t.shape) != key:
                continue
            # every other input reading this buffer must be the very same array (no views)
            if any(b != a and r in self.roots[b] for b in args):
                continue
            return slot_of[r]
        return None

    # -- code generation -------------------------------------------------------------------------
    def generate(self, feeds, consts, wanted) -> None:
        """Write and compile the code (an extension point: the class doc). Here: one function
        ``run(feeds)``, one line per step."""
        gen = CodeGen()
        lines: list[tuple[str, Node | None]] = []
        for f in feeds:
            gen.names[f] = gen.var("i")
            lines.append((f"{gen.names[f]} = feeds[{f!r}]", None))
        for c in consts:
            gen.names[c] = gen.const(consts[c], "c")
        slot_vars = [f"s{i}" for i in range(len(self.slot_types))]
        for st in self.steps:
            lines.extend(self.emit_step(st, gen, slot_vars))
        lines.append((self.emit_return(gen.names, wanted), None))
        self.compile_functions(gen.closure, slot_vars, {"run(feeds)": lines}, "run")

    def emit_step(self, st: PlanStep, gen: "CodeGen", slot_vars: list[str]
                   ) -> list[tuple[str, Node]]:
        """The generated lines of one step (binding its outputs' variables in ``gen.names``)."""
        node, pk = st.node, st.kernel
        names, const, var = gen.names, gen.const, gen.var
        lines: list[tuple[str, Node]] = []
        fn = pk.fn
        args = ["None" if a is None else names[a] for a in st.args]
        if isinstance(fn, _Bound) and all(is_literal(v) for v in fn.params.values()):
            kname = const(fn.fn)
            kw = [f"{k}={literal(v)}" for k, v in fn.params.items()]
        elif isinstance(fn, _Bound):
            kname = const(fn.fn)
            kw = []
            for k, v in fn.params.items():
                if is_literal(v):
                    kw.append(f"{k}={literal(v)}")
                else:
                    kw.append(f"{k}={const(v, 'p')}")
        else:
            kname = const(fn)
            kw = []
        extra = [literal(v) if is_literal(v) else const(v, "e") for v in pk.extra]
        call_args = ", ".join(args + extra + kw)
        outs = node.outputs
        if pk.kind == OUT:
            o = outs[0]
            if self.out_mode[o] == "slot":
                target = slot_vars[self.slot_of[("slot", o)]]
                lines.append((f"{kname}({call_args}{', ' if call_args else ''}out={target})",
                              node))
                names[o] = target
            else:
                t = self.types[o]
                shp = const(t.shape, "shape")
                dt = const(t.dtype.numpy, "dt")
                v = var("v")
                lines.append((f"{v} = {kname}({call_args}{', ' if call_args else ''}"
                              f"out=_np_empty({shp}, {dt}))", node))
                names[o] = v
        elif pk.kind in (VIEW, FRESH):
            vs = [var("v") for _ in outs]
            lines.append((f"{', '.join(vs)} = {kname}({call_args})", node))
            names.update(zip(outs, vs))
        else:
            # an op's own kernel: its result checked as everywhere (`kernel_call`), the full
            # check only when it is not already an array of the inferred dtype and shape
            vs = [var("v") for _ in outs]
            chk = const(OutputCheck([self.types[o] for o in outs], node.op, st.provider),
                        "chk")
            if len(outs) == 1:
                t = self.types[outs[0]]
                dt = const(t.dtype.numpy, "dt")
                shp = const(tuple(t.shape), "shape")
                v = vs[0]
                lines.append((f"{v} = {kname}({call_args})", node))
                lines.append((f"if {v}.__class__ is not _ndarray or {v}.dtype is not {dt} "
                              f"or {v}.shape != {shp}: {v} = {chk}({v})", node))
            else:
                lines.append((f"{', '.join(vs)}, = {chk}({kname}({call_args}))", node))
            names.update(zip(outs, vs))
        return lines

    def emit_return(self, names: Mapping[str, str], wanted) -> str:
        """The return line: copy whatever may alias a slot, a feed, a constant or an earlier
        output."""
        seen_roots: set = set()
        rets = []
        for w in wanted:
            rs = self.roots[w]
            shared = any(r[0] in ("slot", "feed", "const") for r in rs) or bool(rs & seen_roots)
            seen_roots |= rs
            rets.append(f"{names[w]}.copy()" if shared else names[w])
        return f"return ({', '.join(rets)}{',' if len(rets) == 1 else ''})"

    def compile_functions(self, closure: dict, slot_vars: list[str],
                 functions: Mapping[str, list], returns: str) -> None:
        """Compile ``functions`` (signature -> lines) inside one runner factory that allocates
        the slots and returns ``returns``; sets ``source``, ``closure`` and ``_make_runner``."""
        params = ", ".join(closure)
        src = [f"def _factory({params}):",
               "    def _make_runner(_alloc):"]
        for i, sv in enumerate(slot_vars):
            src.append(f"        {sv} = _alloc({i})")
        for signature, lines in functions.items():
            src.append(f"        def {signature}:")
            first = len(src) + 1
            for j, (text, node) in enumerate(lines):
                src.append("            " + text)
                if node is not None:
                    self._line_nodes[first + j] = node
            if not lines:
                src.append("            pass")
        src.append(f"        return {returns}")
        src.append("    return _make_runner")
        self.source = "\n".join(src) + "\n"
        code = compile(self.source, f"<onemodel plan {id(self):x}>", "exec")
        self._code_filename = code.co_filename
        ns: dict[str, Any] = {}
        exec(code, ns)  # noqa: S102 - our own generated source
        self.closure = closure  # the generated function's constants, by variable name
        self._make_runner = ns["_factory"](**closure)
        self.n_nodes = len(self.steps)

    # -- running ---------------------------------------------------------------------------------
    def _alloc(self, i: int) -> np.ndarray:
        t = self.slot_types[i]
        return np.empty(t.shape, t.dtype.numpy)

    def runner(self) -> Callable:
        """A new function with its own buffers (for one thread at a time)."""
        return self._make_runner(self._alloc)

    def take_runner(self) -> Any:
        """An idle runner of this plan, or a new one (`runner`); hand it back with
        `return_runner` once no thread uses its buffers any more."""
        try:
            return self._idle.pop()
        except IndexError:
            return self.runner()

    def return_runner(self, runner: Any) -> None:
        self._idle.append(runner)

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        r = self.take_runner()
        try:
            outs = r(feeds)
        except Exception as exc:
            err = self.error_for(exc)
            if err is None:
                raise
            raise err from exc
        finally:
            self.return_runner(r)
        return dict(zip(self.output_names, outs))

    def error_for(self, exc: BaseException) -> BaseException | None:
        """The error naming the node whose generated line raised ``exc`` (its op, outputs,
        source line and kernel's plugin: `interpreter.node_error`), or None when no node's
        line did."""
        node = self.failing_node(exc)
        if node is None:
            return None
        return node_error(node, exc, self._providers.get(id(node)))

    def failing_node(self, exc: BaseException) -> Node | None:
        """The node whose generated line raised ``exc`` (the innermost one), or None."""
        tb = exc.__traceback__
        found = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self._code_filename:
                found = self._line_nodes.get(tb.tb_lineno)
            tb = tb.tb_next
        return found

    def describe(self) -> str:
        """The generated source (for debugging and the docs)."""
        return self.source


__all__ = ["OUT", "VIEW", "FRESH", "UNKNOWN", "ConstantType", "PlanKernel", "PlanError",
           "CompiledGraph", "PlanBackend", "Plan", "PlanStep", "CodeGen", "build_plan",
           "input_types", "literal", "is_literal"]
