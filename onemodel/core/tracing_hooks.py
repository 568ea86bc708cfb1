"""Where the core meets the tracer without importing it (the tracer sits in a higher layer).

A tracer installs itself with `activate`; the core asks `current()` at the few places tracing
changes behaviour: op application, reading data, in-place changes, factories and no_grad.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading

_state = threading.local()


def current():
    return getattr(_state, "tracer", None)


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


def _internal(filename: str) -> bool:
    norm = filename.replace(os.sep, "/")
    return ("/onemodel/" in norm or "/onemodel_" in norm or "/pluggy/" in norm
            or "/attrs/" in norm or norm.startswith("<frozen") or "/contextlib.py" in norm
            or "/numpy/" in norm)


def user_frame() -> str | None:
    """``file:line`` of the innermost frame outside OneModel and its plugins, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _internal(frame.f_code.co_filename):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None
