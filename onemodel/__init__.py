"""OneModel for Python: eager code traced into a static graph with symbolic axes, run in fast
sessions on pluggable backends, saved in the OneModel format and exchanged through ONNX."""
from __future__ import annotations

import sys as _sys

from . import registry
from .core import DType, GradMode, Tensor, manual_seed, tensor
from .core.ops_namespace import ops
from .runtime import Session, SessionOutputs, ValueInfo, backends
from .trace import TracedModel, Tracer, trace
from .loading import load, load_onnx
from .formats.checkpoint import load_checkpoint, save
from .errors import (ArgumentError, FormatError, GraphError, OneModelError, OpError, OpIndexError,
                     PluginError, SessionError, TraceException)
from . import nn, optim  # noqa: E402  (after the core: nn and optim build on Tensor)

from ._version import __version__  # noqa: E402

_sys.modules[__name__ + ".ops"] = ops

__all__ = ["DType", "GradMode", "Tensor", "tensor", "manual_seed", "ops", "registry", "nn", "optim",
           "OneModelError", "ArgumentError", "OpError", "OpIndexError", "PluginError", "TraceException",
           "SessionError",
           "GraphError", "FormatError", "Tracer", "TracedModel", "trace", "load", "load_onnx", "save",
           "load_checkpoint", "Session", "SessionOutputs",
           "ValueInfo", "backends", "__version__"]
