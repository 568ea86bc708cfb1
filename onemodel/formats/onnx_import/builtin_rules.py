"""Import rules that are not about any one op: ``Constant``, ``Shape``, ``Size``, ``Identity``."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...core.dtype import DType
from .context import ImportContext
from .entries import Const, _sym_or_const
from .node import OnnxNode


def _rule_constant(ctx: ImportContext, node: OnnxNode):
    a = node.attrs
    if "value" in a:
        return [Const(a["value"], node.outputs[0])]
    if "value_float" in a:
        return [Const(np.array(a["value_float"], dtype=np.float32), node.outputs[0])]
    if "value_floats" in a:
        return [Const(np.array(a["value_floats"], dtype=np.float32), node.outputs[0])]
    if "value_int" in a:
        return [Const(np.array(a["value_int"], dtype=np.int64), node.outputs[0])]
    if "value_ints" in a:
        return [Const(np.array(a["value_ints"], dtype=np.int64), node.outputs[0])]
    ctx.unsupported(f"Constant with attribute(s) {sorted(a)} (strings and sparse tensors are "
                    f"not supported)")


def _rule_shape(ctx: ImportContext, node: OnnxNode):
    shape = list(ctx.type(node.inputs[0]).shape)
    n = len(shape)
    start = node.attr("start", 0)
    end = node.attr("end", n)
    start = max(0, min(n, start + n if start < 0 else start))
    end = max(0, min(n, end + n if end < 0 else end))
    arr = np.empty(max(0, end - start), dtype=object)
    for i, d in enumerate(shape[start:end]):
        arr[i] = d
    return [_sym_or_const(arr, DType.I64)]


def _rule_size(ctx: ImportContext, node: OnnxNode):
    n: Any = 1
    for d in ctx.type(node.inputs[0]).shape:
        n = n * d
    arr = np.empty((), dtype=object)
    arr[()] = n
    return [_sym_or_const(arr, DType.I64)]


def _rule_identity(ctx: ImportContext, node: OnnxNode):
    return [ctx.entry(node.inputs[0])]


BUILTIN_RULES: dict[str, Callable] = {
    "Constant": _rule_constant,
    "Shape": _rule_shape,
    "Size": _rule_size,
    "Identity": _rule_identity,
}
