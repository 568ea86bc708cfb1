"""``backend="auto"``: which installed backend a session gets when the user names none.

Each backend's record says whether auto may pick it (``BackendDef.auto_rank``, highest first;
None: only when named) and, optionally, whether it can run a given graph
(``BackendDef.supports(graph)``: None, or a sentence saying why not). The choice is made once,
when the session is created; the session keeps it (``session.backend`` is the chosen name,
``session.backend_choice`` says what was passed over and why).
"""
from __future__ import annotations

from typing import Any, Mapping

import attrs

from ..errors import OneModelError

AUTO = "auto"


@attrs.frozen
class BackendChoice:
    """The outcome of ``backend="auto"``: the chosen backend and the ones passed over."""

    chosen: str
    passed_over: tuple[tuple[str, str], ...] = ()  # (backend name, why it was passed over)

    def __str__(self) -> str:
        if not self.passed_over:
            return f"{self.chosen} (auto)"
        skipped = "; ".join(f"{name}: {why}" for name, why in self.passed_over)
        return f"{self.chosen} (auto; passed over {skipped})"


def ranked(table: Mapping[str, Any]) -> list:
    """The backends auto may choose, in the order it tries them."""
    return sorted((b for b in table.values() if b.auto_rank is not None),
                  key=lambda b: (-b.auto_rank, b.name))


def choose_backend(graph: Any, table: Mapping[str, Any]) -> BackendChoice:
    """The highest-ranked installed backend whose ``supports`` accepts ``graph``."""
    passed: list[tuple[str, str]] = []
    for bdef in ranked(table):
        reason = None
        if bdef.supports is not None:
            try:
                reason = bdef.supports(graph)
            except Exception as exc:  # noqa: BLE001 - a broken plugin is passed over, named
                reason = f"its supports() raised {type(exc).__name__}: {exc}"
        if reason is None:
            return BackendChoice(bdef.name, tuple(passed))
        passed.append((bdef.name, str(reason)))
    why = "; ".join(f"{n}: {r}" for n, r in passed) or "none is installed that auto may choose"
    raise OneModelError(f"backend 'auto' found no backend for this graph ({why}); installed "
                        f"backends: {', '.join(sorted(table)) or 'none'}")
