"""The exception hierarchy. Every error OneModel raises on purpose is a `OneModelError`."""


class OneModelError(Exception):
    """Base class of every deliberate OneModel error."""


class OpError(OneModelError, ValueError):
    """An op was given inputs or parameters it cannot accept (names the op and what is wrong)."""


class OpIndexError(OpError, IndexError):
    """An index lies outside an axis (``x[3]`` on an axis of size 2). Also an IndexError, which
    is what ends Python's iteration and what code written for sequences (and PyTorch) catches."""


class ArgumentError(OneModelError, TypeError, ValueError):
    """A public function or constructor got an argument of the wrong type or value; the message
    names the function and the argument. Also a TypeError and a ValueError, so code written for
    Python's (and PyTorch's) conventions catches it too."""


class PluginError(OneModelError):
    """A plugin failed to load, raised in a hook or returned a malformed record."""

    def __init__(self, message: str, plugin: str | None = None, distribution: str | None = None):
        super().__init__(message)
        self.plugin = plugin
        self.distribution = distribution


class TraceException(OneModelError):
    """The function cannot be recorded faithfully into a graph; the message says why and where."""


class GraphError(OneModelError):
    """A graph is malformed (a value used before definition, an unknown op, a stale type)."""


class SessionError(OneModelError, ValueError):
    """A session was fed wrong inputs, or was used after close."""


class FormatError(OneModelError):
    """A model file is malformed, too new, or refers to something unavailable."""
