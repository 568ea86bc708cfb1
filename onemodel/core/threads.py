"""How many threads a session's run may use: the ``threads`` option, and the BLAS limit.

BLAS (OpenBLAS in numpy's wheels) starts one thread per core and uses them all on every large
matrix product. A session that also runs work on threads of its own, or several sessions at
once, would then ask for more cores than there are, and each call gets slower, not faster.
So a session's ``threads`` bounds BLAS too: while a run is in flight, BLAS is limited with
threadpoolctl, and given back its setting when no run is in flight any more.

The BLAS setting is process-wide (OpenBLAS with pthreads has one shared pool of threads), so
one `BlasLimiter` (`BLAS`) serves every session in the process:

* each run enters with the number of BLAS threads it may use and leaves when it ends;
* while runs are in flight the limit is the *smallest* number asked for by any of them, so no
  run ever gets more BLAS threads than its own ``threads`` allows (a run asking for more gets
  fewer while a stricter one runs beside it: correctness of the bound wins over speed);
* the setting found when the first run entered is put back when the last one leaves, so code
  outside sessions (eager ops) keeps whatever BLAS threads it had.

Entering and leaving cost one lock and, only when the limit changes, one threadpoolctl call
(about a microsecond): runs that overlap, or a process whose BLAS is already at the asked
count, pay almost nothing. Eager code running on another thread *while* a run is in flight
sees the limit too; that is the price of a process-wide setting.
"""
from __future__ import annotations

import numbers
import os
import threading

from ..errors import ArgumentError


def cores() -> int:
    """The cores this process may run on (its CPU affinity, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_threads(value, where: str = "Session") -> int | None:
    """``value`` as a positive int, or None; anything else is an `ArgumentError`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ArgumentError(f"{where}: threads must be a positive int, got {value!r} "
                            f"(None: the backend's default)")
    return int(value)


class _Lib:
    """One BLAS library: get and set its thread count from any thread.

    threadpoolctl's public ``set_num_threads`` silently does nothing on a thread other than the
    first one that used it (for OpenBLAS with pthreads, to stop threads fighting over the
    setting). `BlasLimiter` serialises every change with its own lock, so it calls the real
    setter, which any thread may use.
    """

    __slots__ = ("get", "set", "name")

    def __init__(self, controller) -> None:
        self.name = f"{controller.internal_api} {controller.version}"
        self.get = controller.get_num_threads
        self.set = getattr(controller, "_real_set_num_threads", controller.set_num_threads)
        if controller.internal_api == "openblas":
            # the C functions themselves: a third of the cost of threadpoolctl's wrappers,
            # which look the symbol up on every call (this runs twice per session run)
            find = getattr(controller, "_get_symbol", None)
            get = find("openblas_get_num_threads") if find else None
            set_ = find("openblas_set_num_threads") if find else None
            if get is not None and set_ is not None:
                self.get, self.set = get, set_


def _find_libs() -> list[_Lib]:
    try:
        import numpy  # noqa: F401 - BLAS is found only once numpy has loaded it
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return []
    libs = []
    for lc in ThreadpoolController().lib_controllers:
        if lc.user_api != "blas":
            continue
        if getattr(lc, "threading_layer", None) == "openmp":
            continue  # an OpenMP build's limit is per calling thread, not process-wide: untouched
        libs.append(_Lib(lc))
    return libs


class BlasLimiter:
    """The process-wide BLAS thread limit while session runs are in flight (module doc).

    Around a run::

        token = object()
        try:
            BLAS.enter(n, token)
            ...
        finally:
            BLAS.exit(token)

    The token is made before ``try`` and ``enter`` registers it before changing anything, so
    a ``KeyboardInterrupt`` — which Python raises in the main thread between any two
    bytecodes, inside ``enter`` and ``exit`` too — never leaves BLAS limited after the run:
    ``exit`` undoes whatever part of ``enter`` happened, and sets its bookkeeping back before
    it calls into BLAS.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._libs: list[_Lib] | None = None
        self._active: dict = {}           # token -> threads asked for
        self._limit = 0                   # the limit set now (0: none in flight)
        self._saved: list[tuple[_Lib, int]] = []
        self._cores = 0                   # cores(), read once (a system call per run is 2 us)

    def libs(self) -> list[_Lib]:
        if self._libs is None:
            self._libs = _find_libs()
        return self._libs

    def enter(self, n: int, token) -> None:
        """Note a run (``token``: any object of its own) that may use ``n`` BLAS threads."""
        if not self._cores:
            self._cores = cores()
        n = max(1, min(int(n), self._cores))
        with self._lock:
            self._active[token] = n  # first: from here on, exit(token) undoes the rest
            if not self._saved:
                self._saved = [(lib, lib.get()) for lib in self.libs()]
                self._apply(n)
            elif n < self._limit:
                self._apply(n)

    def exit(self, token) -> None:
        """The run of ``token`` is over; the last one out puts back the saved setting."""
        with self._lock:
            if self._active.pop(token, None) is None:
                return
            if not self._active:
                saved, limit = self._saved, self._limit
                self._saved, self._limit = [], 0
                for lib, before in saved:
                    if before is not None and before != limit:
                        lib.set(before)
            else:
                low = min(self._active.values())
                if low != self._limit:
                    self._apply(low)

    def _apply(self, n: int) -> None:
        # ``_limit`` changes after the calls: cut short, the library is at or below it
        for lib, before in self._saved:
            if (self._limit or before) != n:
                lib.set(n)
        self._limit = n

    @property
    def limit(self) -> int:
        """The BLAS limit set now by runs in flight (0 when none is)."""
        return self._limit

    def _after_fork(self) -> None:
        # the child has only the thread that forked: no run is in flight there
        self._lock = threading.Lock()
        self._active = {}
        self._limit = 0
        self._saved = []
        self._cores = 0


BLAS = BlasLimiter()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=BLAS._after_fork)


class bounded:
    """``with bounded(n): ...``: the body runs with BLAS limited as a session run would be."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self) -> "bounded":
        try:
            BLAS.enter(self.n, self)
        except BaseException:
            BLAS.exit(self)  # interrupted inside enter: undo what it did
            raise
        return self

    def __exit__(self, *exc) -> None:
        BLAS.exit(self)


__all__ = ["cores", "check_threads", "BlasLimiter", "BLAS", "bounded"]
