"""Batch norm (eval) folded into the preceding conv2d / linear.

``batch_norm(conv2d(x, W, b), mean, var, gamma, beta, training=False)`` with constant
statistics becomes ``conv2d(x, W * s, (b - mean) * s + beta)`` with ``s = gamma / sqrt(var +
eps)`` (per output channel); the same for ``linear`` on (N, C) features. The conv/linear output
must have no other user. Training-mode batch norm, or statistics fed at run time, stay as they
are.
"""
from __future__ import annotations

import numpy as np

from ..core.graph import Graph, Node
from ..registry.records import PassDef
from ._rewrite import Rewriter


def _bn_params(rw: Rewriter, bn: Node, channels: int):
    p = bn.params
    if p.get("training", False):
        return None
    ins = list(bn.inputs) + [None] * (5 - len(bn.inputs))
    mean, var = rw.const(ins[1]), rw.const(ins[2])
    gamma = rw.const(ins[3]) if ins[3] is not None else None
    beta = rw.const(ins[4]) if ins[4] is not None else None
    if mean is None or var is None or (ins[3] is not None and gamma is None) or (
            ins[4] is not None and beta is None):
        return None
    if mean.size != channels or var.size != channels:
        return None
    eps = float(p.get("eps", 1e-5))
    dt = np.float64
    gamma = np.ones(channels, dt) if gamma is None else gamma.astype(dt).reshape(channels)
    beta = np.zeros(channels, dt) if beta is None else beta.astype(dt).reshape(channels)
    scale = gamma / np.sqrt(var.astype(dt).reshape(channels) + eps)
    shift = beta - mean.astype(dt).reshape(channels) * scale
    return scale, shift


def fold_batch_norm(graph: Graph) -> Graph:
    rw = Rewriter(graph)
    replaced: dict[int, Node] = {}
    skip: set[int] = set()
    for node in graph.nodes:
        if node.op in ("conv2d", "linear") and rw.single_use(node.outputs[0]):
            bn = rw.consumers[node.outputs[0]][0]
            W = rw.const(node.inputs[1])
            bias_name = node.inputs[2] if len(node.inputs) > 2 else None
            B = rw.const(bias_name) if bias_name is not None else None
            rank = len(graph.values[node.outputs[0]].shape)
            if (bn.op == "batch_norm" and bn.inputs[0] == node.outputs[0] and W is not None
                    and (bias_name is None or B is not None) and W.dtype.kind == "f"
                    and (node.op == "conv2d" or rank == 2)):
                found = _bn_params(rw, bn, W.shape[0])
                if found is not None:
                    scale, shift = found
                    shape = (-1,) + (1,) * (W.ndim - 1)
                    W2 = (W.astype(np.float64) * scale.reshape(shape)).astype(W.dtype)
                    b0 = np.zeros(W.shape[0]) if B is None else B.astype(np.float64)
                    B2 = (b0 * scale + shift).astype(W.dtype)
                    wn = rw.add_const(W2, f"{node.inputs[1]}_bn")
                    bnm = rw.add_const(B2, f"{bias_name or node.inputs[1]}_bn_bias")
                    replaced[id(bn)] = Node(node.op, (node.inputs[0], wn, bnm), bn.outputs,
                                            node.params, node.source)
                    skip.add(id(node))
                    rw.changed = True
                    continue
        if id(node) in skip:
            continue
        rw.emit(replaced.get(id(node), node))
    return rw.finish() if rw.changed else graph


PASS = PassDef(name="fold_batch_norm", level="all", run=fold_batch_norm, order=20,
               doc="Fold eval-mode batch_norm with constant statistics into conv2d/linear.")
