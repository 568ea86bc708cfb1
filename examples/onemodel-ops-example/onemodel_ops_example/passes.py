"""A graph pass shipped by a third party: fold ``x * sigmoid(x)`` into one ``swish`` node.

ONNX files written at opsets below 24 (and models written from primitives) carry swish as
``Mul(x, Sigmoid(x))``; at optimization level "all" this pass turns it back into the op, whose
kernel needs one buffer instead of two.
"""
from __future__ import annotations

from onemodel.core.graph import Graph, Node, rebuild
from onemodel.registry import PassDef


def fold_swish(graph: Graph) -> Graph:
    producers = graph.producers()
    consumers = graph.consumers()
    outputs = {v for _, v in graph.outputs}
    dropped: set[int] = set()
    replaced: dict[int, Node] = {}
    for node in graph.nodes:
        if node.op != "mul" or len(node.inputs) != 2:
            continue
        for x, s in (node.inputs, node.inputs[::-1]):
            sig = producers.get(s)
            if (sig is not None and sig.op == "sigmoid" and sig.inputs[0] == x and x != s
                    and s not in outputs and len(consumers.get(s, [])) == 1
                    and graph.values[x].dtype.is_float):
                replaced[id(node)] = Node("swish", (x,), node.outputs, {"beta": 1.0}, node.source)
                dropped.add(id(sig))
                break
    if not replaced:
        return graph
    nodes = [replaced.get(id(n), n) for n in graph.nodes if id(n) not in dropped]
    return rebuild(graph, nodes)


PASSES = (PassDef(name="fold_swish", level="all", run=fold_swish, order=4,
                  doc="mul(x, sigmoid(x)) -> swish(x)"),)
