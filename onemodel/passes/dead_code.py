"""Dead-code elimination: drop nodes no output needs, and unused constants.

A node of an impure op (``OpDef.pure=False``) is kept even when nothing reads it.
"""
from __future__ import annotations

from ..core.graph import Graph, rebuild
from ..registry import REGISTRY
from ..registry.records import PassDef
from ..core.graph import live_nodes


def eliminate_dead_code(graph: Graph) -> Graph:
    ops = REGISTRY.tables().ops
    keep = live_nodes(graph.nodes, [v for _, v in graph.outputs],
                      lambda n: n.op in ops and not ops[n.op].is_pure(n.params))
    if len(keep) == len(graph.nodes):
        used = {i for n in graph.nodes for i in n.inputs} | {v for _, v in graph.outputs}
        if all(k in used for k in graph.initializers):
            return graph
    return rebuild(graph, keep)


PASS = PassDef(name="dead_code_elimination", level="basic", run=eliminate_dead_code, order=90,
               doc="Remove nodes and constants that no output needs (impure ops stay).")
