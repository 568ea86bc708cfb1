"""Arithmetic the recognisers see through: a value as a product of powers of other values times
a constant (``0.5 * x * (1 + t)`` in any association), through mul, div by constants, neg and
small integer pow. The patterns (`onemodel.passes.patterns`) match the structure; this normalises
the algebra that many structures spell the same way."""
from __future__ import annotations

from onemodel.core.graph import Node
from onemodel.passes.patterns import Rewriter, scalar_value


def node_of(rw: Rewriter, name: str | None, *ops: str) -> Node | None:
    """The node producing ``name`` if its op is one of ``ops``."""
    n = rw.producer(name)
    return n if n is not None and n.op in ops else None


def split_const(rw: Rewriter, node: Node) -> tuple[str, float] | None:
    """For a binary node with one scalar-constant operand: (the other operand, the constant).
    Commutative ops accept the constant on either side; sub/div only on the right."""
    if len(node.inputs) != 2:
        return None
    a, b = node.inputs
    vb = scalar_value(rw.const(b))
    if vb is not None and rw.const(a) is None:
        return a, vb
    if node.op in ("add", "mul"):
        va = scalar_value(rw.const(a))
        if va is not None and rw.const(b) is None:
            return b, va
    return None


def scaled(rw: Rewriter, name: str) -> tuple[str, float]:
    """``name`` as (base, factor) through one multiplication/division by a scalar constant."""
    n = node_of(rw, name, "mul", "div")
    if n is not None:
        found = split_const(rw, n)
        if found is not None and found[1] != 0:
            base, c = found
            return base, (c if n.op == "mul" else 1.0 / c)
    return name, 1.0


def monomial(rw: Rewriter, name: str, stop=frozenset(), depth: int = 8):
    """``name`` as ``(coefficient, {base: power})``; values in ``stop`` (and anything that is
    not a product) are kept as bases."""
    c = scalar_value(rw.const(name))
    if c is not None:
        return c, {}
    n = rw.producer(name)
    if name in stop or n is None or depth == 0:
        return 1.0, {name: 1}
    if n.op == "mul" and len(n.inputs) == 2:
        (ca, fa), (cb, fb) = (monomial(rw, i, stop, depth - 1) for i in n.inputs)
        out = dict(fa)
        for k, p in fb.items():
            out[k] = out.get(k, 0) + p
        return ca * cb, out
    if n.op == "div" and len(n.inputs) == 2:
        d = scalar_value(rw.const(n.inputs[1]))
        if d:
            ca, fa = monomial(rw, n.inputs[0], stop, depth - 1)
            return ca / d, fa
    if n.op == "neg":
        ca, fa = monomial(rw, n.inputs[0], stop, depth - 1)
        return -ca, fa
    if n.op == "pow" and len(n.inputs) == 2:
        e = scalar_value(rw.const(n.inputs[1]))
        if e is not None and e == int(e) and 1 <= e <= 4:
            ca, fa = monomial(rw, n.inputs[0], stop, depth - 1)
            return ca ** int(e), {k: p * int(e) for k, p in fa.items()}
    return 1.0, {name: 1}
