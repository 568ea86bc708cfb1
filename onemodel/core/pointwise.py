"""Evaluating pointwise formulas (`onemodel.registry.Pointwise`) on arrays.

`function(expr, names)` compiles an expression tree into a Python function of arrays (numpy
broadcasting), the namespace being ``np`` and `onemodel.core.special`; `compose(steps)` builds
the one tree of a chain of pointwise applications, as a fusing backend wants it.
"""
from __future__ import annotations

import ast
from typing import Callable, Sequence

import numpy as np

from ..registry.formula import substitute
from . import special

NAMESPACE = {"np": np, "special": special}


def function(expr: ast.expr, names: Sequence[str], label: str = "pointwise") -> Callable:
    """``f(*arrays)`` computing ``expr`` with ``names[i]`` bound to the i-th argument."""
    args = [ast.arg(arg=n) for n in names]
    fn = ast.FunctionDef(name=label, args=ast.arguments(posonlyargs=[], args=args, vararg=None,
                                                        kwonlyargs=[], kw_defaults=[],
                                                        kwarg=None, defaults=[]),
                         body=[ast.Return(value=expr)], decorator_list=[], returns=None,
                         type_params=[])
    module = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
    ns = dict(NAMESPACE)
    exec(compile(module, f"<{label}>", "exec"), ns)  # noqa: S102 - a checked formula tree
    return ns[label]


def compose(steps: Sequence[tuple[ast.expr, Sequence[str | int]]], inputs: Sequence[str]
            ) -> ast.expr:
    """One tree for a chain: each step is (its tree over its own operand names, the operands),
    an operand being an index into ``inputs`` or -1 for the previous step's result."""
    acc = None
    for tree, (names, args) in steps:
        mapping = {n: (acc if a == -1 else inputs[a]) for n, a in zip(names, args)}
        acc = substitute(tree, mapping)
    return acc


__all__ = ["NAMESPACE", "function", "compose"]
