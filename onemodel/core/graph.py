"""The graph IR: frozen `Value`s, `Node`s and `Graph`s, a stable printed form and `verify()`.

Values are named; every name is defined once (a graph input, an initializer or a node output).
Shapes hold ints and symbolic `Dim` expressions; params may hold `Dim`s too, evaluated at run
time from the sizes bound by the inputs, so shape arithmetic recorded by a trace holds at any size.
Passes never mutate a graph: they build a new one.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Iterable, Mapping

import attrs
import numpy as np

from ..errors import GraphError, OneModelError
from .dtype import DType
from .symbolic import Dim
from .types import TensorType, same_dim


@attrs.frozen
class Value:
    """A named tensor in a graph with its (possibly symbolic) type."""

    name: str
    type: TensorType

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def shape(self) -> tuple:
        return self.type.shape

    def __str__(self) -> str:
        return f"%{self.name}: {self.type}"


def _freeze_params(params: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(params))


def _as_tuple(items: Iterable[Any]) -> tuple:
    """The fields' converter (a plain ``tuple`` converter types as ``Iterable[_T_co]`` in mypy)."""
    return tuple(items)


@attrs.frozen
class Node:
    """One op application: input value names (None for an absent optional input), output value
    names, static params, and the user's source line recorded by the trace."""

    op: str
    inputs: tuple = attrs.field(converter=_as_tuple)
    outputs: tuple = attrs.field(converter=_as_tuple)
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=_freeze_params)
    source: str | None = attrs.field(default=None, eq=False)

    def __reduce__(self):  # params are a read-only mapping proxy, which pickle cannot store
        return (Node, (self.op, self.inputs, self.outputs, dict(self.params), self.source))

    def describe(self) -> str:
        where = f" (recorded at {self.source})" if self.source else ""
        return f"{self.op} -> %{', %'.join(self.outputs)}{where}"


