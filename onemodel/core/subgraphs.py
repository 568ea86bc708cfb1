"""Graphs held in node params (the branches of an ONNX ``If``, the body of a ``Loop``).

The core knows no op that holds one; it knows only that a param value may be a `Graph`, and
everything that walks graphs asks this module for them: verification, printing, the OneModel
format, plan-cache digests. A subgraph is closed: every value it reads from the enclosing graph
is one of its own inputs, fed by an input of the node holding it, so passes that rename, prune
or fold the outer graph see the dependency as an ordinary edge and never look inside.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from .graph import Graph, Node


def graphs_in(value: Any) -> Iterator[Graph]:
    """The graphs inside one param value (a Graph, or tuples/lists/dicts holding some)."""
    if isinstance(value, Graph):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from graphs_in(v)
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from graphs_in(v)


def subgraphs(node: Node) -> list[tuple[str, Graph]]:
    """The (param name, graph) pairs of a node's params holding graphs, in param order."""
    return [(name, g) for name, v in node.params.items() for g in graphs_in(v)]


def walk_nodes(graph: Graph) -> Iterator[Node]:
    """Every node of ``graph`` and, depth first, of the graphs its nodes hold."""
    for n in graph.nodes:
        yield n
        for _, g in subgraphs(n):
            yield from walk_nodes(g)


def run_subgraph(graph: Graph, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run a subgraph on its inputs, in order, through the reference interpreter (each op's own
    kernel, so it is right on every backend); its outputs in order."""
    from .interpreter import run_graph

    if len(args) != len(graph.inputs):
        raise ValueError(f"a subgraph with {len(graph.inputs)} inputs was given {len(args)}")
    feeds = {v.name: np.asarray(a) for v, a in zip(graph.inputs, args)}
    outs = run_graph(graph, feeds)
    return [outs[o] for o, _ in graph.outputs]


__all__ = ["graphs_in", "subgraphs", "walk_nodes", "run_subgraph"]
