"""matmul + add -> linear.

``matmul(x, W)`` with a constant 2-D ``W`` becomes ``linear(x, W.T)`` (the weight is stored
out x in, as `linear` wants, so a backend can pre-pack it once), and a following ``add`` of a
constant bias of the output width (``linear(x, W) + b``) folds into ``linear(x, W, b)``. The
intermediate must have no other user, and the result must keep its type.
"""
from __future__ import annotations

import numpy as np

from ..core.graph import Graph, Node
from ..registry import REGISTRY
from ..registry.records import PassDef
from ._rewrite import Rewriter, same_type


def _bias(rw: Rewriter, node: Node, lin_out: str, width) -> tuple[str, np.ndarray] | None:
    """If ``node`` adds a constant bias of ``width`` to ``lin_out``: (the other input, array)."""
    if node.op != "add" or len(node.inputs) != 2 or lin_out not in node.inputs:
        return None
    other = node.inputs[1] if node.inputs[0] == lin_out else node.inputs[0]
    if other == lin_out:
        return None
    b = rw.const(other)
    if b is None or b.size != width or (b.ndim and b.shape[-1] != width):
        return None
    if b.ndim > len(rw.graph.values[lin_out].shape):
        return None
    if not same_type(rw.graph.values[node.outputs[0]].type, rw.graph.values[lin_out].type):
        return None
    return other, b.reshape(width)


def fuse_matmul_add(graph: Graph) -> Graph:
    if "linear" not in REGISTRY.tables().ops:
        return graph
    rw = Rewriter(graph)
    absorbed: set[int] = set()
    for idx, node in enumerate(graph.nodes):
        if id(node) in absorbed:
            continue
        if node.op == "matmul" and len(node.inputs) == 2:
            x, w = node.inputs
            W = rw.const(w)
            xt = graph.values[x].type
            if (W is not None and W.ndim == 2 and len(xt.shape) >= 2 and W.dtype == xt.dtype.numpy
                    and rw.const(x) is None):
                out = node.outputs[0]
                wt = rw.add_const(W.T, f"{w}_t")
                bias = None
                users = rw.consumers.get(out, [])
                if rw.single_use(out):
                    found = _bias(rw, users[0], out, W.shape[1])
                    if found is not None and found[1].dtype == W.dtype:
                        bias = rw.add_const(found[1], f"{found[0]}_b")
                        absorbed.add(id(users[0]))
                        out_name = users[0].outputs[0]
                        rw.emit(Node("linear", (x, wt, bias), (out_name,), {}, users[0].source))
                        rw.changed = True
                        continue
                rw.emit(Node("linear", (x, wt, None), (out,), {}, node.source))
                rw.changed = True
                continue
        if node.op == "linear" and (len(node.inputs) < 3 or node.inputs[2] is None):
            out = node.outputs[0]
            W = rw.const(node.inputs[1])
            users = rw.consumers.get(out, [])
            if W is not None and rw.single_use(out):
                found = _bias(rw, users[0], out, W.shape[0])
                if found is not None and found[1].dtype == W.dtype:
                    bias = rw.add_const(found[1], f"{found[0]}_b")
                    absorbed.add(id(users[0]))
                    rw.emit(Node("linear", (node.inputs[0], node.inputs[1], bias),
                                 (users[0].outputs[0],), {}, users[0].source))
                    continue
        rw.emit(node)
    return rw.finish() if rw.changed else graph


PASS = PassDef(name="fuse_matmul_add", level="all", run=fuse_matmul_add, order=10,
               doc="matmul by a constant weight (+ a constant bias) -> linear.")
