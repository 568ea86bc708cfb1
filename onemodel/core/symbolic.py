"""Symbolic sizes: integer polynomials over named axes, closed under ``+ - * // %``.

A `Dim` is kept in a canonical form (a sum of monomials with integer coefficients), so equal
expressions compare equal and ``(batch*6)//batch`` simplifies to ``6``. Floor division and modulo
that do not divide exactly become opaque atoms such as ``(seq//2)``. Constant expressions collapse
to plain ints, so shapes hold ints wherever a size is fixed.
"""
from __future__ import annotations

import ast
import keyword
import weakref
from typing import Mapping, Union

from ..errors import OneModelError

DimLike = Union[int, "Dim"]


class SymbolicError(OneModelError, ValueError):
    """A symbolic size expression is malformed or cannot be evaluated."""


#: the most monomials a product may have: real shapes have a handful, and expanding a product of
#: sums (``(a+b+c)*(a+b+c)*...`` from a hostile file) would otherwise grow without bound
MAX_TERMS = 4096


def _short(d) -> str:
    text = str(d)
    return text if len(text) <= 60 else text[:57] + "..."


class _Atom:
    """A leaf of a monomial: a symbol name, or an opaque ``a//b`` / ``a%b``."""

    __slots__ = ("key", "op", "a", "b", "__weakref__")

    def __init__(self, key: str, op: str | None = None, a: "Dim | None" = None, b: DimLike = 0):
        self.key, self.op, self.a, self.b = key, op, a, b

    def __copy__(self):
        return self  # immutable, and interned by key

    def __deepcopy__(self, memo):
        return self

    def evaluate(self, env: Mapping[str, int]) -> int:
        if self.op is None:
            try:
                return int(env[self.key])
            except KeyError:
                raise SymbolicError(f"symbolic size {self.key!r} is not bound") from None
        a = self.a.evaluate(env)
        b = evaluate(self.b, env)
        if self.op == "min":
            return min(a, b)
        if self.op == "max":
            return max(a, b)
        if b == 0:
            raise SymbolicError(f"division by zero evaluating {self.key}")
        return a // b if self.op == "//" else a % b


#: the interned atoms by key. Weak: an atom lives as long as a Dim (or another atom) uses it, so
#: sizes parsed from refused files, or from models no longer referenced, leave nothing behind
_ATOMS: "weakref.WeakValueDictionary[str, _Atom]" = weakref.WeakValueDictionary()


def _atom_dim(key: str, op: str | None = None, a=None, b=0) -> "Dim":
    """The Dim of one atom, interning the atom (the Dim keeps it alive)."""
    atom = _ATOMS.get(key)
    if atom is None:
        atom = _ATOMS[key] = _Atom(key, op, a, b)
    return Dim({(atom.key,): 1})  # ``atom`` is alive here, so Dim() finds it


