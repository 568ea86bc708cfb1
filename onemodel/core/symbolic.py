"""Symbolic sizes: integer polynomials over named axes, closed under ``+ - * // %``.

A `Dim` is kept in a canonical form (a sum of monomials with integer coefficients), so equal
expressions compare equal and ``(batch*6)//batch`` simplifies to ``6``. Floor division and modulo
that do not divide exactly become opaque atoms such as ``(seq//2)``, built from normalised
operands so that equal quotients are one atom: multiples of the divisor move out
(``(2*a + 3)//2`` is ``((a + 1)//2) + 1``), common factors cancel (``(f*1024 + 1024)//(f + 1)`` is
``1024``), nested quotients merge (``((a//2) + 1)//3`` is ``((a + 2)//6)``). Every atom has a range
(a symbolic axis runs from 1 to `MAX_SIZE`), so what the ranges decide is decided
(``min(n, 2**40)`` is ``n``, ``(n - 1)//2**41`` is ``0``), and an expression whose range is one
number is that number. Constant expressions collapse to plain ints, so shapes hold ints wherever
a size is fixed.
"""
from __future__ import annotations

import ast
import keyword
import math
import weakref
from typing import Any, Mapping, Union

from ..errors import OneModelError
from . import _sizepoly as poly

DimLike = Union[int, "Dim"]


class SymbolicError(OneModelError, ValueError):
    """A symbolic size expression is malformed or cannot be evaluated."""


#: the most monomials a product may have: real shapes have a handful, and expanding a product of
#: sums (``(a+b+c)*(a+b+c)*...`` from a hostile file) would otherwise grow without bound
MAX_TERMS = 4096

#: the largest size an axis may have (what the loaders accept); a symbolic axis runs from 1 to it
MAX_SIZE = 2 ** 40


def _short(d) -> str:
    text = str(d)
    return text if len(text) <= 60 else text[:57] + "..."


class _Atom:
    """A leaf of a monomial: a symbol name, or an opaque ``a//b`` / ``a%b``."""

    __slots__ = ("key", "op", "a", "b", "range", "__weakref__")
    a: Any  # the Dim operand; None only for a symbol (op None), which never reads it

    def __init__(self, key: str, op: str | None = None, a: "Dim | None" = None, b: DimLike = 0):
        self.key, self.op, self.a, self.b = key, op, a, b
        self.range = _atom_range(op, a, b)

    def __copy__(self):
        return self  # immutable, and interned by key

    def dim(self) -> "Dim":
        return Dim({(self.key,): 1})

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


def _atom_range(op, a, b) -> tuple:
    if op is None:
        return (1, MAX_SIZE)
    ra, rb = value_range(a), value_range(b)
    if op == "//":
        return poly.iv_floordiv(ra, rb)
    if op == "%":
        return poly.iv_mod(ra, rb)
    pick = min if op == "min" else max
    return pick(ra[0], rb[0]), pick(ra[1], rb[1])


def _opaque(op: str, a: "Dim", b: DimLike) -> DimLike:
    """The atom ``a op b`` for normalised operands, or the number its range pins it to."""
    lo, hi = _atom_range(op, a, b)
    if lo == hi:
        return int(lo)
    sym = "//" if op == "//" else "%"
    return _atom_dim(f"({_wrap(a)}{sym}{_wrap(b)})", op, a, b)


def value_range(value: DimLike) -> tuple:
    """``(lo, hi)`` that bound ``value`` at every size of its symbols (``-inf``/``inf`` where
    unbounded). Sound, not tight: interval arithmetic forgets that two terms share a symbol."""
    if not isinstance(value, Dim):
        return (int(value), int(value))
    if value._range is None:
        lo = hi = 0
        for m, c in value.terms:
            r: tuple = (1, 1)
            for key in m:
                r = poly.iv_mul(r, _ATOMS[key].range)
            tlo, thi = poly.iv_scale(r, c)
            lo, hi = lo + tlo, hi + thi
        value._range = (lo, hi)
    return value._range


