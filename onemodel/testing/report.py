"""What a check found: passed, skipped with a reason, or an `OpCheckError` naming the op, the
sample and the check, so an author sees which of the record's promises does not hold."""
from __future__ import annotations

import attrs

from ..errors import OneModelError


class OpCheckError(OneModelError, AssertionError):
    """A check of an op or a backend failed (an AssertionError, so test runners show it as a
    failure, not an error). ``failures`` holds one line per failed check."""

    def __init__(self, message: str, failures: tuple[str, ...] = ()):
        super().__init__(message)
        self.failures = failures or (message,)


@attrs.frozen
class Check:
    """One check of one sample: ``skipped`` is None when it ran and passed, else why it could
    not run (no gradient rule, untraceable with these params, no ONNX mapping, ...)."""

    check: str
    subject: str  # "op[sample]" or "backend model"
    skipped: str | None = None

    @property
    def passed(self) -> bool:
        return self.skipped is None

    def __str__(self) -> str:
        return f"{self.check} {self.subject}: " + ("passed" if self.passed else
                                                   f"skipped ({self.skipped})")


@attrs.frozen
class CheckReport:
    """Everything `check_op` / `check_backend` ran: ``passed`` and ``skipped`` checks."""

    checks: tuple[Check, ...]

    @property
    def passed(self) -> list[Check]:
        return [c for c in self.checks if c.passed]

    @property
    def skipped(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def __str__(self) -> str:
        return (f"{len(self.passed)} checks passed, {len(self.skipped)} skipped"
                + "".join(f"\n  {c}" for c in self.skipped))


def fail(check: str, subject: str, why: str):
    raise OpCheckError(f"{check} {subject}: {why}")
