"""Matrix products."""
from __future__ import annotations

import math

import numpy as np

from onemodel.registry import OpCost, OpDef, OpTraits, Sample

from ._common import (OpError, TensorType, broadcast_shapes, common, promote_types, same_dim)


def _matmul_infer(a: TensorType, b: TensorType) -> TensorType:
    """numpy/PyTorch matmul: 1-D operands gain (and lose) a unit axis; batch axes broadcast."""
    if a.ndim == 0 or b.ndim == 0:
        raise OpError(f"ops.matmul: both operands need at least one axis, got {a} and {b}")
    sa, sb = tuple(a.shape), tuple(b.shape)
    a2 = (1,) + sa if len(sa) == 1 else sa
    b2 = sb + (1,) if len(sb) == 1 else sb
    if not same_dim(a2[-1], b2[-2]):
        raise OpError(f"ops.matmul: shapes {a} and {b} do not match: the last axis of the first "
                      f"({a2[-1]}) must equal the {'only' if len(sb) == 1 else 'second-to-last'} "
                      f"axis of the second ({b2[-2]})")
    batch = broadcast_shapes(a2[:-2], b2[:-2], op="ops.matmul")
    out = batch + ((a2[-2],) if len(sa) > 1 else ()) + ((b2[-1],) if len(sb) > 1 else ())
    return TensorType(promote_types(a.dtype, b.dtype), out)


def _matmul(a, b):
    dt = common(a, b)
    return np.matmul(a, b, dtype=dt)


def _matmul_vjp(ctx, g):
    a, b = ctx.inputs
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = g  # restore the unit axes of 1-D operands: the column's first, then the row's
    if b.ndim == 1:
        g2 = np.expand_dims(g2, -1)
    if a.ndim == 1:
        g2 = np.expand_dims(g2, -2)
    ga = gb = None
    if ctx.needs_grad[0]:
        ga = np.matmul(g2, np.swapaxes(b2, -1, -2))
        if a.ndim == 1:
            ga = ga[..., 0, :]  # batch axes left over are summed by the core
    if ctx.needs_grad[1]:
        gb = np.matmul(np.swapaxes(a2, -1, -2), g2)
        if b.ndim == 1:
            gb = gb[..., 0]
    return ga, gb


def _matmul_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((3, 4)), r((4, 2))), name="2d")
    yield Sample(args=(r((2, 1, 3, 4)), r((3, 4, 2))), name="batch_broadcast")
    yield Sample(args=(r((4,)), r((2, 4, 3))), name="vec_mat")
    yield Sample(args=(r((2, 3, 4)), r((4,))), name="mat_vec")
    yield Sample(args=(r((4,)), r((4,))), name="dot")
    yield Sample(args=(np.arange(6, dtype=np.int64).reshape(2, 3), r((3, 2))), grad=False,
                 name="promote")


def matmul_batch(a, b):
    """Rows of ``a`` are independent when ``b`` is one matrix; with batched ``b`` the batch axes
    split as broadcasting ones."""
    if len(a.shape) >= 2 and len(b.shape) <= 2:
        return "rows"
    return "broadcast" if len(b.shape) >= 3 else None


def matmul_cost(ins, outs, params) -> OpCost:
    """2 FLOPs per term of every output element (the contracted size from ``a``)."""
    a = ins[0]
    ta = bool(params.get("transpose_a", False))
    k = int(a.shape[-2] if ta else a.shape[-1]) if len(a.shape) >= 2 else int(a.shape[0])
    return OpCost(flops=2.0 * math.prod(int(d) for d in outs[0].shape) * k)


matmul = OpDef(
    name="matmul", inputs=("a", "b"), kernel=_matmul, infer=_matmul_infer, vjp=_matmul_vjp,
    samples=_matmul_samples,
    methods=("matmul", "__matmul__"), reflected=("__rmatmul__",),
    traits=OpTraits(batch=lambda params, types: matmul_batch(*types[:2]), cost=matmul_cost),
    doc="Matrix product with numpy/PyTorch semantics: 1-D x 1-D is a dot product, a 1-D "
        "operand is a row (first) or column (second) vector whose unit axis is dropped, and "
        "leading batch axes broadcast.",
)

OPS = (matmul,)
