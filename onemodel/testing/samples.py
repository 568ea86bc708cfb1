"""Turning an op's `Sample` into a call, bound inputs, or a one-node graph: the one place that
knows a sample's ``args`` are in the op's *input* order (a list for a variadic input, None for an
absent optional one) and its ``params`` are keywords."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core.dispatch import bind, infer
from ..core.graph import Graph, GraphBuilder, Value
from ..core.tensor import Tensor
from ..core.types import TensorType
from ..registry.records import OpDef, Sample


def _as(a, dtype) -> np.ndarray:
    """A fresh copy of one sample array, floats cast to ``dtype`` when given."""
    a = np.asarray(a)
    if dtype is not None and a.dtype.kind == "f":
        return a.astype(dtype)
    return a.copy()


def sample_arrays(sample: Sample, dtype=None) -> list:
    """The sample's inputs as fresh numpy arrays (a list of them for a variadic input)."""
    out: list[Any] = []
    for a in sample.args:
        if a is None:
            out.append(None)
        elif isinstance(a, list):
            out.append([_as(x, dtype) for x in a])
        else:
            out.append(_as(a, dtype))
    return out


def sample_tensors(sample: Sample, dtype=None) -> list:
    """The sample's inputs as fresh tensors, floats cast to ``dtype`` when given."""
    return [None if a is None else [Tensor.from_numpy(x) for x in a] if isinstance(a, list)
            else Tensor.from_numpy(a) for a in sample_arrays(sample, dtype)]


def flat(inputs: list) -> list:
    """Inputs with a variadic list spread out, in order."""
    out = []
    for a in inputs:
        out.extend(a if isinstance(a, list) else [a])
    return out


def sample_call(op: OpDef, inputs: list, params) -> tuple[tuple, dict]:
    """``(args, kwargs)`` for ``om.ops.<op>(*args, **kwargs)``: inputs by name, since a record's
    positional order may differ from "inputs, then params" (``OpDef.signature``)."""
    if op.variadic:
        return (inputs[0],), dict(params)
    names = [i.rstrip("?*") for i in op.inputs]
    return (), {**dict(zip(names, inputs)), **dict(params)}


def call_sample(op: OpDef, sample: Sample, dtype=None, inputs: list | None = None) -> tuple:
    """Apply ``op`` eagerly to the sample (fresh tensors unless ``inputs`` are given); always
    a tuple of output tensors."""
    from ..core.dispatch import apply

    if inputs is None:
        inputs = sample_tensors(sample, dtype)
    args, kwargs = sample_call(op, inputs, sample.params)
    out = apply(op, args, kwargs)
    return out if isinstance(out, tuple) else (out,)


def bind_sample(op: OpDef, sample: Sample, dtype=None) -> tuple[list, dict]:
    """The sample bound as a call would bind it: flat input tensors (None where absent) and
    validated params (defaults filled in)."""
    args, kwargs = sample_call(op, sample_tensors(sample, dtype), sample.params)
    return bind(op, args, kwargs)


def output_types(op: OpDef, inputs: list, params: dict) -> tuple:
    types = [None if t is None else TensorType(t.dtype, t.shape) for t in inputs]
    out = infer(op, types, params)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def sample_graph(op: OpDef, sample: Sample, dtype=None, *,
                 constant: Callable[[int], bool] | None = None,
                 tail: Callable[[GraphBuilder, Value], Value] | None = None
                 ) -> tuple[Graph, dict] | None:
    """A graph applying ``op`` once to the sample, and its feeds; None when the op refuses to be
    part of a graph with these params. Input ``j`` is a constant when ``constant(j)``, else a feed
    named ``in<j>``; ``tail(builder, value)`` may add nodes after each output."""
    inputs, params = bind_sample(op, sample, dtype)
    if op.trace_refusal(params):
        return None
    outs = output_types(op, inputs, params)
    gb = GraphBuilder()
    names: list[str | None] = []
    feeds = {}
    for j, t in enumerate(inputs):
        if t is None:
            names.append(None)
            continue
        nm, arr = f"in{j}", np.array(t.numpy())
        if constant is not None and constant(j):
            gb.add_initializer(nm, arr)
        else:
            gb.add_input(nm, TensorType(t.dtype, arr.shape))
            feeds[nm] = arr
        names.append(nm)
    values = gb.add_node(op.name, names, outs, params)
    results = [tail(gb, v) if tail is not None else v for v in values]
    graph = gb.finish([(f"out{k}", v.name) for k, v in enumerate(results)])
    return graph, feeds
