"""The runtime: `Session` (a graph optimised by the passes and compiled by a backend) and
`TracedModel` (a graph that runs, saves and exports itself). It sits above the passes and the
formats because it uses both; the tracer, above it, returns TracedModels."""
from .session import LEVELS, Session, SessionOutputs, ValueInfo, backends
from .traced_model import TracedModel

__all__ = ["Session", "SessionOutputs", "ValueInfo", "backends", "LEVELS", "TracedModel"]
