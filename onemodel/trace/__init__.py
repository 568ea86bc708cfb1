"""Tracing: record eager code into a graph with symbolic axes, and check the recording."""
from .api import trace, trace_module
from ..runtime.traced_model import TracedModel
from .tracer import Tracer

__all__ = ["trace", "trace_module", "Tracer", "TracedModel"]
