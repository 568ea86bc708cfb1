"""The trace check: re-run the function eagerly at other sizes of each symbolic axis (smaller and
larger than the example) and compare with the graph, node by node, so a size frozen into the graph
is reported where it happened."""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from ..core import tracing_hooks
from ..core.dispatch import eager
from ..core.grad_mode import _internal_no_grad
from ..core.graph import Graph
from ..core.interpreter import bind_symbols
from ..core.symbolic import evaluate, evaluate_nested, format_shape
from ..core.tensor import Tensor
from ..errors import OneModelError, TraceException
from ..registry import REGISTRY


class _Recorder:
    """An observer that runs everything eagerly and keeps each op's outputs, in call order."""

    def __init__(self) -> None:
        self.results: list[tuple[str, tuple[np.ndarray, ...]]] = []

    def refuse(self, what: str, reason: str) -> None:  # the trace already enforced the rules
        return None

    def shape_of(self, tensor):
        return tensor._data.shape

    def note_random(self, tensor, what) -> None:  # the trace already enforced the rules
        return None

    def apply(self, op, inputs, params):
        out = eager(op, inputs, params)
        outs = out if isinstance(out, tuple) else (out,)
        self.results.append((op.name, tuple(t._data for t in outs)))
        return out


def grown_inputs(examples: Mapping[str, tuple[np.ndarray, tuple]], axis: str, size: int):
    """Inputs with ``axis`` resized to ``size``: cut, or grown by repeating the example's slices
    (so integer inputs such as token ids stay valid)."""
    out = {}
    for name, (arr, names) in examples.items():
        for i, n in enumerate(names):
            if n == axis:
                arr = np.take(arr, np.arange(size) % arr.shape[i], axis=i)
        out[name] = np.ascontiguousarray(arr)
    return out


def _run_graph_all(graph: Graph, feeds):
    ops = REGISTRY.tables().ops
    env = bind_symbols(graph, feeds)
    values = dict(graph.initializers)
    values.update(feeds)
    per_node = []
    for node in graph.nodes:
        args = [values[i] if i is not None else None for i in node.inputs]
        out = ops[node.op].kernel(*args, **evaluate_nested(dict(node.params), env))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        outs = tuple(np.asarray(a) for a in outs)
        for name, a in zip(node.outputs, outs):
            values[name] = a
        per_node.append(outs)
    return per_node, {o: values[v] for o, v in graph.outputs}


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype == b.dtype and np.array_equal(a, b):  # the usual case: the same kernels ran
        return True
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        finite = np.abs(b64[np.isfinite(b64)])  # no warning for all-NaN or inf results
        scale = max(1.0, float(finite.max()) if finite.size else 1.0)
        with np.errstate(all="ignore"):
            return bool(np.allclose(a64, b64, rtol=1e-4, atol=1e-5 * scale, equal_nan=True))
    return bool(np.array_equal(a, b))


#: how many sizes above the example the check tries (with the two below, three eager re-runs
#: per axis: the cost of the check stays close to what it was with two larger sizes)
EXTRA_SIZES = 1


def check_sizes(size0: int, extra_sizes: int = EXTRA_SIZES) -> list[int]:
    """The sizes the check tries for an axis traced at ``size0``: 2 and 3 where they are below
    the example (sizes of 1 broadcast, so a symbolic axis starts at 2), then larger ones."""
    below = [n for n in (2, 3) if n < size0]
    above = [size0 * (k + 1) + k for k in range(1, extra_sizes + 1)]  # e.g. 4 -> 9, 14
    return below + above


def check_trace(graph: Graph, run_eager: Callable[[dict], list], examples, env: dict,
                extra_sizes: int = EXTRA_SIZES, ints_equal_to_axes=(), size_values=()) -> None:
    """For each symbolic axis, compare eager and graph at the sizes of `check_sizes`.
    ``size_values`` names the values that hold a size used as a tensor (eager has plain ints
    there, so no op to compare with)."""
    try:
        _check(graph, run_eager, examples, env, extra_sizes, frozenset(size_values))
    except TraceException as exc:
        hints = [f"\n  note: the int {n} passed to ops.{op}" + (f" at {src}" if src else "")
                 + f" equals the example size of axis {axis!r}, but a plain int is a constant "
                 f"of the graph; if it stands for that axis, read it from x.shape so it stays "
                 f"symbolic"
                 for axis, n, op, src in ints_equal_to_axes]
        if hints:
            raise TraceException(str(exc) + "".join(dict.fromkeys(hints))) from exc.__cause__
        raise