class Dim:
    """A symbolic size. Build with ``Dim.symbol("batch")`` and arithmetic; never bool-able."""

    __slots__ = ("terms", "_hash", "_atoms", "_range")

    def __init__(self, terms: dict[tuple[str, ...], int]):
        self.terms = tuple(sorted((m, c) for m, c in terms.items() if c != 0))
        self._hash = hash(self.terms)
        self._range: tuple[int, int] | None = None
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

    def __floordiv__(self, other: DimLike) -> DimLike:
        if not isinstance(other, (int, Dim)):
            return NotImplemented
        return _floordiv(self, other)

    def __rfloordiv__(self, other: DimLike) -> DimLike:
        return _floordiv(other, self)

    def __mod__(self, other: DimLike) -> DimLike:
        if not isinstance(other, (int, Dim)):
            return NotImplemented
        return _mod(self, other)

    def __rmod__(self, other: DimLike) -> DimLike:
        return _mod(other, self)

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
    """Whether ``value >= 0`` for every size of its symbols, knowing that a symbolic axis runs
    from 1 to `MAX_SIZE` and the ranges of ``//``, ``%``, ``min`` and ``max`` that follow. A
    sufficient test (False means "not proven", not "negative")."""
    return _nonneg(value, 4)


def _nonneg(value: DimLike, depth: int) -> bool:
    if not isinstance(value, Dim):
        return int(value) >= 0
    if value_range(value)[0] >= 0:
        return True
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
    lo, hi = _atom_range(op, a, b)
    if lo == hi:
        return int(lo)
    sa, sb = str(a), str(b)
    if (not isinstance(a, Dim), sa) > (not isinstance(b, Dim), sb):  # one atom for min(a, b)
        a, b, sa, sb = b, a, sb, sa                                 # and min(b, a); ints last
    key = f"{op}({sa}, {sb})"
    first = Dim._of(a)
    return _atom_dim(key, op, first, b)


# -- floor division and modulo -----------------------------------------------------------------
def _terms(d: DimLike) -> dict:
    return dict(Dim._of(d).terms)


def _split(a: "Dim", k: int) -> tuple:
    """``a == k*q + r`` with every coefficient of ``r`` in ``[0, k)`` (``k > 0``)."""
    q, r = {}, {}
    for m, c in a.terms:
        q[m], r[m] = divmod(c, k)
    return Dim(q)._norm(), Dim(r)._norm()


def _check_divisor(a, b, what: str) -> None:
    if not isinstance(b, Dim) and int(b) == 0:
        raise SymbolicError(f"{what} of {a} by zero")


def _floordiv(a: DimLike, b: DimLike) -> DimLike:
    _check_divisor(a, b, "division")
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return int(a) // int(b)
    if not isinstance(b, Dim):
        return _div_int(Dim._of(a), int(b))
    a, b = _cancel(a, b)
    if not isinstance(b, Dim):
        return _floordiv(a, b)
    q = poly.exact_quotient(_terms(a), dict(b.terms))
    if q is not None:  # a/b is the polynomial q: floor(a/b) is floor(q*L)/L
        den = math.lcm(*(c.denominator for c in q.values())) if q else 1
        return _floordiv(Dim({m: int(c * den) for m, c in q.items()})._norm(), den)
    if provably_nonneg(a) and provably_nonneg(b - a - 1):
        return 0  # 0 <= a < b
    merged = _merge_nested(a, b)
    if merged is not None:
        return merged
    return _opaque("//", Dim._of(a), b)


