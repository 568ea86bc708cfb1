"""`om.trace` and `NnModule.trace`: trace a function, check it, return the model."""
from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Callable

from ..core.tensor import Tensor
from ..errors import ArgumentError, TraceException
from .check import check_trace
from ..runtime.traced_model import TracedModel
from .tracer import Tracer, prune_unused


def _flat(result) -> list | None:
    """The Tensors of a (nested) tuple in order, as torch.onnx.export flattens
    ``(output, (h_n, c_n))``; None when something else is inside."""
    if isinstance(result, Tensor):
        return [result]
    if not isinstance(result, (tuple, list)) or not result:
        return None
    out = []
    for r in result:
        part = _flat(r)
        if part is None:
            return None
        out += part
    return out


def _outputs(result) -> list[tuple[str, Tensor]]:
    if isinstance(result, Tensor):
        return [("output", result)]
    flat = _flat(result)
    if flat is not None:
        return [(f"output_{i}", r) for i, r in enumerate(flat)]
    raise TraceException(f"the traced function must return a Tensor or a (nested) tuple of "
                         f"Tensors, got {type(result).__name__}")


def _input_specs(example, axis_names, input_name) -> list[tuple[str, object, tuple]]:
    """(name, example, axis names) per input: one example with its axis names, or a dict of
    name -> (example, axis names...)."""
    if not isinstance(example, Mapping):
        return [(input_name, example, tuple(axis_names))]
    if axis_names:
        raise ArgumentError("om.trace: with a dict of inputs, give each input's axis names in "
                            "the dict: {\"tokens\": (example, \"batch\", \"seq\"), ...}")
    if not example:
        raise ArgumentError("om.trace: the dict of inputs is empty")
    specs = []
    for name, spec in example.items():
        if isinstance(spec, Tensor) or not isinstance(spec, (tuple, list)) or not spec:
            raise ArgumentError(f"om.trace: input {name!r} must be (example, axis names...), "
                                f"e.g. (x, \"batch\", None), got {type(spec).__name__}")
        specs.append((name, spec[0], tuple(spec[1:])))
    return specs


def trace(fn: Callable, example, *axis_names, check: bool = True, input_name: str = "input",
          constant_names: dict | None = None):
    """Trace ``fn`` into a graph and return a `TracedModel`.

    ``om.trace(fn, x, "batch", None)`` traces ``fn(x)`` with input ``input`` (one axis name, or
    None for a fixed axis, per axis of ``x``). For several inputs give a dict of input name to
    ``(example, axis names...)``; ``fn`` is called with the inputs in the dict's order::

        om.trace(fn, {"tokens": (tok, "batch", "seq"), "mask": (mask, "batch", None)})

    The outputs are ``output`` (``output_0``, ``output_1``... when ``fn`` returns a tuple).
    ``check`` re-runs eagerly at other sizes of each symbolic axis (smaller and larger than the
    example) and compares node by node."""
    if not callable(fn):
        raise ArgumentError(f"om.trace: fn must be a callable, got {type(fn).__name__}")
    specs = _input_specs(example, axis_names, input_name)
    with Tracer() as tracer:
        if constant_names:
            tracer.constant_names.update(constant_names)
        xs = [tracer.input(name, ex, *axes) for name, ex, axes in specs]
        result = fn(*xs)
        for name, t in _outputs(result):
            tracer.output(name, t)
        traced = tracer.finish(prune=False)
    if check and tracer.env:
        names = [name for name, _ex, _axes in specs]

        def run_eager(feeds):
            return [t for _n, t in _outputs(fn(*(feeds[n] for n in names)))]

        check_trace(traced.graph, run_eager, tracer.examples, tracer.env,
                    ints_equal_to_axes=tracer.ints_equal_to_axes,
                    size_values=tracer.size_values)
    return TracedModel(prune_unused(traced.graph))


_mode_lock = threading.Lock()
_tracing_modules: dict[int, list] = {}  # id(module) -> [traces in progress, training flag before]


def trace_module(module, example, *axis_names, check: bool = True):
    """`trace` for an NnModule: eval mode while recording, restored afterwards (also on error,
    and when several threads trace one module at once: the last one out restores the flag);
    parameters become initializers named as in ``named_parameters()``."""
    names = {}
    for pname, p in module.named_parameters():
        names[id(p)] = pname
    if hasattr(module, "named_buffers"):
        for bname, b in module.named_buffers():
            names[id(b)] = bname
    with _mode_lock:
        entry = _tracing_modules.setdefault(id(module), [0, module.training])
        entry[0] += 1
        module.eval()
    try:
        return trace(module, example, *axis_names, check=check, constant_names=names)
    finally:
        with _mode_lock:
            entry[0] -= 1
            if entry[0] == 0:
                del _tracing_modules[id(module)]
                module.train(entry[1])
