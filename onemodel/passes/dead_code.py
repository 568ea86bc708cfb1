"""Dead-code elimination: drop nodes no output needs, and unused constants.

A node of an impure op (``OpDef.pure=False``) is kept even when nothing reads it.
"""
from __future__ import annotations

from ..core.graph import Graph, rebuild
from ..registry import REGISTRY
from ..registry.records import PassDef
from ._rewrite import live_nodes


def eliminate_dead_code(graph: Graph) -> Graph:
    ops = REGISTRY.tables().ops

    def pure(name: str) -> bool:
        op = ops.get(name)
        return op is None or op.pure

    keep = live_nodes(graph.nodes, [v for _, v in graph.outputs], pure)
    if len(keep) == len(graph.nodes):
        used = {i for n in graph.nodes for i in n.inputs} | {v for _, v in graph.outputs}
        if all(k in used for k in graph.initializers):
            return graph
    return rebuild(graph, keep)


PASS = PassDef(name="dead_code_elimination", level="basic", run=eliminate_dead_code, order=90,
               doc="Remove nodes and constants that no output needs (impure ops stay).")
