"""Elementwise chains -> one ``elementwise_chain`` node computed in a single buffer.

A chain is a run of elementwise ops (``add sub mul div pow maximum minimum neg exp log sqrt abs
tanh sigmoid relu gelu clip``) where each result's only user is the next op, and every step has
the chain's final type (dtype and shape): then a backend computes the whole chain in place in
the output buffer with no temporaries. Other operands (constants, other values) become the
chain's inputs; the steps record which input each operand is (``-1``: the previous result).
"""
from __future__ import annotations

from ..core.graph import Graph, Node
from ..core.symbolic import contains_symbolic
from ..registry import REGISTRY
from ..registry.records import PassDef
from ._rewrite import Rewriter, same_type
from .fused_ops import ACC

UNARY = ("neg", "exp", "log", "sqrt", "abs", "tanh", "sigmoid", "relu", "gelu", "clip")
BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum")
ELEMENTWISE = UNARY + BINARY


def _elementwise(node: Node) -> bool:
    if node.op not in ELEMENTWISE or len(node.outputs) != 1:
        return False
    if any(i is None for i in node.inputs):
        return False
    want = 1 if node.op in UNARY else 2
    if node.op == "clip":
        return len(node.inputs) == 1  # clip's bounds as params only
    return len(node.inputs) == want and not contains_symbolic(dict(node.params))


def fuse_elementwise(graph: Graph) -> Graph:
    ops = REGISTRY.tables().ops
    rw = Rewriter(graph)
    absorbed: set[int] = set()
    chains: dict[int, Node] = {}  # id(last node) -> chain node
    for node in graph.nodes:
        if id(node) in absorbed or not _elementwise(node) or node.op not in ops:
            continue
        final_t = graph.values[node.outputs[0]].type
        if not final_t.dtype.is_float:
            continue
        chain = [node]
        cur = node
        while rw.single_use(cur.outputs[0]):
            nxt = rw.consumers[cur.outputs[0]][0]
            if not _elementwise(nxt) or nxt.op not in ops:
                break
            t = graph.values[nxt.outputs[0]].type
            if not same_type(t, final_t):
                break
            chain.append(nxt)
            cur = nxt
        if len(chain) < 2:
            continue
        # Every operand that is not the running result must have the chain's dtype.
        inputs: list[str] = []
        steps = []
        ok = True
        for k, n in enumerate(chain):
            args = []
            for i in n.inputs:
                if k > 0 and i == chain[k - 1].outputs[0]:
                    args.append(ACC)
                    continue
                if graph.values[i].dtype != final_t.dtype:
                    ok = False
                if i not in inputs:
                    inputs.append(i)
                args.append(inputs.index(i))
            steps.append((n.op, tuple(args), tuple(sorted(n.params.items()))))
        if not ok:
            continue
        for n in chain:
            absorbed.add(id(n))
        chains[id(chain[-1])] = Node("elementwise_chain", tuple(inputs), chain[-1].outputs,
                                     {"steps": tuple(steps)}, chain[0].source)
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
               doc="Chains of elementwise ops -> one elementwise_chain node (in-place kernel).")
