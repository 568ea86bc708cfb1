"""Polynomial and interval helpers for symbolic sizes, on plain term dicts.

A term dict maps a monomial (a sorted tuple of atom keys, repeats allowed) to its coefficient.
These helpers know nothing of what an atom means: `symbolic` gives them the atoms' ranges.
"""
from __future__ import annotations

import math
from fractions import Fraction

INF = math.inf

#: the most steps one exact division may take (a hostile file cannot make it loop for long)
MAX_DIVISION_STEPS = 4096


def _order(m: tuple) -> tuple:
    return (len(m), m)  # graded order: a well-order, so the division below ends


def _mono_div(m: tuple, d: tuple) -> tuple | None:
    rest = list(m)
    for key in d:
        try:
            rest.remove(key)
        except ValueError:
            return None
    return tuple(rest)


def exact_quotient(num: dict, den: dict) -> dict | None:
    """The polynomial ``q`` (rational coefficients) with ``num == q * den``, or None when there
    is none. The quotient of an exact division is unique, and the division algorithm finds it
    under any monomial order, so None means "not a polynomial multiple"."""
    if not den:
        return None
    lead = max(den, key=_order)
    lead_c = den[lead]
    rem = {m: Fraction(c) for m, c in num.items() if c}
    q: dict = {}
    for _ in range(MAX_DIVISION_STEPS):
        if not rem:
            return q
        m = max(rem, key=_order)
        rest = _mono_div(m, lead)
        if rest is None:
            return None
        c = rem[m] / lead_c
        q[rest] = q.get(rest, 0) + c
        for dm, dc in den.items():
            mm = tuple(sorted(rest + dm))
            v = rem.get(mm, 0) - c * dc
            if v:
                rem[mm] = v
            else:
                rem.pop(mm, None)
    return None


def common_factor(polys: list[dict]) -> tuple:
    """The atoms every monomial of every polynomial holds (with multiplicity)."""
    common: list | None = None
    for p in polys:
        for m in p:
            if common is None:
                common = list(m)
                continue
            left, kept = list(m), []
            for key in common:
                if key in left:
                    left.remove(key)
                    kept.append(key)
            common = kept
            if not common:
                return ()
    return tuple(common or ())


def content(polys: list[dict]) -> int:
    """The gcd of every coefficient (0 for no terms)."""
    return math.gcd(*(c for p in polys for c in p.values()))


# -- intervals (lo, hi) with -inf / inf for unbounded ----------------------------------------------
def _mul(x, y):
    return 0 if x == 0 or y == 0 else x * y


def iv_mul(a: tuple, b: tuple) -> tuple:
    products = [_mul(x, y) for x in a for y in b]
    return min(products), max(products)


def iv_scale(a: tuple, c: int) -> tuple:
    return (_mul(a[0], c), _mul(a[1], c)) if c >= 0 else (_mul(a[1], c), _mul(a[0], c))


def _fdiv(x, y):
    """floor(x / y) for y >= 1 (y may be inf), x may be infinite."""
    if x in (INF, -INF):
        return x
    if y == INF:
        return 0 if x >= 0 else -1
    return x // y


def iv_floordiv(a: tuple, b: tuple) -> tuple:
    (la, ha), (lb, hb) = a, b
    if lb >= 1:
        lo = _fdiv(la, lb) if la < 0 else _fdiv(la, hb)
        hi = _fdiv(ha, lb) if ha >= 0 else _fdiv(ha, hb)
        return lo, hi
    if hb <= -1:  # floor(a/b) == floor(-a/-b)
        return iv_floordiv((-ha, -la), (-hb, -lb))
    return -INF, INF


def iv_mod(a: tuple, b: tuple) -> tuple:
    (la, ha), (lb, hb) = a, b
    if lb >= 1:
        hi = hb - 1
        if la >= 0:
            hi = min(hi, ha)
        return 0, hi
    if hb <= -1:
        lo = lb + 1
        if ha <= 0:
            lo = max(lo, la)
        return lo, 0
    return -INF, INF
