"""Small building blocks for ONNX mappings (``onnx_mapping.py`` of each plugin).

They only call the export / import context APIs (documented in `onnx_export` and `onnx_import`),
so a plugin's mapping module imports neither ``onnx`` nor another plugin.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core.dtype import DType, promote_types
from ..core.symbolic import Dim

INT64_MAX = 2 ** 63 - 1
INT64_MIN = -(2 ** 63)


# -- export ---------------------------------------------------------------------------------------
def export_elementwise(onnx_type: str, compute: str = "out", **attrs) -> Callable:
    """Lower a broadcasting op to one ONNX node.

    ``compute="out"`` casts every input to the output dtype first (arithmetic on promoted
    dtypes); ``compute="promote"`` casts them to their promoted dtype (comparisons, whose output
    is bool)."""

    def export(ctx, node):
        ins = ctx.inputs(node)
        types = ctx.input_types(node)
        out_t = ctx.output_types(node)[0]
        if compute == "out":
            target = out_t.dtype
        else:
            target = promote_types(*(t.dtype for t in types if t is not None))
        ins = [ctx.cast(i, t.dtype, target) if t is not None else i for i, t in zip(ins, types)]
        ctx.make_node(onnx_type, ins, ctx.outputs(node), **attrs)

    return export


def export_chain(*steps: tuple) -> Callable:
    """Lower to a chain of one-input ONNX nodes: ``steps`` are (op_type, attrs) pairs."""

    def export(ctx, node):
        (x,) = ctx.inputs(node)
        t_in = ctx.input_types(node)[0]
        out_t = ctx.output_types(node)[0]
        cur = ctx.cast(x, t_in.dtype, out_t.dtype)
        for k, (op_type, attrs) in enumerate(steps):
            last = k == len(steps) - 1
            cur = ctx.make_node(op_type, [cur], ctx.outputs(node) if last else None, **attrs)

    return export


def scalar_const(ctx, value, dtype: DType) -> str:
    return ctx.const(np.array(value, dtype=dtype.numpy), hint="scalar")


def slice_bounds(start, stop, step):
    """ONNX Slice start/end for a Python slice (None bounds become the int64 extremes)."""
    step = 1 if step is None else step
    if start is None:
        start = 0 if step > 0 else INT64_MAX
    if stop is None:
        stop = INT64_MAX if step > 0 else INT64_MIN
    return start, stop, step


def dims_input(ctx, values) -> str:
    """A 1-D int64 ONNX tensor for ints and Dims (ctx.shape)."""
    return ctx.shape(list(values))


# -- import ---------------------------------------------------------------------------------------
def import_unary(op: str, keep_dtype: bool = True) -> Callable:
    """An ONNX one-input node becomes ``op``; the result is cast back to the input dtype when the
    OneModel op promotes (exp of an int tensor gives f32, ONNX keeps the type)."""

    def rule(ctx, node):
        x = node.inputs[0]
        out = ctx.emit(op, [x])
        t = ctx.type(x)
        if keep_dtype and ctx.type(out).dtype != t.dtype:
            out = ctx.cast(out, t.dtype)
        return [out]

    return rule


def import_binary(op: str, cast_back: bool = True) -> Callable:
    """An ONNX broadcasting binary node becomes ``op``; the result is cast to the first input's
    dtype when OneModel's promotion differs (ONNX keeps the input type)."""

    def rule(ctx, node):
        a, b = node.inputs[0], node.inputs[1]
        out = ctx.emit(op, [a, b])
        want = ctx.type(a).dtype
        if cast_back and ctx.type(out).dtype != want:
            out = ctx.cast(out, want)
        return [out]

    return rule


def import_variadic(op: str) -> Callable:
    """Max/Min/Sum of 1..n inputs as a left fold of a binary op."""

    def rule(ctx, node):
        ins = [i for i in node.inputs if i]
        if not ins:
            ctx.unsupported("needs at least one input")
        want = ctx.type(ins[0]).dtype
        cur = ins[0]
        if len(ins) == 1:
            return [ctx.cast(cur, want)]  # a new value of the same dtype
        for other in ins[1:]:
            cur = ctx.emit(op, [cur, other])
        if ctx.type(cur).dtype != want:
            cur = ctx.cast(cur, want)
        return [cur]

    return rule


def is_dim(v) -> bool:
    return isinstance(v, Dim)


__all__ = ["INT64_MAX", "INT64_MIN", "export_elementwise", "export_chain", "scalar_const",
           "slice_bounds", "dims_input", "import_unary", "import_binary", "import_variadic",
           "is_dim"]
