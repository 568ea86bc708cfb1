"""Helpers the passes share: a `Rewriter` that builds the new graph while renaming uses, and
small queries (constants, single consumers, params without symbols)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core.dtype import DType
from ..core.graph import Graph, Node, Value, rebuild
from ..core.symbolic import contains_symbolic
from ..core.types import TensorType, same_dim


def same_type(a: TensorType, b: TensorType) -> bool:
    return (a.dtype == b.dtype and len(a.shape) == len(b.shape)
            and all(same_dim(x, y) for x, y in zip(a.shape, b.shape)))


class Rewriter:
    """Copy a graph node by node; a pass drops, replaces or adds nodes and renames values.

    ``rename(old, new)`` makes every later use of ``old`` (and the graph outputs) read ``new``.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.nodes: list[Node] = []
        self._rename: dict[str, str] = {}
        self.extra: list[Value] = []
        self.inits: dict[str, np.ndarray] = dict(graph.initializers)
        self._names = set(graph.values)
        self.consumers = graph.consumers()
        self.producers = graph.producers()
        self.output_values = {v for _, v in graph.outputs}
        self.changed = False

    # -- queries on the original graph ----------------------------------------------------------
    def type(self, name: str) -> TensorType:
        for v in self.extra:
            if v.name == name:
                return v.type
        return self.graph.values[name].type

    def const(self, name: str | None) -> np.ndarray | None:
        """The array if ``name`` is a constant (an initializer), else None."""
        if name is None:
            return None
        return self.inits.get(self.resolve(name))

    def single_use(self, name: str) -> bool:
        """Used by exactly one node (once or several times) and not a graph output."""
        users = self.consumers.get(name, [])
        return (name not in self.output_values and len({id(n) for n in users}) == 1)

    def producer(self, name: str | None) -> Node | None:
        return None if name is None else self.producers.get(name)

    # -- building --------------------------------------------------------------------------------
    def resolve(self, name: str | None) -> str | None:
        while name is not None and name in self._rename:
            name = self._rename[name]
        return name

    def rename(self, old: str, new: str) -> None:
        self._rename[old] = new
        self.changed = True

    def emit(self, node: Node) -> Node:
        ins = tuple(self.resolve(i) for i in node.inputs)
        if ins != node.inputs:
            node = Node(node.op, ins, node.outputs, node.params, node.source)
        self.nodes.append(node)
        return node

    def fresh(self, prefix: str) -> str:
        i = 0
        while True:
            name = f"{prefix}{i}" if i else prefix
            if name not in self._names:
                self._names.add(name)
                return name
            i += 1

    def add_value(self, name: str, type: TensorType) -> str:
        self._names.add(name)
        self.extra.append(Value(name, type))
        return name

    def add_const(self, array: np.ndarray, prefix: str) -> str:
        array = np.array(array)
        array.flags.writeable = False
        name = self.fresh(prefix)
        self.inits[name] = array
        self.extra.append(Value(name, TensorType(DType.from_numpy(array.dtype), array.shape)))
        self.changed = True
        return name

    def replace_producers(self, replace: dict[str, Node]) -> Graph:
        """The graph with the node producing each key of ``replace`` swapped for its value (a
        recognised pattern collapsed into one node); the pattern's dead nodes are left for dead-
        code elimination. The graph itself when ``replace`` is empty."""
        if not replace:
            return self.graph
        for node in self.graph.nodes:
            self.emit(replace.get(node.outputs[0], node) if len(node.outputs) == 1 else node)
        self.changed = True
        return self.finish()

    def finish(self) -> Graph:
        outputs = tuple((o, self.resolve(v)) for o, v in self.graph.outputs)
        return rebuild(self.graph, self.nodes, outputs=outputs, extra_values=self.extra,
                       initializers=self.inits)


def params_symbolic(node: Node) -> bool:
    return contains_symbolic(dict(node.params))


def scalar_value(arr: np.ndarray | None) -> float | None:
    """The single value of a constant holding one distinct value (a 0-d or all-equal array)."""
    if arr is None or arr.size == 0 or arr.dtype.kind not in "fiub":
        return None
    flat = arr.reshape(-1)
    first = flat[0]
    if arr.size > 1 and not np.all(flat == first):
        return None
    # the shortest decimal that round-trips in the array's own precision: a float32 1e-5 reads
    # as 1e-05, not 9.99999974e-06
    return float(str(first)) if arr.dtype.kind == "f" else float(first)


def freeze(value: Any):
    """A hashable key for a param value (None when it cannot be hashed reliably)."""
    if isinstance(value, (tuple, list)):
        items = [freeze(v) for v in value]
        return None if any(i is None and v is not None for i, v in zip(items, value)) else (
            type(value).__name__, tuple(items))
    if isinstance(value, dict):
        return freeze(sorted(value.items()))
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    try:
        hash(value)
    except TypeError:
        return None
    return (type(value).__name__, value)
