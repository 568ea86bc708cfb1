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

from .instructions import VM_MAXCONST as MAXCONST
from .instructions import VM_MAXIN as MAXIN
from .instructions import VM_MAXREG as MAXREG
from .instructions import VM_OPCODES as _VM

# the VM's opcodes, from the instruction table (instructions.VM_RANGES)
(LOAD, CONST, ADD, SUB, MUL, DIV, MAX, MIN, POW, NEG, ABS, EXP, LOG, SQRT, TANH, SIGMOID, RELU,
 ERF, GELU, GELU_TANH, SQUARE, RECIP, SWISH, COPY) = (_VM[n] for n in (
     "LOAD", "CONST", "ADD", "SUB", "MUL", "DIV", "MAX", "MIN", "POW", "NEG", "ABS", "EXP",
     "LOG", "SQRT", "TANH", "SIGMOID", "RELU", "ERF", "GELU", "GELU_TANH", "SQUARE", "RECIP",
     "SWISH", "COPY"))
#: mask ops (csrc/om_masks.h): bools are 0.0 / 1.0; WHERE reads its condition from dst
LOADI64, ISNAN, WHERE, EQ, NE, LT, LE = (_VM[n] for n in (
    "LOADI64", "ISNAN", "WHERE", "EQ", "NE", "LT", "LE"))
#: csrc/om_vmath.h: trigonometry, rounding, log1p / expm1, float remainders, logical ops
(SIN, COS, TAN, ASIN, ACOS, ATAN, ATAN2, FLOOR, CEIL, RINT, LOG1P, EXPM1, FMOD, REMAINDER,
 FLOORDIV, AND, OR, NOT, ISFINITE) = (_VM[n] for n in (
     "SIN", "COS", "TAN", "ASIN", "ACOS", "ATAN", "ATAN2", "FLOOR", "CEIL", "RINT", "LOG1P",
     "EXPM1", "FMOD", "REMAINDER", "FLOORDIV", "AND", "OR", "NOT", "ISFINITE"))
#: ops whose result is a bool (0.0 / 1.0) whatever they read
BOOL_RESULT = frozenset({ISNAN, EQ, NE, LT, LE, AND, OR, NOT, ISFINITE})

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
        self.bools: set[int] = set()   # registers holding a bool (0.0 / 1.0)

    def reg(self) -> int:
        if self._free:
            r = self._free.pop()
            self.bools.discard(r)
            return r
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

    def load_bool(self, value: str) -> int:
        """`load` of a bool value (its register is known to hold 0.0 / 1.0)."""
        r = self.load(value)
        self.bools.add(r)
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
        boolean = (opc in BOOL_RESULT
                   or (opc in (MUL, MAX, MIN, WHERE, COPY) and a in self.bools
                       and (b is None or opc == COPY or b in self.bools)))
        self.code.append((opc, dst, a, 0 if b is None else b))
        self.temps.add(dst)
        if boolean:
            self.bools.add(dst)
        else:
            self.bools.discard(dst)
        return dst

    def release(self, regs) -> None:
        """Registers a composition read several times (pinned meanwhile) and is done with."""
        for r in regs:
            self.pinned.discard(r)
            if r in self.temps:
                self.temps.discard(r)
                self.bools.discard(r)
                self._free.append(r)

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
#: a comparison as (opcode, operands swapped)
_AST_CMP = {ast.Lt: (LT, False), ast.LtE: (LE, False), ast.Gt: (LT, True),
            ast.GtE: (LE, True), ast.Eq: (EQ, False), ast.NotEq: (NE, False)}
#: formula calls with one VM opcode, and their arity
_CALLS = {"np.exp": EXP, "np.log": LOG, "np.sqrt": SQRT, "np.tanh": TANH, "np.abs": ABS,
          "np.absolute": ABS, "np.fabs": ABS, "np.negative": NEG, "np.positive": COPY,
          "np.square": SQUARE, "np.reciprocal": RECIP, "special.erf": ERF,
          "np.sin": SIN, "np.cos": COS, "np.tan": TAN, "np.arcsin": ASIN, "np.arccos": ACOS,
          "np.arctan": ATAN, "np.floor": FLOOR, "np.ceil": CEIL, "np.rint": RINT,
          "np.log1p": LOG1P, "np.expm1": EXPM1, "np.logical_not": NOT, "np.isnan": ISNAN,
          "np.isfinite": ISFINITE,
          "np.maximum": MAX, "np.minimum": MIN, "np.add": ADD, "np.subtract": SUB,
          "np.multiply": MUL, "np.divide": DIV, "np.true_divide": DIV, "np.power": POW,
          "np.arctan2": ATAN2, "np.fmod": FMOD, "np.remainder": REMAINDER, "np.mod": REMAINDER,
          "np.floor_divide": FLOORDIV, "np.logical_and": AND, "np.logical_or": OR}
