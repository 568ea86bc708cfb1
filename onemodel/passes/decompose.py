"""Expand nodes into their ops' decompositions (`OpDef.decomposition`).

Not a pass of the default pipeline (the composite kernels are usually faster than their parts):
a backend without a kernel for an op, or a pass that only understands the parts, calls
``decompose(graph, should)`` with ``should(op_record, node) -> bool`` choosing the nodes. Parts
that are themselves chosen and decomposable are expanded too.
"""
from __future__ import annotations

from typing import Callable

from ..core.decompose import build
from ..core.graph import Graph, Node
from ._rewrite import Rewriter

#: how deep decompositions may nest (a decomposition that names its own op would loop)
MAX_DEPTH = 16


def decompose(graph: Graph, should: Callable | None = None) -> Graph:
    """``graph`` with every node whose op has a decomposition and for which ``should(op, node)``
    holds (every such node when ``should`` is None) replaced by the decomposition's nodes; the
    outputs keep their names, so nothing else changes. The graph itself when none applies."""
    from ..registry import REGISTRY

    ops = REGISTRY.tables().ops

    def chosen(node: Node) -> bool:
        rec = ops.get(node.op)
        return (rec is not None and rec.decomposition is not None
                and (should is None or should(rec, node)))

    if not any(chosen(n) for n in graph.nodes):
        return graph
    rw = Rewriter(graph)

    def expand(node: Node, depth: int) -> None:
        if depth > MAX_DEPTH:
            from ..errors import GraphError

            raise GraphError(f"the decomposition of {node.op} nests more than {MAX_DEPTH} deep")
        rec = ops[node.op]
        types = [None if i is None else rw.type(rw.resolve(i)) for i in node.inputs]
        sub = build(rec, types, node.params)
        names: dict[str, str] = {}
        for i, v in enumerate(node.inputs):
            if v is not None:
                names[f"in{i}"] = rw.resolve(v)
        for k, arr in sub.initializers.items():
            names[k] = rw.add_const(arr, f"{node.op}_c")
        final = dict(zip((v for _, v in sub.outputs), node.outputs))
        for part in sub.nodes:
            outs = []
            for o in part.outputs:
                name = final.pop(o) if o in final else rw.add_value(rw.fresh(f"{node.op}_"),
                                                                    sub.values[o].type)
                names[o] = name
                outs.append(name)
            new = Node(part.op, tuple(None if i is None else names[i] for i in part.inputs),
                       tuple(outs), part.params, node.source)
            if chosen(new):
                expand(new, depth + 1)
            else:
                rw.emit(new)
        for v, out in final.items():  # an output that is an input or constant of the parts
            rw.rename(out, names[v])
        rw.changed = True

    for node in graph.nodes:
        if chosen(node):
            expand(node, 0)
        else:
            rw.emit(node)
    return rw.finish()


__all__ = ["decompose", "MAX_DEPTH"]
