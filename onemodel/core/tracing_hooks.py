"""Where the core meets the tracer without importing it (the tracer sits in a higher layer).

A tracer installs itself with `activate`; the core asks `current()` at the few places tracing
changes behaviour: op application, reading data, in-place changes, factories and no_grad.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import types
import weakref

_state = threading.local()


def current():
    """The observer recording on this thread, or None. A `Tracer` is held by a weak reference
    and counts only until it finishes or aborts, so a tracer dropped after an error (or
    collected by another thread's garbage collection) leaves this thread as it was."""
    held = getattr(_state, "tracer", None)
    if held is None:
        return None
    obj = held() if isinstance(held, weakref.ref) else held
    if obj is None or getattr(obj, "_finished", False):
        _state.tracer = None
        return None
    return obj


def install(tracer) -> None:
    """Make ``tracer`` this thread's recorder until `uninstall` (held weakly; see `current`)."""
    _state.tracer = weakref.ref(tracer)


def uninstall(tracer) -> None:
    """Stop ``tracer`` recording on this thread (a no-op on other threads, whose slot clears
    itself once the tracer has finished)."""
    held = getattr(_state, "tracer", None)
    if held is not None and (held() if isinstance(held, weakref.ref) else held) is tracer:
        _state.tracer = None


@contextlib.contextmanager
def activate(tracer):
    previous = current()
    _state.tracer = tracer
    try:
        yield tracer
    finally:
        _state.tracer = previous


@contextlib.contextmanager
def suspended():
    """Run eagerly with no tracer (the trace check re-runs the function this way)."""
    previous = current()
    _state.tracer = None
    try:
        yield
    finally:
        _state.tracer = previous


#: Top-level packages whose frames are never "the user's line": OneModel, its plugins
#: (``onemodel_*``) and the libraries between them and user code.
INTERNAL_PACKAGES = frozenset({"onemodel", "pluggy", "attr", "attrs", "numpy", "contextlib",
                               "importlib", "_frozen_importlib", "_frozen_importlib_external"})


def _internal(module: str) -> bool:
    """Whether a frame of module ``module`` (its ``__name__``) is OneModel's or a library's.
    Decided by module name, not file path: a user's script may live under a folder called
    ``onemodel`` (its frames are ``__main__`` or the user's own modules)."""
    root = module.partition(".")[0]
    return root in INTERNAL_PACKAGES or root.startswith("onemodel_")


def user_frame() -> str | None:
    """``file:line`` of the innermost frame outside OneModel and its plugins, or None."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if not _internal(frame.f_globals.get("__name__") or ""):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None
