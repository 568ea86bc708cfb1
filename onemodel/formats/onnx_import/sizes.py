"""The size evaluator: shape arithmetic (``Shape``, ``Gather``, ``Concat``...)
on symbolic sizes.

A node of these op types whose inputs hold symbolic sizes is evaluated at import on object arrays
of ints and `Dim`s, so a ``Reshape`` to ``[batch, -1]`` imports with a symbolic shape param
instead of run-time shape nodes.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...core.dtype import DType
from ...core.symbolic import SymbolicError
from .context import ImportContext
from ..onnx_dtypes import ONNX_TO_DTYPE
from .entries import Const, Sym, _sym_or_const
from .errors import OnnxImportError
from .node import OnnxNode


def _norm_axis(axis: int, n: int) -> int:
    return axis + n if axis < 0 else axis


def _sym_gather(ctx, node, x, idx):
    axis = _norm_axis(node.attr("axis", 0), x.ndim)
    idx = np.asarray(idx).astype(np.int64)
    idx = np.where(idx < 0, idx + x.shape[axis], idx)
    return np.take(x, idx, axis=axis)


def _sym_concat(ctx, node, *xs):
    return np.concatenate([x.reshape(-1) if x.ndim == 0 else x for x in xs],
                          axis=node.attr("axis", 0))


def _sym_unsqueeze(ctx, node, x, axes=None):
    axes = ctx.ints(node, 1, "axes")
    out_rank = x.ndim + len(axes)
    for a in sorted(_norm_axis(a, out_rank) for a in axes):
        x = np.expand_dims(x, a)
    return x


def _sym_squeeze(ctx, node, x, axes=None):
    axes = ctx.ints(node, 1, "axes")
    if axes is None:
        return x.reshape([d for d in x.shape if d != 1])
    return np.squeeze(x, tuple(_norm_axis(a, x.ndim) for a in axes))


def _sym_slice(ctx, node, x, starts=None, ends=None, axes=None, steps=None):
    if any(node.input(i) and ctx.const(node.input(i)) is None for i in range(1, 5)):
        return None  # bounds from run-time sizes: the Slice rule keeps them symbolic params
    starts = ctx.ints(node, 1, "starts")
    ends = ctx.ints(node, 2, "ends")
    axes = ctx.ints(node, 3, "axes") or list(range(len(starts)))
    steps = ctx.ints(node, 4, "steps") or [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        n = x.shape[_norm_axis(a, x.ndim)]
        s = max(min(s, n), -n - 1)
        e = max(min(e, n), -n - 1)
        index[_norm_axis(a, x.ndim)] = slice(s, e, st)
    return x[tuple(index)]


def _sym_reshape(ctx, node, x, shape):
    shape = [int(v) for v in np.asarray(shape).reshape(-1)]
    shape = [x.shape[i] if v == 0 and not node.attr("allowzero", 0) else v
             for i, v in enumerate(shape)]
    return x.reshape(shape)


def _sym_cast(ctx, node, x):
    to = ONNX_TO_DTYPE.get(node.attr("to"))
    if to is None or not to.is_int:
        return None
    return x


def _binary(fn):
    def run(ctx, node, a, b):
        return np.frompyfunc(fn, 2, 1)(a, b)
    return run


def _floordiv(a, b):
    return a // b


def _sym_equal(ctx, node, a, b):
    from ...core.types import same_dim

    # a symbolic size equals only the same expression (it is never a given number, such as the
    # -1 torch.onnx compares shapes with)
    return np.frompyfunc(lambda x, y: bool(same_dim(x, y)), 2, 1)(a, b).astype(bool)


def _sym_where(ctx, node, cond, a, b):
    return np.where(np.asarray(cond).astype(bool), a, b)


SYMBOLIC_OPS: dict[str, Callable] = {
    "Equal": _sym_equal, "Where": _sym_where,
    "Gather": _sym_gather, "Concat": _sym_concat, "Unsqueeze": _sym_unsqueeze,
    "Squeeze": _sym_squeeze, "Slice": _sym_slice, "Reshape": _sym_reshape, "Cast": _sym_cast,
    "Identity": lambda ctx, node, x: x,
    "Add": _binary(lambda a, b: a + b), "Sub": _binary(lambda a, b: a - b),
    "Mul": _binary(lambda a, b: a * b), "Div": _binary(_floordiv),
    "Mod": _binary(lambda a, b: a % b),
    "Neg": lambda ctx, node, x: np.frompyfunc(lambda a: -a, 1, 1)(x),
}


def _try_symbolic(ctx: ImportContext, node: OnnxNode):
    """Evaluate a shape-arithmetic node with at least one symbolic input, or return None."""
    fn = SYMBOLIC_OPS.get(node.op_type)
    if fn is None or node.domain not in ("", "ai.onnx"):
        return None
    entries = [ctx.entries.get(i) if i else None for i in node.inputs]
    if not any(isinstance(e, Sym) for e in entries):
        return None
    arrays = []
    for _i, e in zip(node.inputs, entries):
        if e is None:
            arrays.append(None)
            continue
        if isinstance(e, Sym):
            arrays.append(e.array)
        elif isinstance(e, Const):
            arrays.append(e.array.astype(object))
        else:
            return None  # a run-time tensor: not shape arithmetic
    try:
        out = fn(ctx, node, *arrays)
    except OnnxImportError:
        raise
    except (SymbolicError, TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError,
            KeyError, OverflowError):
        return None  # not shape arithmetic OneModel follows: the op's import rule decides
    if out is None:
        return None
    if node.op_type == "Equal":
        return [Const(np.asarray(out, dtype=bool))]
    out = np.asarray(out, dtype=object)
    dtype = next((e.dtype for e in entries if isinstance(e, Sym)), DType.I64)
    if node.op_type == "Cast":
        dtype = ONNX_TO_DTYPE[node.attr("to")]
    return [_sym_or_const(out, dtype)]
