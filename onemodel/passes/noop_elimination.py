"""No-op elimination: nodes whose output equals one of their inputs are removed and their uses
read that input. Driven by what op records declare (`OpTraits`):

* ``noop_when_same_type`` (and reshape or expand views): the output equals input 0 whenever both
  have one type (a cast to the input's own dtype, dropout when not training, a reshape to the
  same shape);
* ``view="permute"`` with its ``permutation``: an identity permutation, and two permutations in
  a row that compose to the identity (``x.transpose(0, 1).transpose(1, 0)``);
* a pointwise op's ``neutral`` constants: ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1``.

A node is only removed when its output type is exactly the input's type, so nothing downstream
sees a different shape or dtype.
"""
from __future__ import annotations

from ..core.graph import Graph, Node
from ..registry import REGISTRY
from ..registry.records import PassDef
from ._rewrite import Rewriter, same_type, scalar_value


def _perm(traits, node: Node, rank: int) -> tuple | None:
    """The axis permutation a permuting view applies, or None."""
    if traits.view != "permute" or traits.permutation is None:
        return None
    try:
        perm = tuple(int(a) for a in traits.permutation(dict(node.params), rank))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return perm if sorted(perm) == list(range(rank)) else None


def _noop_source(rw: Rewriter, node: Node, ops) -> str | None:
    """The input the node's output equals, or None."""
    op = ops.get(node.op)
    if op is None or len(node.outputs) != 1 or not node.inputs or node.inputs[0] is None:
        return None
    traits = op.traits
    out_t = rw.graph.values[node.outputs[0]].type
    x = node.inputs[0]
    if traits.is_noop_when_same_type(node.params):
        return x if same_type(out_t, rw.graph.values[x].type) else None
    if traits.view == "permute":
        rank = len(rw.graph.values[x].shape)
        perm = _perm(traits, node, rank)
        if perm is None:
            return None
        if perm == tuple(range(rank)) and same_type(out_t, rw.graph.values[x].type):
            return x
        inner = rw.producer(x)
        inner_op = ops.get(inner.op) if inner is not None else None
        if inner_op is not None and inner.inputs:
            iperm = _perm(inner_op.traits, inner, rank)
            if iperm is not None and tuple(iperm[i] for i in perm) == tuple(range(rank)):
                src = inner.inputs[0]
                if same_type(rw.graph.values[src].type, out_t):
                    return src
        return None
    pw = traits.pointwise
    if pw is not None and pw.neutral and len(node.inputs) == 2:
        for pos, neutral in pw.neutral.items():
            other = node.inputs[1 - pos]
            if (scalar_value(rw.const(node.inputs[pos])) == neutral
                    and same_type(rw.graph.values[other].type, out_t)):
                return other
    return None


def eliminate_noops(graph: Graph) -> Graph:
    ops = REGISTRY.tables().ops
    rw = Rewriter(graph)
    for node in graph.nodes:
        src = _noop_source(rw, node, ops)
        if src is not None:
            rw.rename(node.outputs[0], rw.resolve(src))
            continue
        rw.emit(node)
    return rw.finish() if rw.changed else graph


PASS = PassDef(name="noop_elimination", level="basic", run=eliminate_noops, order=20,
               doc="Remove nodes their op's traits say return an input unchanged: same-type "
                   "casts and reshapes, identity permutations, x+0 / x*1.")
