"""`SymInt`: the size a traced tensor reports for a symbolic axis.

It carries the symbolic expression (recorded into the graph) and the example's value (used to run
the eager kernels while tracing). Arithmetic stays symbolic; anything that would turn it into a
plain Python int or bool is refused, because the graph would silently keep the example's value.
"""
from __future__ import annotations

from ..errors import TraceException
from . import tracing_hooks
from .symbolic import Dim, DimLike


class SymInt:
    __slots__ = ("expr", "hint")

    def __init__(self, expr: DimLike, hint: int):
        self.expr = expr
        self.hint = int(hint)

    @staticmethod
    def wrap(expr: DimLike, hint: int):
        return SymInt(expr, hint) if isinstance(expr, Dim) else int(expr)

    def _refuse(self, what: str, hint: str = ""):
        axes = ", ".join(sorted(self.expr.symbols())) if isinstance(self.expr, Dim) else "?"
        where = tracing_hooks.user_frame()
        hint = hint or ("pass sizes to ops as they are (reshape, expand, slicing, arithmetic "
                        "with tensors), or mark the axis as fixed when tracing")
        tracer = tracing_hooks.current()
        message = (f"{what} on the symbolic size {self.expr} (axis {axes}) would freeze the "
                   f"example's size {self.hint} into the graph; {hint}."
                   + (f"\n  at {where}" if where else ""))
        if tracer is not None and hasattr(tracer, "refuse_message"):
            tracer.refuse_message(message)  # aborts the trace, so the thread is left as it was
        raise TraceException(message)

    # arithmetic -------------------------------------------------------------------------------
    def _bin(self, other, fn):
        if isinstance(other, SymInt):
            return SymInt.wrap(fn(self.expr, other.expr), fn(self.hint, other.hint))
        if isinstance(other, int) and not isinstance(other, bool):
            return SymInt.wrap(fn(self.expr, other), fn(self.hint, other))
        return NotImplemented

    def __add__(self, o): return self._bin(o, lambda a, b: a + b)
    def __radd__(self, o): return self._bin(o, lambda a, b: b + a)
    def __sub__(self, o): return self._bin(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._bin(o, lambda a, b: b - a)
    def __mul__(self, o): return self._bin(o, lambda a, b: a * b)
    def __rmul__(self, o): return self._bin(o, lambda a, b: b * a)
    def __floordiv__(self, o): return self._bin(o, lambda a, b: a // b)
    def __rfloordiv__(self, o): return self._bin(o, lambda a, b: b // a)
    def __mod__(self, o): return self._bin(o, lambda a, b: a % b)
    def __rmod__(self, o): return self._bin(o, lambda a, b: b % a)

    def __neg__(self):
        return SymInt.wrap(-self.expr, -self.hint)

    # conversions that would freeze the size -----------------------------------------------------
    def __index__(self): self._refuse("using it as a Python int (range(), a list index, numpy)")
    def __int__(self): self._refuse("int()")
    def __float__(self): self._refuse("float()")
    def __bool__(self): self._refuse("bool() / if")
    def __lt__(self, o): self._refuse("comparing (<)")
    def __le__(self, o): self._refuse("comparing (<=)")
    def __gt__(self, o): self._refuse("comparing (>)")
    def __ge__(self, o): self._refuse("comparing (>=)")
    def __eq__(self, o): self._refuse("comparing (==)")
    def __ne__(self, o): self._refuse("comparing (!=)")
    def __truediv__(self, o): self._refuse("true division (/)")
    __rtruediv__ = __truediv__
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"SymInt({self.expr}, example={self.hint})"

    __str__ = __repr__


def hint_of(value):
    """Replace SymInts by their example values inside nested params (for eager kernels)."""
    if isinstance(value, SymInt):
        return value.hint
    if isinstance(value, tuple):
        return tuple(hint_of(v) for v in value)
    if isinstance(value, list):
        return [hint_of(v) for v in value]
    if isinstance(value, slice):
        return slice(hint_of(value.start), hint_of(value.stop), hint_of(value.step))
    if isinstance(value, dict):
        return {k: hint_of(v) for k, v in value.items()}
    return value


def has_symint(value) -> bool:
    if isinstance(value, SymInt):
        return True
    if isinstance(value, (tuple, list)):
        return any(has_symint(v) for v in value)
    if isinstance(value, dict):
        return any(has_symint(v) for v in value.values())
    return False
