"""The reference interpreter: runs a graph node by node through the ops' eager kernels.

Slow but obviously right; backends and passes are checked against it.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..errors import OneModelError, SessionError
from ..registry import REGISTRY
from . import guards
from .graph import Graph, Node
from .kernel_call import check_outputs
from .symbolic import Dim, evaluate_nested


class NodeExecutionError(OneModelError, RuntimeError):
    """A kernel raised while a graph ran; the message names the node and its source line."""


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


def node_error(node: Node, exc: BaseException, provider: str | None = None
               ) -> NodeExecutionError:
    """The error for a kernel that raised while ``node`` ran: names the op, its outputs, the
    recorded source line and the plugin whose kernel it was (``provider``; by default the op's
    own plugin). The error keeps ``node`` and ``provider`` as attributes."""
    if provider is None:
        op = REGISTRY.tables().ops.get(node.op)
        provider = getattr(op, "provider", None)
    where = f", recorded at {node.source}" if node.source else ""
    by = f", kernel from plugin {provider}" if provider else ""
    err = NodeExecutionError(f"while executing node {node.op} -> %{', %'.join(node.outputs)}"
                             f"{where}{by}: {type(exc).__name__}: {exc}")
    err.node, err.provider = node, provider
    return err


def run_graph(graph: Graph, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    ops = REGISTRY.tables().ops
    env = bind_symbols(graph, feeds)
    from .dynamic_plan import DynamicPlan, data_symbols

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
