"""The one declarative pattern engine every recogniser and fusion pass is written with.

In the spirit of tinygrad's ``PatternMatcher``/``UPat``: a pattern describes a subgraph by the op
of each node, its inputs (patterns again), constraints on params and names binding what it
matched; a rule pairs a pattern with a function building the replacement::

    from onemodel.passes.patterns import P, PatternMatcher

    swish = P("mul", [P.var("x"), P("sigmoid", [P.var("x")], private=True)], commutative=True)
    fold = PatternMatcher([(swish, lambda m: m.node("swish", [m["x"]], beta=1.0))])
    graph = fold.rewrite(graph)

* ``P(op, inputs, name=..., params=..., where=..., commutative=..., private=...)`` matches a node
  whose op is ``op`` (a name or a tuple of names) and whose inputs match ``inputs`` in order
  (``commutative=True``: either order of two inputs). ``params`` maps a param to the value it
  must have (or a predicate on it); ``where(match)`` is any further condition. ``private=True``
  asks that the node's result is read by nothing else (so the rewrite really removes it).
* ``P.var(name)`` matches any value, ``P.const(name, value=...)`` a constant (with ``value``: one
  whose every element is close to it), ``P.any_of(p, q)`` the first alternative that matches.
  A name bound twice must bind the same value both times (``x * sigmoid(x)``).
* A rule's function gets a `Match` and returns the replacement `Node` (its output names the
  value it replaces, the matched root's by default with `Match.node`), or None to leave it.

`PatternMatcher.rewrite(graph)` tries the rules on every node, in graph order, as the root of a
match; each node's value is replaced at most once per call; nodes the replacement no longer needs
are left for dead-code elimination. The pass manager repeats passes to a fixed point, so a
rewrite that enables another happens in the next round.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..core.graph import Graph, Node
from ..registry import REGISTRY
from ._rewrite import Rewriter, same_type, scalar_value


class P:
    """A pattern for one node (or, from `var` / `const`, for any value or a constant)."""

    __slots__ = ("ops", "inputs", "name", "params", "where", "commutative", "private", "kind",
                 "value", "alternatives")

    def __init__(self, op: str | Sequence[str] | None = None, inputs: Sequence["P"] | None = None,
                 *, name: str | None = None, params: Mapping[str, Any] | None = None,
                 where: Callable[["Match"], bool] | None = None, commutative: bool = False,
                 private: bool = False) -> None:
        self.ops = (op,) if isinstance(op, str) else (tuple(op) if op is not None else None)
        self.inputs = tuple(inputs) if inputs is not None else None
        self.name = name
        self.params = dict(params or {})
        self.where = where
        self.commutative = commutative
        self.private = private
        self.kind = "node"
        self.value: float | None = None
        self.alternatives: tuple[P, ...] = ()

    @classmethod
    def var(cls, name: str | None = None, where: Callable[["Match"], bool] | None = None) -> "P":
        """Any value (a graph input, a constant or a node's result)."""
        p = cls(name=name, where=where)
        p.kind = "var"
        return p

    @classmethod
    def const(cls, name: str | None = None, value: float | None = None,
              where: Callable[["Match"], bool] | None = None) -> "P":
        """A constant; with ``value``, one holding that single value (all elements close)."""
        p = cls(name=name, where=where)
        p.kind = "const"
        p.value = value
        return p

    @classmethod
    def any_of(cls, *alternatives: "P", name: str | None = None) -> "P":
        """The first of ``alternatives`` that matches."""
        p = cls(name=name)
        p.kind = "any"
        p.alternatives = alternatives
        return p

    def __repr__(self) -> str:
        if self.kind != "node":
            return f"P.{self.kind}({self.name!r})"
        return f"P({self.ops}, {list(self.inputs or ())})"


class Match:
    """What a pattern matched: ``m["x"]`` is the value bound to ``x``, `Match.producer` its node,
    `Match.const` a constant's array; ``m.rw`` the `Rewriter` (types, new constants)."""

    def __init__(self, rw: Rewriter, root: Node) -> None:
        self.rw = rw
        self.root = root
        self.values: dict[str, str] = {}
        self.nodes: dict[str, Node] = {}
        self.matched: list[Node] = []  # every node the pattern covered

    def __getitem__(self, name: str) -> str:
        return self.values[name]

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def producer(self, name: str) -> Node | None:
        """The node bound to pattern ``name``, or the node producing bound value ``name``."""
        if name in self.nodes:
            return self.nodes[name]
        return self.rw.producer(self.values.get(name))

    def const(self, name: str) -> np.ndarray | None:
        return self.rw.const(self.values.get(name))

    def scalar(self, name: str) -> float | None:
        """The single value of the constant bound to ``name`` (None if it is not one)."""
        return scalar_value(self.const(name))

    def type(self, name: str):
        return self.rw.type(self.values[name])

    def node(self, op: str, inputs: Iterable[str | None], outputs: Sequence[str] | None = None,
             **params) -> Node:
        """A replacement node (for the root's outputs unless ``outputs`` says otherwise)."""
        return Node(op, tuple(inputs), tuple(outputs or self.root.outputs), params,
                    self.root.source)

    def copy(self) -> "Match":
        m = Match(self.rw, self.root)
        m.values, m.nodes, m.matched = dict(self.values), dict(self.nodes), list(self.matched)
        return m


def _bind(m: Match, name: str | None, value: str) -> bool:
    if name is None:
        return True
    have = m.values.get(name)
    if have is not None:
        return have == value
    m.values[name] = value
    return True


def match(p: P, value: str | None, m: Match, root: bool = False) -> Match | None:
    """``m`` extended by ``p`` matching ``value`` (a new Match), or None."""
    if value is None:
        return None
    if p.kind == "any":
        for alt in p.alternatives:
            got = match(alt, value, m.copy(), root)
            if got is not None and _bind(got, p.name, value):
                return got
        return None
    m = m.copy()
    rw = m.rw
    if p.kind == "var":
        if not _bind(m, p.name, value):
            return None
        return m if p.where is None or p.where(m) else None
    if p.kind == "const":
        arr = rw.const(value)
        if arr is None or (p.value is not None and not close(scalar_value(arr), p.value)):
            return None
        if not _bind(m, p.name, value):
            return None
        return m if p.where is None or p.where(m) else None
    node = rw.producer(value)
    if node is None or len(node.outputs) != 1 or (p.ops is not None and node.op not in p.ops):
        return None
    if p.private and not root and not rw.single_use(value):
        return None
    for k, want in p.params.items():
        have = node.params.get(k)
        if not (want(have) if callable(want) else have == want):
            return None
    if not _bind(m, p.name, value):
        return None
    if p.name is not None:
        m.nodes[p.name] = node
    m.matched.append(node)
    if p.inputs is not None:
        orders = [node.inputs]
        if p.commutative and len(node.inputs) == 2:
            orders.append(node.inputs[::-1])
        for ins in orders:
            got = _match_inputs(p.inputs, ins, m)
            if got is not None and (p.where is None or p.where(got)):
                return got
        return None
    return m if p.where is None or p.where(m) else None


def _match_inputs(pats: Sequence[P], ins: Sequence[str | None], m: Match) -> Match | None:
    if len(pats) > len(ins):
        return None
    for p, v in zip(pats, ins):
        m = match(p, v, m)
        if m is None:
            return None
    return m


Rule = tuple[P, Callable[[Match], Node | None]]


class PatternMatcher:
    """Rules tried on every node as a match's root; see the module docstring."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self._by_op: dict[str | None, list[Rule]] = {}
        for rule in self.rules:
            for op in (rule[0].ops or (None,)) if rule[0].kind == "node" else (None,):
                self._by_op.setdefault(op, []).append(rule)

    def rewrite(self, graph: Graph) -> Graph:
        """The graph with each matched root's value replaced by its rule's result; matched pure
        nodes nothing reads any more are dropped."""
        rw = Rewriter(graph)
        replace: dict[str, Node] = {}
        covered: set[int] = set()
        for node in graph.nodes:
            if len(node.outputs) != 1:
                continue
            for rule in self._by_op.get(node.op, []) + self._by_op.get(None, []):
                m = match(rule[0], node.outputs[0], Match(rw, node), root=True)
                if m is None:
                    continue
                new = rule[1](m)
                if new is None:
                    continue
                key = new.outputs[0]
                if key in replace:
                    continue
                replace[key] = new
                covered.update(id(n) for n in m.matched)
                break
        if not replace:
            return graph
        ops = REGISTRY.tables().ops
        nodes = [replace.get(n.outputs[0], n) if len(n.outputs) == 1 else n for n in graph.nodes]
        while True:
            used = {i for n in nodes for i in n.inputs} | rw.output_values
            keep = [n for n in nodes if id(n) not in covered or any(o in used for o in n.outputs)
                    or (n.op in ops and not ops[n.op].is_pure(n.params))]
            if len(keep) == len(nodes):
                break
            nodes = keep
        for n in nodes:
            rw.emit(n)
        rw.changed = True
        return rw.finish()


def close(value: float | None, want: float, rel: float = 1e-4) -> bool:
    """``value`` is a number close to ``want`` (relative ``rel``, absolute 1e-7)."""
    return value is not None and math.isclose(value, want, rel_tol=rel, abs_tol=1e-7)


def last_axis(axis, rank: int) -> bool:
    """``axis`` (an int or a 1-tuple) names the last axis."""
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            return False
        axis = axis[0]
    return isinstance(axis, int) and axis % max(rank, 1) == rank - 1


__all__ = ["P", "Match", "PatternMatcher", "Rule", "match", "close", "last_axis", "Rewriter",
           "same_type", "scalar_value"]
