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
    (a trace or an ONNX import, see `start`) keeps it. Outside a collector it is a no-op: a graph carries its own guards."""
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


def check(guards, env: Mapping[str, int]) -> None:
    """Raise `SessionError` for the first guard that does not hold at these sizes."""
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
                               f"it needs {g.text}{why}{at}")


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
