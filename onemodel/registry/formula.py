"""Pointwise formulas: the scalar expression an op declares in ``OpTraits.pointwise``.

A formula is a numpy expression over the op's input names (and its params' names), for example
``"a + b"``, ``"np.maximum(x, 0)"`` or ``"0.5 * x * (1 + special.erf(x * 0.7071067811865476))"``.
The grammar is small on purpose, so that a backend can compile it to anything (in-place ufunc
calls, C): numbers, names, ``+ - * / **``, unary ``-``, comparisons, and calls of ``np.<ufunc>``,
``np.where`` and ``special.<function>`` (`onemodel.core.special`). This module only parses and
rewrites formulas (the registry layer imports nothing above it); `onemodel.core.pointwise`
evaluates them.
"""
from __future__ import annotations

import ast
import copy
import numbers
from typing import Any, Iterable, Mapping

#: modules a formula may call into (``np.exp``, ``special.erf``)
NAMESPACES = ("np", "special")
_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_UNARY = (ast.USub, ast.UAdd)
_COMPARE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


class FormulaError(ValueError):
    """A formula outside the grammar, or naming something that is neither input nor param."""


def parse(formula: str, names: Iterable[str] = ()) -> ast.expr:
    """The checked expression tree of ``formula``; ``names`` (when given) are the only free
    names it may use besides the namespaces."""
    try:
        tree = ast.parse(formula, mode="eval").body
    except SyntaxError as exc:
        raise FormulaError(f"formula {formula!r} is not an expression: {exc.msg}") from None
    allowed = set(names) if names else None
    for node in ast.walk(tree):
        _check(node, formula, allowed)
    return tree


def _check(node: ast.AST, formula: str, allowed: set | None) -> None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, numbers.Real):
            raise FormulaError(f"formula {formula!r}: constant {node.value!r} is not a number")
    elif isinstance(node, ast.Name):
        if node.id not in NAMESPACES and allowed is not None and node.id not in allowed:
            raise FormulaError(f"formula {formula!r} uses {node.id!r}, which is neither an input "
                               f"nor a param ({', '.join(sorted(allowed))})")
    elif isinstance(node, ast.Attribute):
        if not (isinstance(node.value, ast.Name) and node.value.id in NAMESPACES):
            raise FormulaError(f"formula {formula!r}: only np.<ufunc> and special.<function> "
                               f"may be called, not {ast.unparse(node)!r}")
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Attribute) or node.keywords:
            raise FormulaError(f"formula {formula!r}: {ast.unparse(node)!r} is not a call of "
                               f"np.<ufunc> or special.<function> with positional arguments")
    elif isinstance(node, ast.BinOp):
        if not isinstance(node.op, _BINOPS):
            raise FormulaError(f"formula {formula!r}: operator {type(node.op).__name__} is not "
                               f"one of + - * / **")
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, _UNARY):
            raise FormulaError(f"formula {formula!r}: unary {type(node.op).__name__} is not "
                               f"allowed")
    elif isinstance(node, ast.Compare):
        if len(node.ops) != 1 or not isinstance(node.ops[0], _COMPARE):
            raise FormulaError(f"formula {formula!r}: comparisons must be single (a < b)")
    elif not isinstance(node, (ast.Load, ast.operator, ast.unaryop, ast.cmpop)):
        raise FormulaError(f"formula {formula!r}: {type(node).__name__} is not allowed "
                           f"in a pointwise formula")


def free_names(tree: ast.expr) -> set[str]:
    """The input and param names a formula reads."""
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in NAMESPACES}


class _Substitute(ast.NodeTransformer):
    def __init__(self, mapping: Mapping[str, ast.expr]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.mapping:
            return self.mapping[node.id]
        return node


def substitute(tree: ast.expr, mapping: Mapping[str, Any]) -> ast.expr:
    """``tree`` with each name in ``mapping`` replaced: by a number (a param's value), a name
    (str) or another tree (composing formulas)."""
    nodes: dict[str, ast.expr] = {}
    for k, v in mapping.items():
        if isinstance(v, ast.expr):
            nodes[k] = v
        elif isinstance(v, str):
            nodes[k] = ast.Name(id=v, ctx=ast.Load())
        else:
            nodes[k] = ast.Constant(value=v)
    return ast.fix_missing_locations(_Substitute(nodes).visit(copy.deepcopy(tree)))


def is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and type(
        value).__module__ in ("builtins", "numpy")


__all__ = ["NAMESPACES", "FormulaError", "parse", "free_names", "substitute", "is_number"]
