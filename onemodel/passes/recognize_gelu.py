"""GELU recognised when traced from primitives.

``0.5 * x * (1 + erf(x / sqrt(2)))`` becomes ``gelu(x)`` and ``0.5 * x * (1 + tanh(sqrt(2/pi) *
(x + 0.044715 * x**3)))`` becomes ``gelu(x, approximate="tanh")``, whatever the order of the
products, ``x / sqrt(2)`` or ``x * (1/sqrt(2))``, ``x**3`` or ``x*x*x``. The last node of the
pattern is replaced; nodes nothing else reads are then removed by dead-code elimination.
"""
from __future__ import annotations

import math

from ..core.graph import Graph, Node
from ..registry import REGISTRY
from ..registry.records import PassDef
from ._match import close, monomial, node_of, split_const
from ._rewrite import Rewriter, same_type

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _inner(rw: Rewriter, t: Node) -> tuple[str, str] | None:
    """(x, approximate) if ``t`` is erf(x/sqrt2) or tanh(c*(x + 0.044715*x^3))."""
    coef, factors = monomial(rw, t.inputs[0])
    if len(factors) != 1:
        return None
    (base, power), = factors.items()
    if power != 1:
        return None
    if t.op == "erf":
        return (base, "none") if close(coef, math.sqrt(0.5)) else None
    add = node_of(rw, base, "add")
    if add is None or not close(coef, SQRT_2_OVER_PI):
        return None
    for x, w in (add.inputs, add.inputs[::-1]):
        c3, f3 = monomial(rw, w, stop=frozenset({x}))
        if f3 == {x: 3} and close(c3, 0.044715):
            return x, "tanh"
    return None


def _product(rw: Rewriter, start: str, x: str) -> str | None:
    """Walk up from ``start`` (1 + erf/tanh) through single-user products; return the value
    equal to 0.5 * x * start, or None."""
    cur = start
    for _ in range(4):
        users = rw.consumers.get(cur, [])
        if len(users) != 1 or users[0].op not in ("mul", "div") or cur in rw.output_values:
            return None
        cur = users[0].outputs[0]
        coef, factors = monomial(rw, cur, stop=frozenset({x, start}))
        if factors == {x: 1, start: 1} and close(coef, 0.5):
            return cur
    return None


def recognize_gelu(graph: Graph) -> Graph:
    if "gelu" not in REGISTRY.tables().ops:
        return graph
    rw = Rewriter(graph)
    replace: dict[str, Node] = {}
    for t in graph.nodes:
        if t.op not in ("erf", "tanh") or len(t.inputs) != 1:
            continue
        inner = _inner(rw, t)
        if inner is None:
            continue
        x, approx = inner
        one = rw.consumers.get(t.outputs[0], [])
        if len(one) != 1 or one[0].op != "add":
            continue
        found = split_const(rw, one[0])
        if found is None or found[0] != t.outputs[0] or found[1] != 1.0:
            continue
        final = _product(rw, one[0].outputs[0], x)
        if final is None or not same_type(graph.values[final].type, graph.values[x].type):
            continue
        replace[final] = Node("gelu", (x,), (final,), {"approximate": approx}, t.source)
    return rw.replace_producers(replace)


PASS = PassDef(name="recognize_gelu", level="all", run=recognize_gelu, order=5,
               doc="0.5*x*(1+erf(x/sqrt2)) or the tanh form -> gelu.")
