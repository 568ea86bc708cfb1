"""Common-subexpression elimination: two pure nodes with the same op, inputs and params compute
the same values, so the second one is dropped and its uses read the first. Small constants with
equal contents are merged the same way (so ``x * 2`` traced twice becomes one node)."""
from __future__ import annotations

import numpy as np

from ..core.graph import Graph
from ..registry import REGISTRY
from ..registry.records import PassDef
from ._rewrite import Rewriter, freeze

MAX_CONST_ELEMENTS = 4096


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    ops = REGISTRY.tables().ops
    rw = Rewriter(graph)
    consts: dict = {}
    for name in sorted(graph.initializers):
        a = graph.initializers[name]
        if a.size <= MAX_CONST_ELEMENTS:
            key = (a.dtype.str, a.shape, np.ascontiguousarray(a).tobytes())
            first = consts.setdefault(key, name)
            if first != name:
                rw.rename(name, first)
    seen: dict = {}
    for node in graph.nodes:
        op = ops.get(node.op)
        node = rw.emit(node)
        if op is None or not op.is_pure(node.params):
            continue
        pkey = freeze(dict(node.params))
        if pkey is None:
            continue
        key = (node.op, node.inputs, len(node.outputs), pkey)
        first = seen.get(key)
        if first is None:
            seen[key] = node
            continue
        rw.nodes.pop()
        for a, b in zip(node.outputs, first.outputs):
            rw.rename(a, b)
    return rw.finish() if rw.changed else graph


PASS = PassDef(name="common_subexpression_elimination", level="basic",
               run=eliminate_common_subexpressions, order=30,
               doc="Merge pure nodes that compute the same thing, and equal small constants.")
