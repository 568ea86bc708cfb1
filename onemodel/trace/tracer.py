"""`Tracer`: runs ops eagerly on example inputs and records each application as a graph node.

The tracer is the observer the core consults (see `onemodel.core.tracing_hooks`): every op call,
data read, in-place change, factory and `no_grad` inside a trace comes through here, so every
refusal can name the operation and the user's line.
"""
from __future__ import annotations

import functools
import keyword
import numbers
import threading
import weakref
from typing import Any

import numpy as np

from ..core import guards, tracing_hooks
from ..core.dispatch import apply as apply_op, eager, infer
from ..core.dtype import DType
from ..core.graph import GraphBuilder
from ..core.symbolic import Dim, evaluate, format_shape
from ..core.symint import SymInt, hint_of
from ..core.tensor import Tensor
from ..core.types import TensorType
from ..errors import OneModelError, TraceException

SIZE_KINDS = ("shape", "size")


def _where() -> str:
    frame = tracing_hooks.user_frame()
    return f"\n  at {frame}" if frame else ""


def prune_unused(graph):
    """The graph without recorded nodes whose results nothing uses (and that have no effects)."""
    from ..core.graph import live_nodes, rebuild

    keep = live_nodes(graph.nodes, [v for _, v in graph.outputs])
    return graph if len(keep) == len(graph.nodes) else rebuild(graph, keep)


