"""Layer norm recognised when traced from primitives.

``(x - mean(x)) / sqrt(mean((x - mean(x))**2) + eps)`` over the last axis (``keepdims=True``;
the square as ``d*d`` or ``d**2``), optionally followed by ``* weight`` and ``+ bias`` (constants
of the last axis' size), becomes one ``layer_norm(x, weight, bias, normalized_shape=(C,), eps)``.
"""
from __future__ import annotations

from ..core.graph import Graph, Node
from ..core.symbolic import Dim
from ..registry import REGISTRY
from ..registry.records import PassDef
from ._match import last_axis, node_of, split_const
from ._rewrite import Rewriter, same_type


def _mean_last(rw: Rewriter, name: str) -> str | None:
    m = node_of(rw, name, "mean")
    if m is None or not m.params.get("keepdims", False):
        return None
    rank = len(rw.graph.values[m.inputs[0]].shape)
    return m.inputs[0] if last_axis(m.params.get("axis"), rank) else None


def _squared(rw: Rewriter, name: str) -> str | None:
    n = node_of(rw, name, "mul", "pow")
    if n is None:
        return None
    if n.op == "mul":
        return n.inputs[0] if n.inputs[0] == n.inputs[1] else None
    found = split_const(rw, n)
    return found[0] if found is not None and found[1] == 2.0 else None


def _normalized(rw: Rewriter, div: Node) -> tuple[str, float] | None:
    """(x, eps) if ``div`` is (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)."""
    d, s = div.inputs
    sub = node_of(rw, d, "sub")
    if sub is None:
        return None
    x, mu = sub.inputs
    if _mean_last(rw, mu) != x:
        return None
    sq = node_of(rw, s, "sqrt")
    if sq is None:
        return None
    add = node_of(rw, sq.inputs[0], "add")
    if add is None:
        return None
    found = split_const(rw, add)
    if found is None:
        return None
    var, eps = found
    inner = _mean_last(rw, var)
    if inner is None or _squared(rw, inner) != d:
        return None
    return x, eps


def _affine(rw: Rewriter, name: str, op: str, width) -> tuple[str, str] | None:
    """If ``name``'s only user is ``op`` with a constant of ``width``: (its output, constant)."""
    users = rw.consumers.get(name, [])
    if len(users) != 1 or users[0].op != op or name in rw.output_values:
        return None
    n = users[0]
    other = n.inputs[1] if n.inputs[0] == name else n.inputs[0]
    c = rw.const(other)
    if c is None or c.shape != (width,) or other == name:
        return None
    if not same_type(rw.graph.values[n.outputs[0]].type, rw.graph.values[name].type):
        return None
    return n.outputs[0], other


def recognize_layer_norm(graph: Graph) -> Graph:
    if "layer_norm" not in REGISTRY.tables().ops:
        return graph
    rw = Rewriter(graph)
    replace: dict[str, Node] = {}
    for div in graph.nodes:
        if div.op != "div" or len(div.inputs) != 2:
            continue
        found = _normalized(rw, div)
        if found is None:
            continue
        x, eps = found
        xt = graph.values[x].type
        width = xt.shape[-1] if xt.shape else None
        if width is None or isinstance(width, Dim) or not xt.dtype.is_float:
            continue
        if not same_type(graph.values[div.outputs[0]].type, xt):
            continue
        final, weight, bias = div.outputs[0], None, None
        scaled = _affine(rw, final, "mul", width)
        if scaled is not None:
            final, weight = scaled
            shifted = _affine(rw, final, "add", width)
            if shifted is not None:
                final, bias = shifted
        replace[final] = Node("layer_norm", (x, weight, bias), (final,),
                              {"normalized_shape": (width,), "eps": float(eps)}, div.source)
    return rw.replace_producers(replace)


PASS = PassDef(name="recognize_layer_norm", level="all", run=recognize_layer_norm, order=5,
               doc="mean/sub/var/sqrt/div over the last axis (+ weight, bias) -> layer_norm.")
