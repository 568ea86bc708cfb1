"""linear / conv2d + activation -> fused_linear / fused_conv2d.

The activation (relu, sigmoid, tanh, gelu) must be the only user of the linear/conv2d output, so
a backend can apply it in place in the same buffer right after the matmul.
"""
from __future__ import annotations

from ..core.graph import Graph, Node
from ..registry.records import PassDef
from ._rewrite import Rewriter


def _activation(node: Node) -> str | None:
    if node.op in ("relu", "sigmoid", "tanh") and len(node.inputs) == 1:
        return node.op
    if node.op == "gelu":
        approx = node.params.get("approximate", "none")
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(approx)
    return None


def fuse_activation(graph: Graph) -> Graph:
    rw = Rewriter(graph)
    replaced: dict[int, Node] = {}
    for node in graph.nodes:
        if node.op in ("linear", "conv2d") and rw.single_use(node.outputs[0]):
            user = rw.consumers[node.outputs[0]][0]
            act = _activation(user)
            if act is not None and user.inputs[0] == node.outputs[0]:
                params = dict(node.params)
                params["activation"] = act
                ins = tuple(node.inputs) + (None,) * (3 - len(node.inputs))
                replaced[id(user)] = Node(f"fused_{node.op}", ins, user.outputs, params,
                                          node.source)
                rw.changed = True
                continue
        rw.emit(replaced.get(id(node), node))
    return rw.finish() if rw.changed else graph


PASS = PassDef(name="fuse_activation", level="all", run=fuse_activation, order=30,
               doc="linear/conv2d followed by relu/sigmoid/tanh/gelu -> one fused node.")
