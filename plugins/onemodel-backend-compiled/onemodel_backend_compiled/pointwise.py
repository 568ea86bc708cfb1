"""Pointwise ops as programs of the native expression VM (csrc/om_kernels.h, ``vm_block``).

One VM instruction is ``(opcode, dst, a, b)`` over registers of 64 floats; ``LOAD dst, i`` reads
input ``i`` (broadcast by strides), ``CONST dst, c`` a constant. A node, or a whole
``elementwise_chain``, becomes one loop over its output. The tables below say how the built-in
pointwise ops translate; an op of any plugin whose record declares a scalar formula (op traits)
translates through `formula_code` with no change here.
"""
from __future__ import annotations

import ast
from typing import Any, Mapping, Sequence

(LOAD, CONST, ADD, SUB, MUL, DIV, MAX, MIN, POW, NEG, ABS, EXP, LOG, SQRT, TANH, SIGMOID, RELU,
 ERF, GELU, GELU_TANH, SQUARE, RECIP, SWISH, COPY) = range(1, 25)
MAXREG, MAXIN, MAXCONST = 16, 16, 32
#: mask ops (csrc/om_masks.h): bools are 0.0 / 1.0; WHERE reads its condition from dst
LOADI64, ISNAN, WHERE, EQ, NE, LT, LE = range(30, 37)

UNARY = {"relu": RELU, "sigmoid": SIGMOID, "tanh": TANH, "exp": EXP, "log": LOG, "sqrt": SQRT,
         "neg": NEG, "abs": ABS, "erf": ERF, "identity": COPY, "copy": COPY}
BINARY = {"add": ADD, "sub": SUB, "mul": MUL, "div": DIV, "maximum": MAX, "minimum": MIN,
          "pow": POW}


class Unsupported(Exception):
    """This pointwise computation has no VM translation (the node falls back to numpy)."""


class VMBuilder:
    """Builds one VM program: registers, inputs (by value name) and constants."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int, int, int]] = []
        self.inputs: list[str] = []
        self.consts: list[float] = []
        self.nreg = 0
        self._loaded: dict[str, int] = {}
        self.temps: set[int] = set()   # registers holding a result read once (reusable)
        self.pinned: set[int] = set()  # read again later (a formula's inputs)
        self._free: list[int] = []

    def reg(self) -> int:
        if self._free:
            return self._free.pop()
        if self.nreg >= MAXREG:
            raise Unsupported("too many registers")
        self.nreg += 1
        return self.nreg - 1

    def _consume(self, r: int) -> bool:
        """Whether ``r`` was a temporary now read for the last time (so it may be reused)."""
        return r in self.temps and r not in self.pinned

    def load(self, value: str) -> int:
        if value in self._loaded:
            return self._loaded[value]
        if len(self.inputs) >= MAXIN:
            raise Unsupported("too many inputs")
        self.inputs.append(value)
        r = self.reg()
        self.code.append((LOAD, r, len(self.inputs) - 1, 0))
        self._loaded[value] = r
        return r

    def const(self, x: float) -> int:
        if len(self.consts) >= MAXCONST:
            raise Unsupported("too many constants")
        self.consts.append(float(x))
        r = self.reg()
        self.code.append((CONST, r, len(self.consts) - 1, 0))
        self.temps.add(r)
        return r

    def op(self, opc: int, a: int, b: int | None = None, dst: int | None = None) -> int:
        """``dst = opc(a, b)``; the VM reads both operands before writing, so the result may
        reuse a temporary operand's register."""
        spent = [r for r in dict.fromkeys((a, b)) if r is not None and self._consume(r)]
        if dst is None:
            dst = spent.pop(0) if spent else self.reg()
        for r in spent:
            if r != dst:
                self.temps.discard(r)
                self._free.append(r)
        self.code.append((opc, dst, a, 0 if b is None else b))
        self.temps.add(dst)
        return dst

    def finish(self, result: int) -> None:
        """Make ``result`` the last register written (the VM stores the last one)."""
        if not self.code or self.code[-1][1] != result:
            self.code.append((COPY, result, result, 0))


def op_code(vm: VMBuilder, op: str, params: Mapping[str, Any], regs: Sequence[int]) -> int:
    """The register holding ``op(*regs)`` (raises `Unsupported`)."""
    params = dict(params)
    if op in UNARY and not params and len(regs) == 1:
        return vm.op(UNARY[op], regs[0])
    if op in BINARY and not params and len(regs) == 2:
        return vm.op(BINARY[op], regs[0], regs[1])
    if op == "gelu" and len(regs) == 1 and set(params) <= {"approximate"}:
        return vm.op(GELU_TANH if params.get("approximate") == "tanh" else GELU, regs[0])
    if op == "clip" and len(regs) == 1 and set(params) <= {"min", "max"}:
        r = regs[0]
        lo, hi = params.get("min"), params.get("max")
        if lo is not None:
            r = vm.op(MAX, r, vm.const(lo))
        if hi is not None:
            r = vm.op(MIN, r, vm.const(hi))
        return r if r != regs[0] else vm.op(COPY, r)
    raise Unsupported(f"no VM translation for {op!r}")


_AST_BIN = {ast.Add: ADD, ast.Sub: SUB, ast.Mult: MUL, ast.Div: DIV, ast.Pow: POW}
_CALLS = {"np.exp": EXP, "np.log": LOG, "np.sqrt": SQRT, "np.tanh": TANH, "np.abs": ABS,
          "np.absolute": ABS, "np.negative": NEG, "np.square": SQUARE, "np.reciprocal": RECIP,
          "np.maximum": MAX, "np.minimum": MIN, "np.fmax": None, "np.add": ADD,
          "np.subtract": SUB, "np.multiply": MUL, "np.divide": DIV, "np.true_divide": DIV,
          "np.power": POW, "special.erf": ERF}


def formula_code(vm: VMBuilder, tree: ast.expr, regs: Mapping[str, int]) -> int:
    """Translate a checked pointwise formula (`onemodel.registry.formula`): numbers, input
    names, ``+ - * / **``, unary minus and the calls in ``_CALLS``. Comparisons and
    ``np.where`` have no VM form (the node stays on numpy)."""
    if isinstance(tree, ast.Constant):
        return vm.const(float(tree.value))
    if isinstance(tree, ast.Name):
        if tree.id not in regs:
            raise Unsupported(f"formula name {tree.id!r}")
        return regs[tree.id]
    if isinstance(tree, ast.BinOp) and type(tree.op) in _AST_BIN:
        a = formula_code(vm, tree.left, regs)
        b = formula_code(vm, tree.right, regs)
        return vm.op(_AST_BIN[type(tree.op)], a, b)
    if isinstance(tree, ast.UnaryOp):
        a = formula_code(vm, tree.operand, regs)
        return vm.op(NEG, a) if isinstance(tree.op, ast.USub) else a
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Attribute):
        name = f"{getattr(tree.func.value, 'id', '?')}.{tree.func.attr}"
        opc = _CALLS.get(name)
        arity = 2 if opc in (MAX, MIN, ADD, SUB, MUL, DIV, POW) else 1
        if opc is None or len(tree.args) != arity:
            raise Unsupported(f"formula call {name}")
        rs = [formula_code(vm, a, regs) for a in tree.args]
        return vm.op(opc, *rs)
    raise Unsupported(f"formula element {type(tree).__name__}")


__all__ = ["VMBuilder", "Unsupported", "op_code", "formula_code", "UNARY", "BINARY", "ADD"]
