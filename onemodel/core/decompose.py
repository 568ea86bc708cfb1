"""Decompositions: an op written as other ops (`OpDef.decomposition`, PyTorch's
``register_decomposition``).

A decomposition is ``f(ops, *inputs, **params)``, called like the op's kernel (inputs in record
order, None for an absent optional one, params by name) with ``ops`` a namespace called like
``om.ops``. Eagerly it runs on Tensors with ``ops = om.ops`` (`run_eager`, how the tests compare
it with the kernel). `build` runs it on `GraphValue`s instead: values that carry only a
`TensorType` (symbolic sizes included), so ONNX export, passes and backends can expand a node of
the op into nodes of its parts without example data. The core knows no concrete op: every part is
looked up in the registry by the name the decomposition calls.
"""
from __future__ import annotations

import numbers
from typing import Any, Mapping

import numpy as np

from ..errors import OpError
from .dtype import DType, promote_types
from .graph import Graph, GraphBuilder
from .types import TensorType


class GraphValue:
    """A value of the graph a decomposition builds: its name and type (``shape`` entries are ints
    or symbolic `Dim`s, which ops accept wherever they take a size)."""

    __slots__ = ("name", "type")

    def __init__(self, name: str, type: TensorType) -> None:
        self.name, self.type = name, type

    @property
    def shape(self) -> tuple:
        return tuple(self.type.shape)

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return len(self.type.shape)

    def __repr__(self) -> str:
        return f"GraphValue(%{self.name}: {self.type})"


class GraphOps:
    """The ``ops`` namespace of a decomposition run by `build`: ``ops.mul(a, b)`` binds the call
    as ``om.ops.mul`` would, infers the result type and records one node."""

    def __init__(self, builder: GraphBuilder, owner: str) -> None:
        self._builder = builder
        self._owner = owner

    def __getattr__(self, name: str):
        from ..registry import REGISTRY

        if name.startswith("_"):
            raise AttributeError(name)
        rec = REGISTRY.tables().ops.get(name)
        if rec is None:
            raise OpError(f"the decomposition of ops.{self._owner} calls ops.{name}, which no "
                          f"installed plugin defines")
        return lambda *args, **kwargs: self._apply(rec, args, kwargs)

    def _const(self, array: np.ndarray) -> str:
        name = self._builder.fresh("k")
        self._builder.add_initializer(name, np.array(array))
        return name

    def _apply(self, rec, args: tuple, kwargs: dict):
        from .dispatch import infer, split_call

        raw, params = split_call(rec, args, kwargs)
        values = [r for r in raw if isinstance(r, GraphValue)]
        like = promote_types(*(v.dtype for v in values)) if values else None
        names: list[str | None] = []
        for r in raw:
            if r is None:
                names.append(None)
            elif isinstance(r, GraphValue):
                names.append(r.name)
            elif isinstance(r, np.ndarray):
                names.append(self._const(r))
            elif isinstance(r, (bool, np.bool_)):  # a Python number takes the tensors' dtype
                names.append(self._const(np.asarray(r, (like or DType.BOOL).numpy)))
            elif isinstance(r, numbers.Integral):
                dt = like if like is not None and like != DType.BOOL else DType.I64
                names.append(self._const(np.asarray(r, dt.numpy)))
            elif isinstance(r, numbers.Real):
                dt = like if like is not None and like.is_float else DType.F32
                names.append(self._const(np.asarray(r, dt.numpy)))
            else:
                raise OpError(f"the decomposition of ops.{self._owner} passes a "
                              f"{type(r).__name__} to ops.{rec.name}; give graph values, arrays "
                              f"or numbers")
        types = [None if n is None else self._builder.values[n].type for n in names]
        out_types = infer(rec, types, params)
        multi = isinstance(out_types, (tuple, list))
        outs = self._builder.add_node(rec.name, names, out_types if multi else [out_types],
                                      params)
        results = tuple(GraphValue(v.name, v.type) for v in outs)
        return results if multi else results[0]


def _outputs(op_name: str, result) -> tuple:
    outs = result if isinstance(result, (tuple, list)) else (result,)
    if not outs:
        raise OpError(f"the decomposition of ops.{op_name} returned nothing")
    return tuple(outs)


def build(op, input_types: list, params: Mapping[str, Any]) -> Graph:
    """The graph of ``op``'s decomposition for inputs of ``input_types`` (None for an absent
    optional input): graph inputs ``in0, in1, ...`` (one per present input, in order), outputs
    ``out0, out1, ...``. Raises `OpError` when the op has none."""
    if op.decomposition is None:
        raise OpError(f"ops.{op.name} has no decomposition")
    b = GraphBuilder()
    args = []
    for i, t in enumerate(input_types):
        args.append(None if t is None else GraphValue(b.add_input(f"in{i}", t).name, t))
    result = op.decomposition(GraphOps(b, op.name), *args, **dict(params))
    outs = _outputs(op.name, result)
    for o in outs:
        if not isinstance(o, GraphValue):
            raise OpError(f"the decomposition of ops.{op.name} must return graph values (results "
                          f"of ops calls or its inputs), got {type(o).__name__}")
    return b.finish([(f"out{k}", o.name) for k, o in enumerate(outs)])


def run_eager(op, inputs: list, params: Mapping[str, Any]):
    """The decomposition run eagerly with ``om.ops`` on Tensors (None for an absent input)."""
    from .ops_namespace import ops as om_ops

    if op.decomposition is None:
        raise OpError(f"ops.{op.name} has no decomposition")
    return op.decomposition(om_ops, *inputs, **dict(params))


__all__ = ["GraphValue", "GraphOps", "build", "run_eager"]