_BINARY_OPC = frozenset({MAX, MIN, ADD, SUB, MUL, DIV, POW, ATAN2, FMOD, REMAINDER, FLOORDIV,
                         AND, OR})
#: calls built from several VM ops (below), by arity
_COMPOSED = {"np.where": 3, "np.isinf": 1, "np.logaddexp": 2}
_LN2 = 0.6931471805599453


def native_calls() -> list[str]:
    """Every formula call the VM computes natively (docs/guide/plugins.md lists them)."""
    return sorted(set(_CALLS) | set(_COMPOSED))


def formula_code(vm: VMBuilder, tree: ast.expr, regs: Mapping[str, int]) -> int:
    """Translate a checked pointwise formula (`onemodel.registry.formula`): numbers, input
    names, ``+ - * / **``, unary minus, single comparisons, the calls in ``_CALLS`` and
    ``_COMPOSED``. Anything else raises `Unsupported` naming it (the node stays on numpy and
    the plan's source says why)."""
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
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, (ast.USub, ast.UAdd)):
        a = formula_code(vm, tree.operand, regs)
        return vm.op(NEG, a) if isinstance(tree.op, ast.USub) else a
    if isinstance(tree, ast.Compare) and len(tree.ops) == 1 and type(tree.ops[0]) in _AST_CMP:
        opc, swap = _AST_CMP[type(tree.ops[0])]
        a = formula_code(vm, tree.left, regs)
        b = formula_code(vm, tree.comparators[0], regs)
        return vm.op(opc, b, a) if swap else vm.op(opc, a, b)
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Attribute):
        name = f"{getattr(tree.func.value, 'id', '?')}.{tree.func.attr}"
        if name in _COMPOSED:
            if len(tree.args) != _COMPOSED[name]:
                raise Unsupported(f"formula call {name} with {len(tree.args)} arguments")
            rs = [formula_code(vm, a, regs) for a in tree.args]
            return _composed(vm, name, rs)
        opc = _CALLS.get(name)
        if opc is None:
            raise Unsupported(f"formula call {name} (no VM form)")
        arity = 2 if opc in _BINARY_OPC else 1
        if len(tree.args) != arity:
            raise Unsupported(f"formula call {name} with {len(tree.args)} arguments")
        rs = [formula_code(vm, a, regs) for a in tree.args]
        return vm.op(opc, *rs)
    raise Unsupported(f"formula element {ast.unparse(tree)!r}")


def _composed(vm: VMBuilder, name: str, rs: list[int]) -> int:
    if name == "np.where":  # WHERE overwrites its condition's register
        c, x, y = rs
        dst = c if vm._consume(c) else vm.op(COPY, c)
        return vm.op(WHERE, x, y, dst=dst)
    if name == "np.isinf":
        return vm.op(EQ, vm.op(ABS, rs[0]), vm.const(float("inf")))
    # np.logaddexp(a, b): max + log1p(exp(-|a - b|)); a == b (both infinite too): a + log 2
    a, b = rs
    held = [r for r in (a, b) if r not in vm.pinned]
    vm.pinned.update(held)
    try:
        same = vm.op(EQ, a, b)
        twice = vm.op(ADD, a, vm.const(_LN2))
        rest = vm.op(LOG1P, vm.op(EXP, vm.op(NEG, vm.op(ABS, vm.op(SUB, a, b)))))
        other = vm.op(ADD, vm.op(MAX, a, b), rest)
        return vm.op(WHERE, twice, other, dst=same)
    finally:
        vm.release(held)


__all__ = ["VMBuilder", "Unsupported", "op_code", "formula_code", "native_calls", "UNARY",
           "BINARY", "ADD"]