def _div_int(a: "Dim", k: int) -> DimLike:
    if k < 0:  # floor(a/k) == floor(-a/-k)
        a, k = Dim._of(-a), -k
    q, r = _split(a, k)
    if isinstance(r, Dim):
        g = math.gcd(k, *(c for _, c in r.terms))  # floor(g*r/(g*k)) == floor(r/k)
        r, k = Dim({m: c // g for m, c in r.terms})._norm(), k // g
    if k == 1:
        return q + r
    if not isinstance(r, Dim):
        return q + r // k
    merged = _merge_nested(r, k)
    if merged is not None:
        return q + merged
    return q + _opaque("//", r, k)


def _merge_nested(a: DimLike, b: DimLike) -> DimLike | None:
    """``((u//v) + s)//b`` as ``(u + s*v)//(v*b)``: floor(floor(x)/b) == floor(x/b) for an
    integer ``b >= 1``, and ``(u//v) + s == (u + s*v)//v`` for an integer ``s``. None when ``a``
    has no such quotient (the first one, with coefficient 1, is taken) or ``b`` may be < 1."""
    if not isinstance(a, Dim) or isinstance(b, Dim) and not provably_nonneg(b - 1):
        return None
    for m, c in a.terms:
        if c == 1 and len(m) == 1 and _ATOMS[m[0]].op == "//":
            atom = _ATOMS[m[0]]
            rest = a - Dim({m: 1})
            return _floordiv(atom.a + rest * atom.b, atom.b * b)
    return None


def _cancel(a: DimLike, b: "Dim") -> tuple:
    """``a`` and ``b`` over their common integer and monomial factors, with ``b``'s first
    coefficient positive: floor and modulo keep their value up to that factor (see callers)."""
    ta, tb = _terms(a), dict(b.terms)
    sign = -1 if b.terms[0][1] < 0 else 1
    g = poly.content([ta, tb]) * sign
    common = poly.common_factor([ta, tb]) if ta and () not in ta else ()

    def reduce(t: dict) -> DimLike:
        out = {}
        for m, c in t.items():
            rest = list(m)
            for key in common:
                rest.remove(key)
            out[tuple(rest)] = c // g
        return Dim(out)._norm()

    if g == 1 and not common:
        return a, b
    return reduce(ta), reduce(tb)


def _common(a: DimLike, b: "Dim") -> DimLike:
    """The factor `_cancel` takes out of ``a`` and ``b`` (``a % b == f * (a/f % b/f)``)."""
    ta, tb = _terms(a), dict(b.terms)
    sign = -1 if b.terms[0][1] < 0 else 1
    f: DimLike = poly.content([ta, tb]) * sign
    for key in (poly.common_factor([ta, tb]) if ta and () not in ta else ()):
        f = f * _ATOMS[key].dim()
    return f


def _mod(a: DimLike, b: DimLike) -> DimLike:
    _check_divisor(a, b, "modulo")
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return int(a) % int(b)
    if not isinstance(b, Dim):
        return _mod_int(Dim._of(a), int(b))
    f = _common(a, b)
    a, b = _cancel(a, b)  # (f*a) % (f*b) == f*(a % b)
    if not isinstance(b, Dim):
        return f * _mod(a, b)
    q = poly.exact_quotient(_terms(a), dict(b.terms))
    if q is not None and all(c.denominator == 1 for c in q.values()):
        return 0
    if provably_nonneg(a) and provably_nonneg(b - a - 1):
        return f * a  # 0 <= a < b
    return f * _opaque("%", Dim._of(a), b)


def _mod_int(a: "Dim", k: int) -> DimLike:
    if k < 0:  # a % k == -((-a) % -k)
        return -_mod_int(Dim._of(-a), -k)
    _, r = _split(a, k)  # (k*q + r) % k == r % k
    if not isinstance(r, Dim):
        return r % k
    g = math.gcd(k, *(c for _, c in r.terms))  # (g*r) % (g*k) == g*(r % k)
    r, k = Dim({m: c // g for m, c in r.terms})._norm(), k // g
    if not isinstance(r, Dim):
        return g * (r % k)
    lo, hi = value_range(r)
    if poly.INF not in (-lo, hi) and lo // k == hi // k:  # r//k is one number: r % k is exact
        return g * (r - k * int(lo // k))
    return g * _opaque("%", r, k)


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
