"""`om.trace` and `NnModule.trace`: trace a function of one input, check it, return the model."""
from __future__ import annotations

from typing import Callable

from ..core.tensor import Tensor
from ..errors import ArgumentError, TraceException
from .check import check_trace
from .traced_model import TracedModel
from .tracer import Tracer, prune_unused


def _outputs(result) -> list[tuple[str, Tensor]]:
    if isinstance(result, Tensor):
        return [("output", result)]
    if isinstance(result, (tuple, list)) and result and all(isinstance(r, Tensor) for r in result):
        return [(f"output_{i}", r) for i, r in enumerate(result)]
    raise TraceException(f"the traced function must return a Tensor or a tuple of Tensors, got "
                         f"{type(result).__name__}")


def trace(fn: Callable, example, *axis_names, check: bool = True, input_name: str = "input",
          constant_names: dict | None = None):
    """Trace ``fn(example)`` into a graph with input ``input`` and output ``output`` (``output_0``,
    ``output_1``... when ``fn`` returns a tuple). ``axis_names`` gives one name (symbolic) or
    None (fixed) per axis of the example. ``check`` re-runs eagerly at other sizes."""
    if not callable(fn):
        raise ArgumentError(f"om.trace: fn must be a callable, got {type(fn).__name__}")
    tracer = Tracer()
    if constant_names:
        tracer.constant_names.update(constant_names)
    try:
        x = tracer.input(input_name, example, *axis_names)
        result = fn(x)
        for name, t in _outputs(result):
            tracer.output(name, t)
        traced = tracer.finish(prune=False)
    except BaseException:
        tracer.abort()
        raise
    if check and tracer.env:
        def run_eager(feeds):
            res = fn(feeds[input_name])
            return [t for _n, t in _outputs(res)]

        check_trace(traced.graph, run_eager, tracer.examples, tracer.env,
                    ints_read_as_axes=tracer.ints_read_as_axes)
    return TracedModel(prune_unused(traced.graph))


def trace_module(module, example, *axis_names, check: bool = True):
    """`trace` for an NnModule: eval mode while recording (restored afterwards, also on error);
    parameters become initializers named as in ``named_parameters()``."""
    was_training = module.training
    names = {}
    for pname, p in module.named_parameters():
        names[id(p)] = pname
    if hasattr(module, "named_buffers"):
        for bname, b in module.named_buffers():
            names[id(b)] = bname
    module.eval()
    try:
        return trace(module, example, *axis_names, check=check, constant_names=names)
    finally:
        module.train(was_training)
