"""`check_op`: every check of `op_checks` on every sample of one op record, one report."""
from __future__ import annotations

import contextlib
from typing import Callable, Iterable

import attrs
import numpy as np

from ..errors import ArgumentError
from ..registry import get_op, hookimpl
from ..registry.manager import REGISTRY
from ..registry.records import OpDef
from . import op_checks
from .report import Check, CheckReport, OpCheckError


@contextlib.contextmanager
def registered_op(record_or_name):
    """The installed record for a name, or ``record`` itself, registered for the duration when
    it is not installed yet (an author's test can check a record before packaging it)."""
    if isinstance(record_or_name, str):
        yield get_op(record_or_name)
        return
    if not isinstance(record_or_name, OpDef):
        raise ArgumentError(f"check_op: expected an OpDef or an op name, got "
                            f"{type(record_or_name).__name__}")
    rec = record_or_name
    current = REGISTRY.tables().ops.get(rec.name)
    if current is not None and (current is rec or attrs.evolve(rec, provider=current.provider)
                                == current):
        yield current
        return
    if current is not None and not rec.override:
        raise ArgumentError(f"check_op: another record named {rec.name!r} is installed (from "
                            f"{current.provider}); check that one by name, or give this one "
                            f"override=True")

    class _Plugin:
        @hookimpl
        def onemodel_ops(self):
            return [rec]

    name = REGISTRY.register(_Plugin(), f"onemodel.testing:{rec.name}")
    try:
        yield get_op(rec.name)
    finally:
        REGISTRY.unregister(name)


def check_op(record_or_name, *, reference: Callable | None = None,
             checks: Iterable[str] = op_checks.CHECKS, backends: Iterable[str] | None = None,
             seed: int = 0) -> CheckReport:
    """Check one op on every one of its samples (``samples(np.random.default_rng(seed))``).

    ``reference(*arrays, **params)`` is an independent numpy formula for the kernel (the check is
    skipped without one); ``checks`` picks among ``op_checks.CHECKS``; ``backends`` limits the
    session check (default: every installed backend). Raises `OpCheckError` listing every failed
    check; returns a `CheckReport` of what passed and what was skipped, and why."""
    checks = tuple(checks)
    unknown = sorted(set(checks) - set(op_checks.CHECKS))
    if unknown:
        raise ArgumentError(f"check_op: unknown check(s) {unknown}; the checks are "
                            f"{', '.join(op_checks.CHECKS)}")
    backends = None if backends is None else list(backends)
    with registered_op(record_or_name) as op:
        samples = list(op.samples(np.random.default_rng(seed)))
        if not samples:
            raise OpCheckError(f"check_op: op {op.name!r} has no samples (its samples(rng) "
                               f"yielded nothing); every op needs at least one")
        results: list[Check] = []
        failures: list[str] = []
        for i, sample in enumerate(samples):
            if not sample.name:
                sample = attrs.evolve(sample, name=str(i))
            for check in checks:
                try:
                    results.append(_run(check, op, sample, reference, backends))
                except OpCheckError as exc:
                    failures.append(str(exc))
    if failures:
        raise OpCheckError(f"check_op({op.name!r}): {len(failures)} check(s) failed:\n  "
                           + "\n  ".join(f.replace("\n", "\n    ") for f in failures),
                           tuple(failures))
    return CheckReport(tuple(results))


def _run(check: str, op: OpDef, sample, reference, backends) -> Check:
    if check == "reference":
        return op_checks.check_reference(op, sample, reference)
    if check == "sessions":
        return op_checks.check_sessions(op, sample, backends)
    return getattr(op_checks, f"check_{check}")(op, sample)