class Dim:
    """A symbolic size. Build with ``Dim.symbol("batch")`` and arithmetic; never bool-able."""

    __slots__ = ("terms", "_hash", "_atoms")

    def __init__(self, terms: dict[tuple[str, ...], int]):
        self.terms = tuple(sorted((m, c) for m, c in terms.items() if c != 0))
        self._hash = hash(self.terms)
        # strong references to the atoms named in ``terms`` (the table only holds weak ones);
        # they are alive now: every key comes from an operand or from `_atom_dim`
        self._atoms = tuple(_ATOMS[k] for k in {k for m, _ in self.terms for k in m})

    def __copy__(self):
        return self  # immutable

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (_parse_dim, (str(self),))

    # -- construction ----------------------------------------------------------------------
    @staticmethod
    def symbol(name: str) -> "Dim":
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise SymbolicError(f"a symbolic axis name must be an identifier (not a Python "
                                f"keyword, so the printed size parses back), got {name!r:.80}")
        return _atom_dim(name)

    @staticmethod
    def parse(text: str) -> DimLike:
        """Parse the printed form back (used by loaders). Only integer arithmetic on names."""
        try:
            tree = ast.parse(text.strip(), mode="eval").body
            return _from_ast(tree, text)
        except (SyntaxError, ValueError) as exc:  # ValueError: null bytes on older Pythons
            if isinstance(exc, SymbolicError):
                raise
            raise SymbolicError(f"malformed symbolic size {text!r:.200}") from None
        except (RecursionError, MemoryError):
            raise SymbolicError(f"symbolic size {text[:80]!r}... is nested too deeply") from None

    @staticmethod
    def _of(value: DimLike) -> "Dim":
        if isinstance(value, Dim):
            return value
        return Dim({(): int(value)})

    def _norm(self) -> DimLike:
        if not self.terms:
            return 0
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return self

    # -- arithmetic ------------------------------------------------------------------------
    def __add__(self, other: DimLike) -> DimLike:
        if not isinstance(other, (int, Dim)):
            return NotImplemented
        out = dict(self.terms)
        for m, c in Dim._of(other).terms:
            out[m] = out.get(m, 0) + c
        return Dim(out)._norm()

    __radd__ = __add__

    def __neg__(self) -> DimLike:
        return Dim({m: -c for m, c in self.terms})._norm()

    def __sub__(self, other: DimLike) -> DimLike:
        if not isinstance(other, (int, Dim)):
            return NotImplemented
        return self + (-Dim._of(other))

    def __rsub__(self, other: DimLike) -> DimLike:
        return Dim._of(other) - self

    def __mul__(self, other: DimLike) -> DimLike:
        if not isinstance(other, (int, Dim)):
            return NotImplemented
        o = Dim._of(other)
        if len(self.terms) * len(o.terms) > MAX_TERMS:
            raise SymbolicError(f"symbolic size ({_short(self)})*({_short(o)}) is too complex "
                                f"(more than {MAX_TERMS} terms)")
        out: dict[tuple[str, ...], int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in o.terms:
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return Dim(out)._norm()

    __rmul__ = __mul__

    def _exact_div(self, other: "Dim") -> "Dim | None":
        if len(other.terms) != 1:
            return Dim({(): 1}) if other.terms == self.terms else None
        (dm, dc), = other.terms
        out = {}
        for m, c in self.terms:
            rest = list(m)
            for a in dm:
                if a not in rest:
                    return None
                rest.remove(a)
            if c % dc:
                return None
            out[tuple(rest)] = c // dc
        return Dim(out)

    def __floordiv__(self, other: DimLike) -> DimLike:
        if not isinstance(other, (int, Dim)):
            return NotImplemented
        o = Dim._of(other)
        if o._norm() == 0:
            raise SymbolicError(f"division of {self} by zero")
        q = self._exact_div(o)
        if q is not None:
            return q._norm()
        key = f"({_wrap(self)}//{_wrap(o._norm())})"
        return _atom_dim(key, "//", self, o._norm())

    def __rfloordiv__(self, other: DimLike) -> DimLike:
        return Dim._of(other) // self

    def __mod__(self, other: DimLike) -> DimLike:
        if not isinstance(other, (int, Dim)):
            return NotImplemented
        o = Dim._of(other)
        if o._norm() == 0:
            raise SymbolicError(f"modulo of {self} by zero")
        if self._exact_div(o) is not None:
            return 0
        key = f"({_wrap(self)}%{_wrap(o._norm())})"
        return _atom_dim(key, "%", self, o._norm())

    def __rmod__(self, other: DimLike) -> DimLike:
        return Dim._of(other) % self

    # -- min and max (exact slice lengths on symbolic axes) -----------------------------------
    @staticmethod
    def min(a: DimLike, b: DimLike) -> DimLike:
        """The smaller of two sizes: an int when both are ints or their order is provable
        (symbolic axes are at least 1), else an opaque ``min(a, b)``."""
        return _extremum("min", a, b)

    @staticmethod
    def max(a: DimLike, b: DimLike) -> DimLike:
        """The larger of two sizes (see `Dim.min`)."""
        return _extremum("max", a, b)

    # -- inspection ------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Dim):
            return self.terms == other.terms
        return False  # a Dim is never a constant (constants collapse to int)

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        raise SymbolicError(f"the truth value of symbolic size {self} is unknown")

    def symbols(self) -> set[str]:
        out: set[str] = set()
        for m, _ in self.terms:
            for key in m:
                atom = _ATOMS[key]
                if atom.op is None:
                    out.add(key)
                else:
                    out |= symbols(atom.a) | symbols(atom.b)
        return out

    def evaluate(self, env: Mapping[str, int]) -> int:
        total = 0
        for m, c in self.terms:
            v = c
            for key in m:
                v *= _ATOMS[key].evaluate(env)
            total += v
        return total

    def __str__(self) -> str:
        parts = []
        for m, c in sorted(self.terms, key=lambda t: (t[0] == (), t[0])):
            if m == ():
                parts.append(("-" if c < 0 else "+", str(abs(c))))
                continue
            body = "*".join(m)
            if abs(c) != 1:
                body = f"{body}*{abs(c)}"
            parts.append(("-" if c < 0 else "+", body))
        text = ("-" if parts[0][0] == "-" else "") + parts[0][1]
        for sign, body in parts[1:]:
            text += f" {sign} {body}"
        return text

    def __repr__(self) -> str:
        return f"Dim({str(self)!r})"


def provably_nonneg(value: DimLike) -> bool:
    """Whether ``value >= 0`` for every size of its symbols, knowing only that a symbolic axis
    is at least 1 and that ``//``, ``%``, ``min`` and ``max`` of sizes are at least 0. A
    sufficient test (False means "not proven", not "negative")."""
    return _nonneg(value, 4)


def _nonneg(value: DimLike, depth: int) -> bool:
    if not isinstance(value, Dim):
        return int(value) >= 0
    low, ok = 0, True
    for m, c in value.terms:
        if m == ():
            low += c
        elif c < 0:
            ok = False
        elif all(_ATOMS[k].op is None for k in m):
            low += c  # a product of axes is at least 1
    if ok:
        return low >= 0
    if depth == 0:
        return False
    # one negative term bounded from above: b*(a//b) <= a, min(a, b) <= a (and <= b)
    for m, c in value.terms:
        if c >= 0 or len(m) != 1 or _ATOMS[m[0]].op is None:
            continue
        atom = _ATOMS[m[0]]
        rest = value - Dim({m: c})
        if atom.op == "//" and not isinstance(atom.b, Dim) and atom.b >= 1:
            return _nonneg(rest * atom.b + atom.a * c, depth - 1)
        if atom.op == "min":
            return _nonneg(rest + atom.a * c, depth - 1) or _nonneg(rest + atom.b * c, depth - 1)
    return False


def _extremum(op: str, a: DimLike, b: DimLike) -> DimLike:
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return min(int(a), int(b)) if op == "min" else max(int(a), int(b))
    if provably_nonneg(a - b):  # a >= b
        return b if op == "min" else a
    if provably_nonneg(b - a):
        return a if op == "min" else b
    sa, sb = str(a), str(b)
    if (not isinstance(a, Dim), sa) > (not isinstance(b, Dim), sb):  # one atom for min(a, b)
        a, b, sa, sb = b, a, sb, sa                                 # and min(b, a); ints last
    key = f"{op}({sa}, {sb})"
    first = Dim._of(a)
    return _atom_dim(key, op, first, b)


def _wrap(v: DimLike) -> str:
    s = str(v)
    return s if s.replace("_", "a").isalnum() or _enclosed(s) else f"({s})"


def _enclosed(s: str) -> bool:
    """Whether ``s`` is one parenthesised whole: ``(a//2)`` is, ``(a//2) - 2`` is not (it only
    starts with a parenthesis, and would print ``(a//2) - 2//2`` for ``((a//2) - 2)//2``)."""
    if not s.startswith("("):
        return False
    depth = 0
    for i, ch in enumerate(s):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return i == len(s) - 1
    return False


def _from_ast(node, text: str) -> DimLike:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        return Dim.symbol(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_from_ast(node.operand, text)
    if isinstance(node, ast.BinOp):
        a, b = _from_ast(node.left, text), _from_ast(node.right, text)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and not isinstance(b, Dim) and b == 0:
            raise SymbolicError(f"symbolic size {text!r:.200} divides by zero")
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.FloorDiv: lambda: a // b if isinstance(a, Dim) or isinstance(b, Dim) else a // b,
               ast.Mod: lambda: a % b}
        fn = ops.get(type(node.op))
        if fn is not None:
            return fn()
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max") and len(node.args) == 2 and not node.keywords):
        a, b = (_from_ast(arg, text) for arg in node.args)
        return Dim.min(a, b) if node.func.id == "min" else Dim.max(a, b)
    raise SymbolicError(f"malformed symbolic size {text!r}: only integers, names, + - * // % "
                        f"and min(a, b) / max(a, b) are allowed")


def _parse_dim(text: str) -> DimLike:
    return Dim.parse(text)


def is_symbolic(value: object) -> bool:
    return isinstance(value, Dim)


def symbols(value: object) -> set[str]:
    return value.symbols() if isinstance(value, Dim) else set()


def evaluate(value: DimLike, env: Mapping[str, int]) -> int:
    """An int from an int or a Dim, with symbols bound in ``env``."""
    return value.evaluate(env) if isinstance(value, Dim) else int(value)


def evaluate_nested(value, env: Mapping[str, int]):
    """Evaluate every Dim inside nested tuples/lists/dicts (op params)."""
    if isinstance(value, Dim):
        return value.evaluate(env)
    if isinstance(value, tuple):
        return tuple(evaluate_nested(v, env) for v in value)
    if isinstance(value, list):
        return [evaluate_nested(v, env) for v in value]
    if isinstance(value, dict):
        return {k: evaluate_nested(v, env) for k, v in value.items()}
    return value


def contains_symbolic(value) -> bool:
    if isinstance(value, Dim):
        return True
    if isinstance(value, (tuple, list)):
        return any(contains_symbolic(v) for v in value)
    if isinstance(value, dict):
        return any(contains_symbolic(v) for v in value.values())
    return False


def format_shape(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"
