"""Plans for graphs whose sizes depend on tensor data (a ``Reshape`` target fed at run time).

Such a graph names *data sizes*: symbols that no graph input binds, declared by the node whose
output they size (an op whose shape-like input is a run-time tensor). No plan can be compiled
for them before the data is seen, so `DynamicPlan` runs the nodes one by one through their ops'
own kernels (every backend shares it: the reference kernels are right by definition), binds each
data size from the actual result of the node that declares it, and checks every later result
against its declared shape, so a size the graph got wrong is an error naming the node, never a
wrong number. Graphs without data sizes never come here: they keep the compiled fast path.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .graph import Graph, live_nodes
from .kernel_call import check_outputs
from .node_errors import node_error
from .symbolic import Dim, SymbolicError


def data_symbols(graph: Graph) -> set[str]:
    """Symbols used by values or params of ``graph`` that no input axis binds."""
    bound = set(graph.symbols())
    found: set[str] = set()
    for v in graph.values.values():
        for d in v.shape:
            if isinstance(d, Dim):
                found |= d.symbols()
    for n in graph.nodes:
        _collect(n.params, found)
    return found - bound


def _collect(value: Any, out: set) -> None:
    if isinstance(value, Dim):
        out |= value.symbols()
    elif isinstance(value, (tuple, list)):
        for v in value:
            _collect(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _collect(v, out)


def evaluate_known(value: Any, env: Mapping[str, int]) -> Any:
    """Params with every Dim evaluated in ``env``; a Dim naming a size not known yet (a data
    size declared by this very node) becomes None, which the kernel reads from its inputs."""
    if isinstance(value, Dim):
        try:
            return value.evaluate(env)
        except SymbolicError:
            return None
    if isinstance(value, tuple):
        return tuple(evaluate_known(v, env) for v in value)
    if isinstance(value, list):
        return [evaluate_known(v, env) for v in value]
    if isinstance(value, dict):
        return {k: evaluate_known(v, env) for k, v in value.items()}
    return value


class DynamicPlan:
    """One run signature of a graph with data sizes (see the module docstring)."""

    only_native = False  # the compiled backend's flag: this plan needs BLAS and numpy's state

    def __init__(self, graph: Graph, env: Mapping[str, int], output_names: Sequence[str],
                 ops: Mapping[str, Any]) -> None:
        out_map = dict(graph.outputs)
        self.graph = graph
        self.env = dict(env)
        self.output_names = list(output_names)
        self.wanted = [out_map[o] for o in output_names]
        self.nodes = live_nodes(graph.nodes, self.wanted,
                                lambda n: n.op in ops and not ops[n.op].is_pure(n.params))
        self.kernels = [ops[n.op].kernel for n in self.nodes]
        self.providers = [ops[n.op].provider for n in self.nodes]
        names = sorted(data_symbols(graph))
        self.source = (f"# dynamic plan: data sizes {', '.join(names)} are read from results at "
                       f"run time; {len(self.nodes)} nodes run through their ops' kernels\n")
        self.schedule_summary = "dynamic (sizes decided by tensor data)"

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        env = dict(self.env)
        graph = self.graph
        values: dict[str, np.ndarray] = dict(graph.initializers)
        values.update(feeds)
        for node, kernel, provider in zip(self.nodes, self.kernels, self.providers):
            args = [None if i is None else values[i] for i in node.inputs]
            try:
                outs = check_outputs(kernel(*args, **evaluate_known(dict(node.params), env)),
                                     [graph.values[o].type for o in node.outputs], node.op,
                                     provider, env)  # binds the data sizes this node decides
            except Exception as exc:  # noqa: BLE001 - name the node
                raise node_error(node, exc) from exc
            values.update(zip(node.outputs, outs))
        return {o: np.array(values[v], copy=True) for o, v in zip(self.output_names,
                                                                  self.wanted)}

    def describe(self) -> str:
        return self.source


__all__ = ["DynamicPlan", "data_symbols", "evaluate_known"]
