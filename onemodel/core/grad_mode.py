"""Whether autograd records operations (per thread)."""
from __future__ import annotations

import contextlib
import threading

from . import tracing_hooks

_state = threading.local()


class GradMode:
    @staticmethod
    def is_enabled() -> bool:
        """False inside `no_grad` and while this thread traces (a trace records, never trains)."""
        return getattr(_state, "enabled", True) and tracing_hooks.current() is None

    @staticmethod
    def set_enabled(enabled: bool) -> None:
        _state.enabled = bool(enabled)

    @staticmethod
    @contextlib.contextmanager
    def no_grad():
        """Disable recording for autograd inside the block (refused while tracing)."""
        tracer = tracing_hooks.current()
        if tracer is not None:
            tracer.refuse("GradMode.no_grad", "entering no_grad inside a trace would hide what "
                          "the model computes in training from the graph; trace the model as it is")
        previous = getattr(_state, "enabled", True)
        _state.enabled = False
        try:
            yield
        finally:
            _state.enabled = previous

    @staticmethod
    @contextlib.contextmanager
    def enable_grad():
        previous = getattr(_state, "enabled", True)
        _state.enabled = True
        try:
            yield
        finally:
            _state.enabled = previous


@contextlib.contextmanager
def _internal_no_grad():
    """no_grad for OneModel's own code (optimizers, tracer): never refused."""
    previous = getattr(_state, "enabled", True)
    _state.enabled = False
    try:
        yield
    finally:
        _state.enabled = previous
