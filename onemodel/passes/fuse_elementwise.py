"""Elementwise chains -> one ``elementwise_chain`` node computed in a single buffer.

A chain is a run of pointwise ops (ops whose record declares `OpTraits.pointwise` with a formula
for the node's params, built-in or third-party alike) where each result's only user is the next
op, and every step has the chain's final type (dtype and shape): then a backend computes the whole
chain in place in the output buffer with no temporaries. Other operands (constants, other values)
become the chain's inputs; the steps record which input each operand is (``-1``: the previous
result). Each node joins at most one chain: a node another chain already claimed ends the walk.
"""
from __future__ import annotations

from ..core.graph import Graph, Node
from ..core.symbolic import contains_symbolic
from ..registry import REGISTRY
from ..registry.records import PassDef
from ._rewrite import Rewriter, same_type
from .elementwise_chain import ACC


def _pointwise(node: Node, ops) -> bool:
    op = ops.get(node.op)
    if op is None or op.traits.pointwise is None or len(node.outputs) != 1:
        return False
    if len(node.inputs) != len(op.inputs) or any(i is None for i in node.inputs):
        return False
    if contains_symbolic(dict(node.params)):
        return False
    return op.traits.pointwise.expression(op.inputs, node.params) is not None


def _chain_node(graph: Graph, chain: list[Node]) -> Node | None:
    """The fused node for ``chain``, or None when an operand's dtype differs from the result's."""
    final_t = graph.values[chain[-1].outputs[0]].type
    inputs: list[str] = []
    steps = []
    for k, n in enumerate(chain):
        args = []
        for i in n.inputs:
            if k > 0 and i == chain[k - 1].outputs[0]:
                args.append(ACC)
                continue
            if graph.values[i].dtype != final_t.dtype:
                return None
            if i not in inputs:
                inputs.append(i)
            args.append(inputs.index(i))
        steps.append((n.op, tuple(args), tuple(sorted(n.params.items()))))
    return Node("elementwise_chain", tuple(inputs), chain[-1].outputs, {"steps": tuple(steps)},
                chain[0].source)


def fuse_elementwise(graph: Graph) -> Graph:
    ops = REGISTRY.tables().ops
    rw = Rewriter(graph)
    absorbed: set[int] = set()
    chains: dict[int, Node] = {}  # id(last node) -> chain node
    for node in graph.nodes:
        if id(node) in absorbed or not _pointwise(node, ops):
            continue
        final_t = graph.values[node.outputs[0]].type
        if not final_t.dtype.is_float:
            continue
        chain = [node]
        cur = node
        while rw.single_use(cur.outputs[0]):
            nxt = rw.consumers[cur.outputs[0]][0]
            if id(nxt) in absorbed or not _pointwise(nxt, ops):
                break
            if not same_type(graph.values[nxt.outputs[0]].type, final_t):
                break
            chain.append(nxt)
            cur = nxt
        if len(chain) < 2:
            continue
        fused = _chain_node(graph, chain)
        if fused is None:
            continue
        absorbed.update(id(n) for n in chain)
        chains[id(chain[-1])] = fused
    if not chains:
        return graph
    for node in graph.nodes:
        if id(node) in chains:
            rw.emit(chains[id(node)])
        elif id(node) not in absorbed:
            rw.emit(node)
    rw.changed = True
    return rw.finish()


PASS = PassDef(name="fuse_elementwise", level="all", run=fuse_elementwise, order=80,
               doc="Chains of pointwise ops -> one elementwise_chain node (in-place kernel).")
