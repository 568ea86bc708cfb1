"""The reference interpreter: runs a graph node by node through the ops' eager kernels.

Slow but obviously right; backends and passes are checked against it.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..errors import SessionError
from ..registry import REGISTRY
from . import guards
from .dynamic_plan import DynamicPlan, data_symbols
from .graph import Graph
from .kernel_call import check_outputs
from .node_errors import NodeExecutionError, node_error
from .symbolic import Dim, evaluate_nested


def bind_symbols(graph: Graph, arrays: Mapping[str, np.ndarray]) -> dict[str, int]:
    """Sizes of the symbolic axes, read from the feeds (checked for consistency)."""
    env: dict[str, int] = {}
    where: dict[str, tuple[str, int]] = {}
    for v in graph.inputs:
        arr = arrays[v.name]
        if arr.ndim != len(v.shape):
            raise SessionError(f"input {v.name!r}: expected rank {len(v.shape)} "
                               f"{list(map(str, v.shape))}, got shape {arr.shape}")
        for axis, (d, n) in enumerate(zip(v.shape, arr.shape)):
            if isinstance(d, Dim):
                syms = d.symbols()
                if len(syms) == 1 and d == Dim.symbol(next(iter(syms))):
                    name = next(iter(syms))
                    where.setdefault(name, (v.name, axis))
                    if env.setdefault(name, n) != n:
                        raise SessionError(f"input {v.name!r} axis {axis}: symbolic size {name!r} "
                                           f"is {n} here but {env[name]} in another input")
            elif d != n:
                raise SessionError(f"input {v.name!r} axis {axis}: expected size {d}, got {n}")
    if graph.guards:
        guards.check(graph.guards, env, where)
    return env


def run_graph(graph: Graph, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    ops = REGISTRY.tables().ops
    env = bind_symbols(graph, feeds)
    if data_symbols(graph):  # sizes decided by tensor data: bound as the nodes run
        return DynamicPlan(graph, env, [o for o, _ in graph.outputs], ops).run(feeds)
    values: dict[str, np.ndarray] = dict(graph.initializers)
    for v in graph.inputs:
        values[v.name] = feeds[v.name]
    for node in graph.nodes:
        op = ops[node.op]
        args = [values[i] if i is not None else None for i in node.inputs]
        params = evaluate_nested(dict(node.params), env)
        try:
            outs = check_outputs(op.kernel(*args, **params),
                                 [graph.values[o].type for o in node.outputs], op.name,
                                 op.provider, env)
        except Exception as exc:  # noqa: BLE001
            raise node_error(node, exc) from exc
        values.update(zip(node.outputs, outs))
    return {o: values[v] for o, v in graph.outputs}


# NodeExecutionError and node_error live in `node_errors` (the dynamic plan uses them too);
# they stay importable from here, where runners of graphs have always found them.
__all__ = ["NodeExecutionError", "bind_symbols", "node_error", "run_graph"]