def _leaves_the_thread_as_it_was(method):
    """Any failure inside ``method`` aborts the trace (see `Tracer.abort`), so a Tracer used
    without a `with` block never leaves its thread recording after an error. A call from
    another thread is refused without touching the trace its own thread is recording."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except BaseException as exc:
            if not self._finished and self._owner in (None, threading.get_ident()):
                self.abort(f"{type(exc).__name__} in Tracer.{method.__name__}: {exc}")
            raise

    return wrapper


class Tracer:
    """Records a function into a graph. Use `om.trace` for a function (one input, or a dict
    of inputs) with the check; use a Tracer directly for other names or code that is not one
    function::

        with om.Tracer() as tracer:
            tokens = tracer.input("tokens", example_tokens, "batch", "seq")
            tracer.output("logits", fn(tokens))
            traced = tracer.finish()

    Recording is per thread and the thread holds the Tracer weakly; any refusal or error inside
    an op or inside one of its own methods (``input``, ``output``, ``finish``) aborts it, leaving
    the thread as it was, with or without a ``with`` block (see docs/guide/tracing.md).
    """

    def __init__(self) -> None:
        self._ref = weakref.ref(self)  # what traced tensors hold, so they never keep us alive
        self._owner: int | None = None  # the thread recording
        self._installed = False
        self._aborted: str | None = None
        self._random: dict[int, tuple[Any, str, str | None]] = {}  # id -> (weakref, op, line)
        self.builder = GraphBuilder()
        self.env: dict[str, int] = {}  # symbolic axis -> example size
        self.axis_records: list[tuple[str, int, Any, int]] = []  # (input, axis, name|None, size)
        self.examples: dict[str, tuple[np.ndarray, tuple]] = {}
        self.outputs: list[tuple[str, str]] = []
        self._constants: dict[int, tuple[Tensor, str, int]] = {}  # id -> (tensor, value, version)
        self.constant_names: dict[int, str] = {}  # id(tensor) -> preferred initializer name
        self._finished = False
        #: plain ints (constants, always) that equal a symbolic axis's example size, kept for
        #: the note when a frozen literal is what broke: (axis, value, op, source)
        self.ints_equal_to_axes: list[tuple[str, int, str, str | None]] = []
        self.size_values: set[str] = set()  # values holding a size used as a tensor (x / n)
        self._current_op = ""

    # -- activation ------------------------------------------------------------------------------
    def _check_usable(self) -> None:
        if self._finished:
            if self._aborted:
                raise TraceException(f"this Tracer was aborted by an earlier error and records "
                                     f"nothing more; create a new Tracer. The error was: "
                                     f"{self._aborted}")
            raise TraceException("this Tracer has finished; create a new one")
        if self._owner is not None and self._owner != threading.get_ident():
            raise TraceException("this Tracer records on the thread that gave its first input; "
                                 "use one Tracer per thread")

    def _activate(self) -> None:
        self._check_usable()
        if not self._installed:
            current = tracing_hooks.current()
            if current is not None and current is not self:
                raise TraceException("another trace is already recording on this thread; "
                                     "finish it (or leave its `with` block) before starting a "
                                     "new one")
            tracing_hooks.install(self)
            self._owner = threading.get_ident()
            self._installed = True

    def _deactivate(self) -> None:
        if self._installed:
            tracing_hooks.uninstall(self)  # on another thread, `current()` sees _finished
            self._installed = False

    def __enter__(self) -> "Tracer":
        """Recording starts at the first `input`; leaving the block always stops it."""
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None and not self._finished:
            self.abort(f"{exc_type.__name__} raised inside the traced code")
        self._deactivate()

    def abort(self, reason: str | None = None) -> None:
        """Stop recording without producing a model; the thread is left as before the trace
        (grad mode, eager reads and random draws work again). Using the Tracer afterwards raises
        a `TraceException` that says why it was aborted."""
        if not self._finished:
            self._aborted = reason or "abort() was called"
        self._finished = True
        self._deactivate()

    # -- inputs and outputs ----------------------------------------------------------------------
    @_leaves_the_thread_as_it_was
    def input(self, name: str, example, *axis_names) -> Tensor:
        """Declare a graph input; each axis gets a symbolic name or None (fixed)."""
        self._check_usable()
        if not isinstance(name, str) or not name:
            raise TraceException(f"an input name must be a non-empty string, got {name!r}")
        if name in self.builder.values:
            raise TraceException(f"input name {name!r} is used twice")
        arr = example._data if isinstance(example, Tensor) else example
        if not isinstance(arr, np.ndarray):
            raise TraceException(f"input {name!r}: the example must be a Tensor or a numpy array, "
                                 f"got {type(example).__name__}")
        DType.from_numpy(arr.dtype)
        if len(axis_names) == 1 and isinstance(axis_names[0], (tuple, list)):
            axis_names = tuple(axis_names[0])
        if not axis_names and arr.ndim:
            axis_names = (None,) * arr.ndim
        if len(axis_names) != arr.ndim:
            raise TraceException(f"input {name!r} has {arr.ndim} axes (shape {arr.shape}) but "
                                 f"{len(axis_names)} axis names were given; give one name or None "
                                 f"per axis")
        new_records = []
        for axis, (aname, size) in enumerate(zip(axis_names, arr.shape)):
            if aname is not None and (not isinstance(aname, str) or not aname.isidentifier()
                                      or keyword.iskeyword(aname)):
                raise TraceException(f"input {name!r} axis {axis}: an axis name must be an "
                                     f"identifier (not a Python keyword) or None, got {aname!r}")
            new_records.append((name, axis, aname, int(size)))
        self._check_axes(self.axis_records + new_records)
        self.axis_records += new_records
        shape: list[Any] = []
        for _n, _a, aname, size in new_records:
            if aname is None:
                shape.append(size)
            else:
                self.env[aname] = size
                shape.append(Dim.symbol(aname))
        self.builder.add_input(name, TensorType(DType.from_numpy(arr.dtype), tuple(shape)))
        self.examples[name] = (arr, tuple(axis_names))
        self._activate()
        t = Tensor._wrap(arr)
        t._tv = (self._ref, name)
        return t

    def _check_axes(self, records) -> None:
        sizes_in_use = {size for *_x, size in records}
        for inp, axis, aname, size in records:
            if aname is None:
                continue
            where = f"input {inp!r} axis {axis} (named {aname!r})"
            suggestion = next(n for n in range(max(sizes_in_use) + 1, 10**9)
                              if n not in sizes_in_use)
            if size < 2:
                raise TraceException(
                    f"{where} has example size {size}: a symbolic axis needs an example size of at "
                    f"least 2, since a size-1 axis broadcasts and the graph would specialise on "
                    f"it. Use an example of size {suggestion} on this axis.")
            for inp2, axis2, aname2, size2 in records:
                if (inp2, axis2) == (inp, axis):
                    continue
                if aname2 == aname and size2 != size:
                    raise TraceException(
                        f"{where} has example size {size} but axis {axis2} of input {inp2!r} has "
                        f"the same name with size {size2}; one name must have one size")
                if aname2 != aname and size2 == size:
                    other = f"named {aname2!r}" if aname2 else "fixed"
                    raise TraceException(
                        f"{where} has example size {size}, the same as axis {axis2} of input "
                        f"{inp2!r} ({other}). With equal example sizes, code that mixes the "
                        f"two axes up runs without error and the mistake is recorded; a "
                        f"symbolic axis's example size must differ from every other axis. Use "
                        f"an example of size {suggestion} on this axis.")

    @_leaves_the_thread_as_it_was
    def output(self, name: str, tensor: Tensor) -> None:
        """Declare a graph output."""
        self._check_usable()
        if not isinstance(tensor, Tensor):
            raise TraceException(f"output {name!r} must be a Tensor, got {type(tensor).__name__}")
        if not isinstance(name, str) or not name:
            raise TraceException(f"an output name must be a non-empty string, got {name!r}")
        if any(o == name for o, _ in self.outputs):
            raise TraceException(f"output name {name!r} is used twice")
        self.outputs.append((name, self._value_of(tensor)))

    @_leaves_the_thread_as_it_was
    def finish(self, prune: bool = True):
        """Stop recording and return the TracedModel. ``prune`` drops recorded nodes whose
        results nothing uses (a tensor made and never used); `om.trace` prunes after its check,
        which compares the graph with the eager run node by node."""
        from ..runtime.traced_model import TracedModel

        self._check_usable()
        self._deactivate()
        if not self.outputs:
            raise TraceException("the trace has no outputs; call tracer.output(name, tensor)")
        for t, vname, version in self._constants.values():
            if t._version != version:
                raise TraceException(f"the constant %{vname} (a parameter or buffer) changed "
                                     f"during the trace; module state must not change while "
                                     f"tracing")
        self._finished = True
        graph = self._named_graph()
        return TracedModel(prune_unused(graph) if prune else graph)

    def _named_graph(self):
        """Rename the values that produce outputs after the outputs (``%output``)."""
        from ..core.graph import Graph, Node, Value

        b = self.builder
        produced = {o for n in b.nodes for o in n.outputs}
        taken = set(b.values)
        rename: dict[str, str] = {}
        for oname, vname in self.outputs:
            if vname in produced and vname not in rename and oname not in taken:
                rename[vname] = oname
                taken.add(oname)
        r = lambda v: rename.get(v, v)  # noqa: E731
        nodes = [Node(n.op, tuple(None if i is None else r(i) for i in n.inputs),
                      tuple(r(o) for o in n.outputs), n.params, n.source) for n in b.nodes]
        values = {r(k): Value(r(k), v.type) for k, v in b.values.items()}
        outputs = tuple((o, r(v)) for o, v in self.outputs)
        used = {i for n in nodes for i in n.inputs if i is not None} | {v for _, v in outputs}
        inits = {k: a for k, a in b.initializers.items() if k in used}
        keep = {v.name for v in b.inputs} | set(inits) | {o for n in nodes for o in n.outputs}
        return Graph(inputs=tuple(b.inputs), nodes=tuple(nodes), outputs=outputs,
                     values={k: v for k, v in values.items() if k in keep}, initializers=inits,
                     guards=tuple(b.guards))

    # -- the observer protocol used by the core ------------------------------------------------------
    def refuse(self, what: str, reason: str) -> None:
        """Refuse an operation: the trace is aborted (the thread is left as it was) and the
        error names the operation and the user's line."""
        message = f"{what} cannot be traced: {reason}{_where()}"
        self.abort(message)
        raise TraceException(message)

    def refuse_message(self, message: str) -> None:
        """Abort before the core raises its own refusal (a symbolic size made a plain int)."""
        self.abort(message)

    def note_random(self, tensor: Tensor, what: str) -> None:
        """A random factory ran while recording: fine for an example or anything the graph
        never sees; refused by `_value_of` if the draw would become a constant of the graph."""
        self._random[id(tensor)] = (weakref.ref(tensor), what, tracing_hooks.user_frame())

    def shape_of(self, tensor: Tensor) -> tuple:
        ref, vname = tensor._tv
        if ref is not self._ref:
            return tensor._data.shape
        shape = self.builder.values[vname].type.shape
        return tuple(SymInt(d, n) if isinstance(d, Dim) else d
                     for d, n in zip(shape, tensor._data.shape))

    def size_tensor(self, size: SymInt, dtype: DType) -> Tensor:
        """A 0-d tensor holding a symbolic size, computed by the graph at run time (``x.sum(1)
        / x.shape[1]``)."""
        from ..core.tensor import _protocol_op

        t = apply_op(_protocol_op("__full__"), (), {"shape": (), "value": size, "dtype": dtype})
        self.size_values.add(t._tv[1])
        return t

    def _value_of(self, t: Tensor) -> str:
        if t._tv is not None and t._tv[0] is self._ref:
            return t._tv[1]
        entry = self._constants.get(id(t))
        if entry is not None:
            return entry[1]
        drawn = self._random.get(id(t))
        if drawn is not None and drawn[0]() is t:
            _ref, what, line = drawn
            self.refuse(f"ops.{self._current_op}",
                        f"its input is a random tensor drawn by {what}"
                        + (f" at {line}" if line else "") + "; as a constant of the graph it would "
                        "be this one draw forever. Make it an input (tracer.input) or draw it "
                        "outside the traced code and pass it in")
        preferred = self.constant_names.get(id(t))
        name = preferred if preferred and preferred not in self.builder.values else \
            self.builder.fresh("c")
        self.builder.add_initializer(name, t._data)
        self._constants[id(t)] = (t, name, t._version)
        return name

    def _symbolize(self, value, kind: str):
        """Graph form of a param: SymInts (sizes read from traced tensors) become their
        expressions; a plain int is a constant, whatever its value. Ints that equal a symbolic
        axis's example size are noted for the error messages (see `ints_equal_to_axes`)."""
        if isinstance(value, SymInt):
            return value.expr
        if isinstance(value, tuple):
            if kind == "index":
                return tuple(self._symbolize_entry(e) for e in value)
            return tuple(self._symbolize(v, kind) for v in value)
        if kind in SIZE_KINDS and isinstance(value, numbers.Integral) and not isinstance(value, bool):
            self._note_int(int(value))
        return value

    def _symbolize_entry(self, e):
        if isinstance(e, tuple) and e and e[0] == "slice":
            return ("slice",) + tuple(self._symbolize(v, "size") for v in e[1:])
        return self._symbolize(e, "size")

    def _note_int(self, n: int) -> None:
        if n < 2:
            return
        for name, size in self.env.items():
            if size == n:
                self.ints_equal_to_axes.append((name, n, self._current_op,
                                                tracing_hooks.user_frame()))

    def int_notes(self, since: int = 0) -> str:
        """The note for a refusal that a frozen literal may have caused."""
        notes = [f"\n  note: the int {n} passed to ops.{op}" + (f" at {src}" if src else "")
                 + f" equals the example size of axis {axis!r}; a plain int is a constant of the "
                 f"graph. If it stands for that axis, read it from x.shape so it stays symbolic"
                 for axis, n, op, src in self.ints_equal_to_axes[since:]]
        return "".join(dict.fromkeys(notes))

    def apply(self, op, inputs: list, params: dict):
        """Run one op eagerly on the example data and record it as a node. Any failure aborts
        the trace, so the thread is left as it was before it."""
        try:
            return self._record(op, inputs, params)
        except BaseException as exc:
            if not self._finished:
                self.abort(f"{type(exc).__name__} in ops.{op.name}: {exc}")
            raise

    def _record(self, op, inputs: list, params: dict):
        self._check_usable()
        kernel_params = {k: hint_of(v) for k, v in params.items()}
        self._current_op = op.name
        reason = op.trace_refusal(kernel_params)
        if reason:
            self.refuse(f"ops.{op.name}", reason)
        noted = len(self.ints_equal_to_axes)
        graph_params = {k: self._symbolize(v, op.params[k].kind) for k, v in params.items()}
        in_names = [None if t is None else self._value_of(t) for t in inputs]
        types = [None if n is None else self.builder.values[n].type for n in in_names]
        stated: list = []
        previous = guards.start(stated)
        try:
            out_types = infer(op, types, graph_params)
        except OneModelError as exc:
            raise TraceException(f"ops.{op.name} cannot be recorded with symbolic shapes: "
                                 f"{exc}{_where()}{self.int_notes(noted)}") from exc
        finally:
            guards.stop(previous)
        source = tracing_hooks.user_frame()
        for g in stated:
            if not g.holds(self.env):
                self.refuse(f"ops.{op.name}", f"it needs {g.text} ({g.reason}), which does not "
                            f"hold at the example sizes")
        try:
            results = eager(op, inputs, kernel_params)
        except OneModelError as exc:
            notes = self.int_notes(noted)
            if not notes:
                raise
            raise TraceException(f"ops.{op.name} fails on the example: {exc}{_where()}{notes}"
                                 ) from exc
        multi = isinstance(results, tuple)
        outs = results if multi else (results,)
        out_types = tuple(out_types) if isinstance(out_types, (tuple, list)) else (out_types,)
        for t, r in zip(out_types, outs):
            at_example = tuple(evaluate(d, self.env) for d in t.shape)
            if at_example != r._data.shape:
                raise TraceException(
                    f"ops.{op.name}: its inference gives {format_shape(t.shape)} = {at_example} "
                    f"at the example sizes but the kernel returned {r._data.shape}; the op record "
                    f"from {op.provider} is inconsistent{_where()}")
        if stated:
            self.builder.guards[:] = guards.merge(
                self.builder.guards, [guards.Guard(g.left, g.right, g.reason, source)
                                      for g in stated])
        values = self.builder.add_node(op.name, in_names, out_types, graph_params, source)
        for r, v in zip(outs, values):
            r._tv = (self._ref, v.name)
        return results
