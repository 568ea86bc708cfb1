"""Which kernel copy the compiled backend runs on: ``$ONEMODEL_COMPILED_ISA``, read once at
import, puts the named copy on top of the active kernel table (csrc/native.c assembles it per
instruction from the best copy this CPU runs); a name this extension lacks or this CPU cannot
run is an error when the backend is used, not at import, so ``onemodel info`` still prints."""
from __future__ import annotations

import hashlib
import os

from onemodel.errors import OneModelError

from . import _native

ENV = "ONEMODEL_COMPILED_ISA"


class CompiledIsaError(OneModelError, ValueError):
    """$ONEMODEL_COMPILED_ISA names a kernel copy that is not built in or not runnable here."""


def _apply_env() -> str | None:
    """The error text for a bad $ONEMODEL_COMPILED_ISA, None when it is unset or applied."""
    name = os.environ.get(ENV, "").strip()
    if not name:
        return None
    try:
        _native.use(name)
    except ValueError as exc:
        here = ", ".join(n for n, _ in _native.copies())
        return f"{ENV}={name!r}: {exc}; this CPU runs: {here}"
    return None


_ERROR = _apply_env()


def check() -> None:
    """Raise `CompiledIsaError` when $ONEMODEL_COMPILED_ISA was bad at import."""
    if _ERROR is not None:
        raise CompiledIsaError(_ERROR)


def kernels_text(kernels: dict[str, str] | None = None) -> str:
    """The active table in short: ``"avx2"`` when one copy provides every kernel, else the
    copies by how many kernels each provides, the others named, as
    ``"avx512 (gemm, bmm) + avx2 (17)"``."""
    kernels = _native.kernels() if kernels is None else kernels
    by_copy: dict[str, list[str]] = {}
    for key, copy in sorted(kernels.items()):
        by_copy.setdefault(copy, []).append(key)
    if len(by_copy) == 1:
        return next(iter(by_copy))
    most = max(by_copy, key=lambda c: len(by_copy[c]))
    order = [n for n, _ in _native.copies() if n in by_copy]
    order += sorted(set(by_copy) - set(order))
    return " + ".join(f"{c} ({len(by_copy[c])})" if c == most else f"{c} ({', '.join(by_copy[c])})"
                      for c in order)


def signature() -> str:
    """The top copy and a digest of the active table, for keys of anything lowered for it
    (plan_cache): a plan cached with one table is not reused with another."""
    table = sorted(_native.kernels().items())
    return f"{_native.isa()}:{hashlib.sha256(repr(table).encode()).hexdigest()[:16]}"


__all__ = ["ENV", "CompiledIsaError", "check", "kernels_text", "signature"]
