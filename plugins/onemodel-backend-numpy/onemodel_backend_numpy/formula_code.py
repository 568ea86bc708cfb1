"""Pointwise formulas (`onemodel.registry.Pointwise`) lowered to numpy statements that write into
a given buffer with ``out=`` wherever a ufunc allows it, so a fused chain needs few temporaries.

`Lowering.emit(tree, "out")` appends lines computing ``tree`` into the variable ``out``. A
sub-expression is computed in ``out`` itself when no sibling still has to read ``out``'s old
value; the others go to temporaries. Every line records what it reads, so the caller can tell
whether the output buffer may alias an input (`Lowering.reads_after_first_write`).
"""
from __future__ import annotations

import ast

import numpy as np

from onemodel.core.plan import literal

_BINARY = {ast.Add: "np.add", ast.Sub: "np.subtract", ast.Mult: "np.multiply",
           ast.Div: "np.divide", ast.Pow: "np.power"}
_COMPARE = {ast.Lt: "np.less", ast.LtE: "np.less_equal", ast.Gt: "np.greater",
            ast.GtE: "np.greater_equal", ast.Eq: "np.equal", ast.NotEq: "np.not_equal"}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _parts(node: ast.expr):
    """(function code, operands, takes out=) of an operation node, or None for a leaf."""
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)], [node.left, node.right], True
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.UAdd):
            return "np.positive", [node.operand], True
        return "np.negative", [node.operand], True
    if isinstance(node, ast.Compare):
        return _COMPARE[type(node.ops[0])], [node.left, node.comparators[0]], False
    if isinstance(node, ast.Call):
        func = node.func
        ufunc = func.value.id == "np" and isinstance(getattr(np, func.attr, None), np.ufunc)
        return ast.unparse(func), list(node.args), ufunc
    return None


class Lowering:
    def __init__(self, out: str = "out") -> None:
        self.out = out
        self.lines: list[str] = []
        self._reads: list[set[str]] = []
        self._writes_out: list[bool] = []
        self._tmp = 0
        #: constants with no exact literal (numpy scalars): the generated code's globals
        self.constants: dict[str, object] = {}

    def line(self, code: str, reads: set[str], writes_out: bool) -> None:
        """Append one statement: the names it reads, whether it writes the output."""
        self.lines.append(code)
        self._reads.append(reads)
        self._writes_out.append(writes_out)

    def _fresh(self) -> str:
        self._tmp += 1
        return f"t{self._tmp}"

    def value(self, node: ast.expr) -> str:
        """Code naming the value of ``node`` (a leaf as is, an operation in a temporary)."""
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Constant):
            src = literal(node.value)  # inf, nan, -0.0 read back exactly; repr's 'inf' did not
            if src is None:
                src = f"_c{len(self.constants)}"
                self.constants[src] = node.value
            return src
        tmp = self._fresh()
        self.emit(node, tmp, fresh=True)
        return tmp

    def emit(self, node: ast.expr, target: str, fresh: bool = False) -> None:
        """Lines leaving ``node``'s value in ``target`` (assigned when ``fresh``, else written
        into the existing buffer)."""
        parts = _parts(node)
        writes = target == self.out
        if parts is None:
            code = self.value(node)
            if code != target:
                self.line(f"{target} = {code}" if fresh else f"np.copyto({target}, {code})",
                           _names(node), writes and not fresh)
            return
        func, operands, takes_out = parts
        into = None
        if takes_out and not fresh and writes:
            for k, child in enumerate(operands):
                others = operands[:k] + operands[k + 1:]
                if (_parts(child) is not None and _parts(child)[2]
                        and not any(self.out in _names(o) for o in others)):
                    into = k
                    break
        codes = [None] * len(operands)
        for k, child in enumerate(operands):
            if k != into:
                codes[k] = self.value(child)
        if into is not None:
            self.emit(operands[into], target)
            codes[into] = target
        reads = set().union(*(_names(o) for o in operands)) | ({target} if into is not None
                                                                else set())
        call = f"{func}({', '.join(codes)}"
        if fresh:
            self.line(f"{target} = {call})", reads, False)
        elif takes_out:
            self.line(f"{call}, out={target})", reads, writes)
        else:
            self.line(f"np.copyto({target}, {call}))", reads, writes)

    def reads_after_first_write(self, names: set[str]) -> bool:
        """Whether any of ``names`` is read at or after the first line writing the output."""
        first = next((i for i, w in enumerate(self._writes_out) if w), None)
        if first is None:
            return False
        return any(self._reads[i] & names for i in range(first, len(self.lines)))
