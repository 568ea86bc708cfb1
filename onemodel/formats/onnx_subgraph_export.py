"""ONNX export of a subgraph param (the branches of ``cond``, the body of ``loop``/``scan``).

`subgraph_proto` lowers a closed OneModel `Graph` into an ONNX ``GraphProto`` for a node
attribute: its formal inputs become the proto's inputs, its captured inputs (the ones after
the formal ones) read the enclosing graph's values by name (ONNX's outer scope), and every
name it makes is claimed from the enclosing context, so names stay unique across the model.
"""
from __future__ import annotations

import attrs
import numpy as np

from ..core.graph import Graph
from .onnx_export import ExportContext, OnnxExportError, _onnx, _value_info, export_node, exportable


class _SubgraphContext(ExportContext):
    """An export context whose names are claimed from the enclosing one (see the module
    docstring); the captured inputs are named as the outer values feeding them."""

    def __init__(self, graph: Graph, parent: ExportContext, prefix: str, outer: dict):
        self._parent = parent
        self._prefix = prefix
        self._outer = outer
        super().__init__(graph, parent.opset)

    def _claim(self, name: str) -> str:
        return self._parent._claim(f"{self._prefix}_{name}")

    def _assign_names(self) -> None:
        super()._assign_names()
        self._names.update(self._outer)


def subgraph_proto(ctx: ExportContext, graph: Graph, outer_names, n_formal: int, hint: str):
    """The ``GraphProto`` of ``graph``: inputs ``graph.inputs[:n_formal]``, the rest read from
    the enclosing graph's ONNX values ``outer_names`` (in order)."""
    from ..registry import REGISTRY

    onnx = _onnx()
    ops = REGISTRY.tables().ops
    captured = graph.inputs[n_formal:]
    if len(captured) != len(outer_names):
        raise OnnxExportError(f"a subgraph reads {len(captured)} outer values, the node feeds "
                              f"{len(outer_names)}")
    missing = sorted({n.op for n in graph.nodes if not exportable(ops.get(n.op))})
    if missing:
        raise OnnxExportError(f"no ONNX lowering for op(s) {', '.join(missing)} inside a "
                              f"subgraph")
    prefix = ctx.fresh(hint)
    outer = {v.name: o for v, o in zip(captured, outer_names)}
    child = _SubgraphContext(attrs.evolve(graph, outputs=()), ctx, prefix, outer)
    for n in graph.nodes:
        child.current = n
        export_node(child, ops[n.op], n)
    child.current = None
    outputs = []
    for _, v in graph.outputs:
        name = child.fresh("out")
        child.make_node("Identity", [child.name_of(v)], [name])
        outputs.append(_value_info(onnx, name, graph.values[v].type))
    inputs = [_value_info(onnx, child.name_of(v.name), v.type) for v in graph.inputs[:n_formal]]
    inits = list(child.initializers)
    for name in sorted(graph.initializers):
        arr = np.require(np.asarray(graph.initializers[name]), requirements="C")
        inits.append(onnx.numpy_helper.from_array(arr, child.name_of(name)))
    return onnx.helper.make_graph(child.nodes, prefix, inputs, outputs, initializer=inits)


__all__ = ["subgraph_proto"]
