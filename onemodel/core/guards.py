"""Guards: conditions on symbolic sizes under which a recorded graph is valid.

Most sizes stay exact at every size of an axis (``x[:, -4:]`` has length ``min(seq, 4)``). A few
cannot without making every later shape unusable: ``pos[:seq]`` on a table of 64 rows has length
``seq`` only while ``seq <= 64``. Inference states such an assumption with `require`; the tracer
collects it (naming the user's line), the graph keeps it, and every session checks it before it
runs, so a size outside the recorded range is a `SessionError` naming the axis and the bound,
never a wrong number.
"""
from __future__ import annotations

import threading
from typing import Mapping

import attrs

from ..errors import SessionError
from .symbolic import Dim, DimLike, SymbolicError, evaluate, provably_nonneg

_sink = threading.local()


@attrs.frozen
class Guard:
    """``left <= right`` must hold at run time. ``reason`` says why (for the error message);
    ``source`` is the user's line that recorded it."""

    left: DimLike
    right: DimLike
    reason: str = ""
    source: str | None = None

    @property
    def text(self) -> str:
        return f"{self.left} <= {self.right}"

    def holds(self, env: Mapping[str, int]) -> bool:
        return evaluate(self.left, env) <= evaluate(self.right, env)

    def symbols(self) -> list[str]:
        out: set[str] = set()
        for side in (self.left, self.right):
            if isinstance(side, Dim):
                out |= side.symbols()
        return sorted(out)

    def to_json(self) -> dict:
        return {"left": str(self.left), "right": str(self.right), "reason": self.reason,
                "source": self.source}

    @staticmethod
    def from_json(obj: Mapping) -> "Guard":
        left, right = (Dim.parse(str(obj[k])) for k in ("left", "right"))
        source = obj.get("source")
        return Guard(left, right, str(obj.get("reason", "")),
                     None if source is None else str(source))


def require(left: DimLike, right: DimLike, reason: str) -> None:
    """Inference's way to say "this result holds only while ``left <= right``". Nothing is
    recorded when it is provable (symbolic axes are at least 1); otherwise the active collector
    (a trace or an ONNX import, see `start`) keeps it. Outside a collector it is a no-op: a graph
    carries its own guards."""
    if provably_nonneg(right - left):
        return
    bucket = getattr(_sink, "guards", None)
    if bucket is not None:
        bucket.append(Guard(left, right, reason))


def start(bucket: list):
    """Collect into ``bucket`` the guards inference states from now until `stop`, which gets
    the value this returns (the collector before: collections nest). No context manager, as
    the tracer does this on every op."""
    previous = getattr(_sink, "guards", None)
    _sink.guards = bucket
    return previous


def stop(previous) -> None:
    _sink.guards = previous


def check(guards, env: Mapping[str, int], where: Mapping[str, tuple[str, int]] | None = None
          ) -> None:
    """Raise `SessionError` for the first guard that does not hold at these sizes. ``where``
    maps an axis name to the (input, axis) that binds it, for the message, which also says the
    nearest size the guard allows (``must be at least 7``)."""
    for g in guards:
        try:
            ok = g.holds(env)
        except SymbolicError:
            continue  # an axis this run does not bind; the feeds check reports that
        if not ok:
            sizes = ", ".join(f"{s} = {env[s]}" for s in g.symbols() if s in env)
            why = f" ({g.reason})" if g.reason else ""
            at = f", recorded at {g.source}" if g.source else ""
            raise SessionError(f"axis sizes {sizes} are outside what this graph allows: "
                               f"it needs {g.text}{why}{at}{_allowed(g, env, where or {})}")


#: how far `_nearest` looks for a size a guard allows (sizes beyond are never fed)
_SEARCH_LIMIT = 1 << 40


def _allowed(g: Guard, env: Mapping[str, int], where) -> str:
    """``; input 'x' axis 2 (seq) must be at least 7`` for each axis of the guard."""
    notes = []
    for name in g.symbols():
        if name not in env:
            continue
        found = _nearest(g, env, name)
        if found is None:
            continue
        word, size = found
        inp = where.get(name)
        axis = f"input {inp[0]!r} axis {inp[1]} ({name})" if inp else f"axis {name}"
        notes.append(f"{axis} must be {word} {size}")
    return "; " + "; ".join(notes) if notes else ""


def _nearest(g: Guard, env: Mapping[str, int], name: str) -> tuple[str, int] | None:
    """The size of axis ``name`` nearest to its size in ``env`` at which ``g`` holds (the other
    axes as they are): ``("at least", n)`` above it, else ``("at most", n)`` below it; None when
    neither is found. A guard is monotone in practice (a window must fit, a slice must end
    within a table), so doubling, then bisecting, finds the boundary."""
    def holds(n: int) -> bool:
        try:
            return g.holds({**env, name: n})
        except (SymbolicError, ArithmeticError):
            return False

    now = env[name]
    step = 1
    while now + step < _SEARCH_LIMIT and not holds(now + step):
        step *= 2
    if now + step < _SEARCH_LIMIT:
        bad, good = now + step // 2 if step > 1 else now, now + step
        while good - bad > 1:
            mid = (bad + good) // 2
            bad, good = (bad, mid) if holds(mid) else (mid, good)
        return "at least", good
    step = 1
    while now - step >= 1 and not holds(now - step):
        step *= 2
    good, bad = now - step, now - step // 2 if step > 1 else now
    if good < 1:
        if now <= 1 or not holds(1):
            return None
        good = 1
    while bad - good > 1:
        mid = (bad + good) // 2
        good, bad = (mid, bad) if holds(mid) else (good, mid)
    return "at most", good


def merge(existing, new) -> tuple:
    """``existing`` plus the guards of ``new`` whose condition is not already there."""
    seen = {(str(g.left), str(g.right)) for g in existing}
    out = list(existing)
    for g in new:
        key = (str(g.left), str(g.right))
        if key not in seen:
            seen.add(key)
            out.append(g)
    return tuple(out)