def _check(graph, run_eager, examples, env, extra_sizes, size_values):
    for axis, size0 in env.items():
        refused: list[tuple[int, Exception]] = []  # sizes the model itself does not accept
        tried = 0
        for size in check_sizes(size0, extra_sizes):
            sizes = dict(env, **{axis: size})
            if any(not g.holds(sizes) for g in graph.guards):
                continue  # outside the graph's guards: sessions refuse these sizes
            feeds = grown_inputs(examples, axis, size)
            recorder = _Recorder()
            try:
                with tracing_hooks.activate(recorder), _internal_no_grad():
                    eager_outputs = run_eager({n: Tensor._wrap(a) for n, a in feeds.items()})
            except OneModelError as exc:
                # The model may not accept this size at all (halves of an odd length, a window
                # larger than the input): then the graph must refuse it too.
                tried += 1
                try:
                    _run_graph_all(graph, feeds)
                except Exception:  # noqa: BLE001 - both refuse: they agree
                    refused.append((size, exc))
                    continue
                raise TraceException(
                    f"the trace check re-ran the function with axis {axis!r} = {size} and it "
                    f"failed ({exc}), but the graph runs at that size: something in the function "
                    f"depends on the example's size {size0}.") from exc
            tried += 1
            try:
                per_node, graph_outputs = _run_graph_all(graph, feeds)
            except Exception as exc:  # noqa: BLE001
                raise TraceException(
                    f"the graph fails to run with axis {axis!r} = {size} (example: {size0}): {exc}. "
                    f"The graph and the eager code disagree about which sizes follow the axis.") from exc
            _compare(graph, recorder.results, per_node, graph_outputs, eager_outputs, axis, size,
                     size0, sizes, size_values)
        if tried and len(refused) == tried:
            size, exc = refused[-1]
            raise TraceException(
                f"the traced function runs only at the example's size of axis {axis!r} "
                f"({size0}): at {', '.join(str(n) for n, _e in refused)} it fails (at {size}: "
                f"{exc}). A size of the example was written into the code as a constant; "
                f"read it from x.shape, or mark the axis as fixed when tracing.") from exc


def _compare(graph, eager_results, per_node, graph_outputs, eager_outputs, axis, size, size0,
             sizes, size_values):
    k = -1  # the eager op matching graph node i (sizes used as values have no eager op)
    for i, node in enumerate(graph.nodes):
        if set(node.outputs) <= size_values:
            continue
        k += 1
        where = f" (recorded at {node.source})" if node.source else ""
        if k >= len(eager_results) or eager_results[k][0] != node.op:
            got = eager_results[k][0] if k < len(eager_results) else "nothing"
            raise TraceException(
                f"with axis {axis!r} = {size} the function takes another path: node {i} of the "
                f"graph is {node.op}{where} but the eager run called {got}. Python control flow "
                f"depends on the example's size {size0}.")
        for name, g, e in zip(node.outputs, per_node[i], eager_results[k][1]):
            if not _close(g, e):
                what = (f"shape {g.shape} instead of {e.shape}" if g.shape != e.shape
                        else "different values")
                raise TraceException(
                    f"the graph differs from eager code when axis {axis!r} = {size} (example: "
                    f"{size0}): node {node.op} -> %{name}{where} gives {what}. A size decided "
                    f"from the example was frozen into the graph; pass sizes from x.shape to "
                    f"ops instead of Python ints.")
            declared = tuple(evaluate(d, sizes) for d in graph.values[name].shape)
            if declared != g.shape:
                raise TraceException(
                    f"with axis {axis!r} = {size} (example: {size0}) node {node.op} -> %{name}"
                    f"{where} has shape {g.shape}, but the graph declares "
                    f"{format_shape(graph.values[name].shape)} = {declared}: the inference of "
                    f"ops.{node.op} is wrong at this size (a session would declare a wrong shape)")
    for (oname, _v), e in zip(graph.outputs, eager_outputs):
        g = graph_outputs[oname]
        e = e._data if isinstance(e, Tensor) else np.asarray(e)
        if not _close(g, e):
            raise TraceException(
                f"output {oname!r} differs from eager code when axis {axis!r} = {size} (example: "
                f"{size0}); a size from the example was frozen into the graph.")