def format_param(v: Any) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(format_param(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(format_param(x) for x in v) + "]"
    if isinstance(v, (Dim, DType)):
        return str(v)
    if isinstance(v, Graph):  # a subgraph (core/subgraphs.py): its printed form, indented
        return v.format().replace("\n", "\n    ")
    if isinstance(v, float):
        return repr(v)
    return repr(v)


@attrs.frozen
class Graph:
    """A static graph: named inputs, initializers (constants), nodes in topological order, and
    outputs as (output name, value name) pairs."""

    inputs: tuple = attrs.field(converter=_as_tuple)  # tuple[Value]
    nodes: tuple = attrs.field(converter=_as_tuple)  # tuple[Node]
    outputs: tuple = attrs.field(converter=_as_tuple)  # tuple[tuple[str, str]]
    values: Mapping[str, Value] = attrs.field(converter=_freeze_params)  # every value's type
    initializers: Mapping[str, np.ndarray] = attrs.field(factory=dict, converter=_freeze_params)
    #: `onemodel.core.guards.Guard`s: size conditions the graph is valid under (sessions check)
    guards: tuple = attrs.field(default=(), converter=_as_tuple)

    # -- lookups -------------------------------------------------------------------------------
    @property
    def input_names(self) -> list[str]:
        return [v.name for v in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [o for o, _ in self.outputs]

    def output_value(self, name: str) -> Value:
        return self.values[dict(self.outputs)[name]]

    def symbols(self) -> list[str]:
        """Symbolic axis names of the inputs, in order of appearance."""
        seen: list[str] = []
        for v in self.inputs:
            for d in v.shape:
                if isinstance(d, Dim):
                    for s in sorted(d.symbols()):
                        if s not in seen:
                            seen.append(s)
        return seen

    def producers(self) -> dict[str, Node]:
        return {o: n for n in self.nodes for o in n.outputs}

    def consumers(self) -> dict[str, list[Node]]:
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                if i is not None:
                    out.setdefault(i, []).append(n)
        return out

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return dict(sorted(counts.items()))

    def replace(self, **changes) -> "Graph":
        return attrs.evolve(self, **changes)

    def __reduce__(self):  # the mappings are read-only proxies; a subgraph param pickles too
        return (Graph, (self.inputs, self.nodes, self.outputs, dict(self.values),
                        dict(self.initializers), self.guards))

    # -- printing ------------------------------------------------------------------------------
    def format(self, sources: bool = False) -> str:
        head = ", ".join(str(v) for v in self.inputs)
        lines = [f"graph ({head}) {{"]
        for g in self.guards:
            lines.append(f"  require {g.text}" + (f"  # {g.source}" if sources and g.source else ""))
        for name in sorted(self.initializers):
            lines.append(f"  const {self.values[name]}")
        for n in self.nodes:
            outs = ", ".join(str(self.values[o]) for o in n.outputs)
            ins = ", ".join("None" if i is None else f"%{i}" for i in n.inputs)
            params = ""
            if n.params:
                params = "{" + ", ".join(f"{k}={format_param(v)}" for k, v in n.params.items()) + "}"
            line = f"  {outs} = {n.op}({ins}){params}"
            if sources and n.source:
                line += f"  # {n.source}"
            lines.append(line)
        rets = ", ".join(f"%{o}" if o == v else f"%{o} = %{v}" for o, v in self.outputs)
        lines.append(f"  return {rets}")
        lines.append("}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()

    # -- checking ------------------------------------------------------------------------------
    def verify(self, check_types: bool = True) -> "Graph":
        """Check the graph is well formed; raise GraphError saying what is wrong and how to fix."""
        from ..registry import REGISTRY

        defined: set[str] = set()

        def define(name: str, what: str) -> None:
            if name in defined:
                raise GraphError(f"value %{name} is defined twice (again as {what}); every value "
                                 f"needs a unique name")
            if name not in self.values:
                raise GraphError(f"value %{name} ({what}) has no type in graph.values")
            defined.add(name)

        for v in self.inputs:
            define(v.name, "a graph input")
            if self.values[v.name] != v:
                raise GraphError(f"graph input %{v.name} disagrees with graph.values")
        for name, arr in self.initializers.items():
            define(name, "an initializer")
            t = self.values[name].type
            if tuple(t.shape) != arr.shape or t.dtype.numpy != arr.dtype:
                raise GraphError(f"initializer %{name} holds {arr.dtype}{list(arr.shape)} but is "
                                 f"typed {t}")
        ops = REGISTRY.tables().ops
        for n in self.nodes:
            for i in n.inputs:
                if i is not None and i not in defined:
                    raise GraphError(f"node {n.describe()} uses %{i} before it is defined; keep "
                                     f"nodes in topological order")
            op = ops.get(n.op)
            if op is None:
                raise GraphError(f"node {n.describe()} uses op {n.op!r}, which no installed "
                                 f"plugin provides")
            for o in n.outputs:
                define(o, f"an output of {n.op}")
            self._verify_subgraphs(n, check_types)
            if check_types:
                self._check_node_types(op, n)
        for out, v in self.outputs:
            if v not in defined:
                raise GraphError(f"graph output {out!r} refers to undefined value %{v}")
        if len({o for o, _ in self.outputs}) != len(self.outputs):
            raise GraphError("graph output names must be unique")
        return self

    @staticmethod
    def _verify_subgraphs(n: Node, check_types: bool) -> None:
        """A graph held in a param (core/subgraphs.py) is verified as a graph of its own."""
        from .subgraphs import subgraphs

        for pname, g in subgraphs(n):
            try:
                g.verify(check_types)
            except GraphError as exc:
                raise GraphError(f"node {n.describe()}: subgraph {pname!r}: {exc}") from exc

    def _check_node_types(self, op, n: Node) -> None:
        from .dispatch import infer

        types = [self.values[i].type if i is not None else None for i in n.inputs]
        try:
            got = infer(op, types, dict(n.params))
        except OneModelError as exc:
            raise GraphError(f"inference fails for node {n.describe()}: {exc}") from exc
        got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
        if len(got) != len(n.outputs):
            raise GraphError(f"node {n.describe()} has {len(n.outputs)} outputs, inference gives "
                             f"{len(got)}")
        for o, t in zip(n.outputs, got):
            stored = self.values[o].type
            if stored.dtype != t.dtype or len(stored.shape) != len(t.shape) or not all(
                    same_dim(a, b) for a, b in zip(stored.shape, t.shape)):
                raise GraphError(f"stale type for %{o} of node {n.describe()}: stored {stored}, "
                                 f"inference now gives {t}; rebuild the value with the new type")


class GraphBuilder:
    """Accumulates values and nodes; `finish` makes the frozen Graph. Used by the tracer,
    importers and passes."""

    def __init__(self) -> None:
        self.guards: list = []  # size conditions recorded by inference (see core/guards.py)
        self.inputs: list[Value] = []
        self.nodes: list[Node] = []
        self.values: dict[str, Value] = {}
        self.initializers: dict[str, np.ndarray] = {}
        self._counters: dict[str, int] = {}

    def fresh(self, prefix: str = "") -> str:
        """An unused value name: ``0, 1, ...`` or ``c0, c1, ...`` for a prefix."""
        n = self._counters.get(prefix, 0)
        while f"{prefix}{n}" in self.values:
            n += 1
        self._counters[prefix] = n + 1
        return f"{prefix}{n}"

    def add_input(self, name: str, type: TensorType) -> Value:
        v = Value(name, type)
        self.values[name] = v
        self.inputs.append(v)
        return v

    def add_initializer(self, name: str, array: np.ndarray) -> Value:
        v = Value(name, TensorType(DType.from_numpy(array.dtype), array.shape))
        self.values[name] = v
        self.initializers[name] = array
        return v

    def add_node(self, op: str, inputs: Iterable, out_types: Iterable[TensorType],
                 params: Mapping[str, Any] | None = None, source: str | None = None,
                 names: Iterable[str] | None = None) -> list[Value]:
        out_types = list(out_types)
        names = list(names) if names is not None else [self.fresh() for _ in out_types]
        outs = [Value(nm, t) for nm, t in zip(names, out_types)]
        for v in outs:
            self.values[v.name] = v
        self.nodes.append(Node(op, tuple(inputs), tuple(v.name for v in outs), params or {},
                               source))
        return outs

    def finish(self, outputs: Iterable[tuple[str, str]]) -> Graph:
        outputs = tuple(outputs)
        used = {i for n in self.nodes for i in n.inputs} | {v for _, v in outputs}
        inits = {k: a for k, a in self.initializers.items() if k in used}
        keep = {v.name for v in self.inputs} | set(inits) | {o for n in self.nodes for o in n.outputs}
        values = {k: v for k, v in self.values.items() if k in keep}
        return Graph(inputs=tuple(self.inputs), nodes=tuple(self.nodes), outputs=outputs,
                     values=values, initializers=inits, guards=tuple(self.guards))


def rebuild(graph: Graph, nodes: Iterable[Node], outputs=None, extra_values=(),
            initializers=None) -> Graph:
    """A new graph with other nodes (and optionally outputs/initializers); drops unused values."""
    nodes = tuple(nodes)
    outputs = tuple(outputs) if outputs is not None else graph.outputs
    inits = dict(graph.initializers if initializers is None else initializers)
    values = dict(graph.values)
    for v in extra_values:
        values[v.name] = v
    used = {i for n in nodes for i in n.inputs if i is not None} | {v for _, v in outputs}
    inits = {k: a for k, a in inits.items() if k in used}
    keep = {v.name for v in graph.inputs} | set(inits) | {o for n in nodes for o in n.outputs}
    values = {k: v for k, v in values.items() if k in keep}
    return Graph(inputs=graph.inputs, nodes=nodes, outputs=outputs, values=values,
                 initializers=inits, guards=graph.guards)


class NotAGraphError(OneModelError, TypeError):
    """Something that is neither a Graph nor an object with a ``graph`` was given."""


def as_graph(obj, what: str = "this") -> Graph:
    """The Graph of a Graph or of anything with a ``graph`` attribute (a TracedModel)."""
    if isinstance(obj, Graph):
        return obj
    graph = getattr(obj, "graph", None)
    if isinstance(graph, Graph):
        return graph
    raise NotAGraphError(f"{what} expects a Graph or a TracedModel, got {type(obj).__name__}")


def has_effects(node: Node) -> bool:
    """True when the node's op is impure for its params (or unknown): it must run even when
    nothing reads its outputs, and must not be folded or merged."""
    from ..registry import REGISTRY

    op = REGISTRY.tables().ops.get(node.op)
    return op is None or not op.is_pure(node.params)


def live_nodes(nodes: Iterable[Node], needed: Iterable[str], keep=has_effects) -> list[Node]:
    """The nodes the values ``needed`` depend on, plus those ``keep(node)`` says must run (by
    default: nodes with effects), in their original order."""
    needed = set(needed)
    out = []
    for node in reversed(list(nodes)):
        if any(o in needed for o in node.outputs) or keep(node):
            out.append(node)
            needed.update(i for i in node.inputs if i is not None)
    out.reverse()
    return out
