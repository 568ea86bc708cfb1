"""GELU recognised when traced from primitives.

``0.5 * x * (1 + erf(x / sqrt(2)))`` becomes ``gelu(x)`` and ``0.5 * x * (1 + tanh(sqrt(2/pi) *
(x + 0.044715 * x**3)))`` becomes ``gelu(x, approximate="tanh")``, whatever the order of the
products, ``x / sqrt(2)`` or ``x * (1/sqrt(2))``, ``x**3`` or ``x*x*x``. The pattern's root is
the outermost product (coefficient 0.5); its other nodes go with dead-code elimination.
"""
from __future__ import annotations

import math

from onemodel.passes.patterns import P, PatternMatcher, close, match, same_type
from onemodel.registry import PassDef

from ._algebra import monomial, node_of

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

#: 1 + t, t = erf(u) or tanh(u): the factor the product must hold once
ONE_PLUS = P("add", [P.const(value=1.0), P(("erf", "tanh"), [P.var("u")], name="t")],
             commutative=True)


def _inner(m) -> tuple[str, str] | None:
    """(x, approximate) if ``u`` is x/sqrt2 (under erf) or sqrt(2/pi)*(x + 0.044715*x^3)."""
    rw = m.rw
    coef, factors = monomial(rw, m["u"])
    if len(factors) != 1:
        return None
    (base, power), = factors.items()
    if power != 1:
        return None
    if m.producer("t").op == "erf":
        return (base, "none") if close(coef, math.sqrt(0.5)) else None
    add = node_of(rw, base, "add")
    if add is None or not close(coef, SQRT_2_OVER_PI):
        return None
    for x, w in (add.inputs, add.inputs[::-1]):
        c3, f3 = monomial(rw, w, stop=frozenset({x}))
        if f3 == {x: 3} and close(c3, 0.044715):
            return x, "tanh"
    return None


def _gelu(m):
    rw = m.rw
    root = m.root.outputs[0]
    _, factors = monomial(rw, root)
    for f, power in factors.items():
        found = match(ONE_PLUS, f, m) if power == 1 else None
        inner = _inner(found) if found is not None else None
        if inner is None:
            continue
        x, approx = inner
        coef, fs = monomial(rw, root, stop=frozenset({x, f}))
        if fs == {x: 1, f: 1} and close(coef, 0.5) and same_type(rw.type(x), rw.type(root)):
            return m.node("gelu", [x], approximate=approx)
    return None


GELU = PatternMatcher([(P(("mul", "div")), _gelu)])

PASS = PassDef(name="recognize_gelu", level="all", run=GELU.rewrite, order=5, on_load=True,
               doc="0.5*x*(1+erf(x/sqrt2)) or the tanh form -> gelu.")
