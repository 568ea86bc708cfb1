"""A 0-d integer tensor given as a size (``x.reshape(lengths.sum(), -1)``), as PyTorch allows.

Eagerly it is its value. While tracing, a tensor the trace computed holds a value of the
example's data: a size taken from it would follow the data, which a graph's shapes cannot (they
follow the inputs' shapes), so it is refused naming the argument, why, and what to write instead.
A tensor made outside the trace is a constant, as a plain int is.
"""
from __future__ import annotations

from ..errors import OpError, TraceException
from . import tracing_hooks

DATA_DEPENDENT = ("it is a tensor computed from a traced input's values, so the size depends "
                  "on the input's values, not on its shape, and a graph's sizes can follow only "
                  "the inputs' shapes. For a size derived from a shape, use x.shape[...] (it "
                  "stays symbolic: x.reshape(x.shape[0] * x.shape[1], -1)); a size that truly "
                  "depends on the data cannot be part of a graph")

SIZE_AS_TENSOR = ("it is a size read from x.shape but turned into a tensor; pass the size "
                  "itself (x.shape[...] and its arithmetic), which stays symbolic")


def is_size_tensor(value) -> bool:
    from .tensor import Tensor

    return isinstance(value, Tensor)


def size_from_tensor(t, what: str) -> int:
    """The int a 0-d integer tensor ``t`` holds, given as the size ``what`` (``ops.reshape:
    shape[0]``); refused while tracing when the trace computed ``t``."""
    tracer = tracing_hooks.current()
    tv = getattr(t, "_tv", None)
    if tracer is not None and tv is not None and tv[0]() is tracer:
        reason = SIZE_AS_TENSOR if tv[1] in getattr(tracer, "size_values", ()) else DATA_DEPENDENT
        refuse = getattr(tracer, "refuse", None)
        if refuse is not None:
            refuse(f"{what} (a tensor)", reason)  # a Tracer aborts and raises
        raise TraceException(f"{what} (a tensor) cannot be traced: {reason}")
    data = t._data
    if data.ndim != 0:
        raise OpError(f"{what} must be an int or a 0-d integer tensor, got a tensor of shape "
                      f"{tuple(data.shape)}")
    if data.dtype.kind not in "iu":
        raise OpError(f"{what} must be an int or a 0-d integer tensor, got a 0-d "
                      f"{data.dtype.name} tensor (sizes are integers)")
    return int(data)
