"""Ops whose output size depends on the input's values: ``nonzero``, ``unique``,
``masked_select``, and the ops behind boolean-mask indexing ``x[mask]`` / ``x[mask] = v``.

They run eagerly (inference gives the count as a *data size*, a symbol only the kernel's result
binds) and are refused while tracing: a graph with static shapes cannot record a size read from
data, and the tracer's message names the op and the user's line.
"""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import DType, Dim, OpError, TensorType, broadcast_shapes, is_static, norm_axis

DATA_DEPENDENT = ("its output size depends on the values of its input, which a graph with "
                  "static shapes cannot record; compute it outside the traced function, or use "
                  "a fixed-size form (om.ops.where(mask, x, 0) for a mask)")


def _count(op: str) -> Dim:
    """The data size of ``op``'s result (how many elements the data selects)."""
    return Dim.symbol(f"{op}_count")


# -- nonzero ----------------------------------------------------------------------------------------
def _nonzero_infer(x, as_tuple):
    n = _count("nonzero")
    if as_tuple:
        return tuple(TensorType(DType.I64, (n,)) for _ in range(max(x.ndim, 1)))
    return TensorType(DType.I64, (n, x.ndim))


def _nonzero(x, as_tuple):
    where = np.nonzero(np.atleast_1d(x))
    if as_tuple:
        return tuple(w.astype(np.int64) for w in where)
    if x.ndim == 0:
        return np.zeros((int(bool(x)), 0), np.int64)
    return np.stack(where, axis=1).astype(np.int64).reshape(-1, x.ndim)


def _nonzero_samples(rng):
    x = rng.standard_normal((3, 4))
    x[x < 0.3] = 0
    yield Sample(args=(x,), grad=False, name="matrix")
    yield Sample(args=(x,), params={"as_tuple": True}, grad=False, name="as_tuple")
    yield Sample(args=(np.array([True, False, True]),), grad=False, name="bool")
    yield Sample(args=(np.zeros((2, 0, 3)),), grad=False, name="empty")


nonzero = OpDef(
    name="nonzero", inputs=("x",), params={"as_tuple": Param(kind="bool", default=False)},
    kernel=_nonzero, infer=_nonzero_infer, vjp=None, samples=_nonzero_samples,
    untraceable=DATA_DEPENDENT, methods=("nonzero",),
    doc="The indices of the non-zero elements (torch.nonzero): an (n, ndim) int64 tensor in "
        "row-major order, or with as_tuple one 1-D tensor per axis (x[nonzero(x, as_tuple="
        "True)] in numpy's terms). Data-dependent: eager only.",
)


# -- unique -------------------------------------------------------------------------------------
def _unique_infer(x, sorted, return_inverse, return_counts, axis):
    k = _count("unique")
    if axis is None:
        values = TensorType(x.dtype, (k,))
        inverse = TensorType(DType.I64, x.shape)
    else:
        a = norm_axis(axis, x.ndim, "unique")
        values = TensorType(x.dtype, x.shape[:a] + (k,) + x.shape[a + 1:])
        inverse = TensorType(DType.I64, (x.shape[a],))
    outs = [values]
    if return_inverse:
        outs.append(inverse)
    if return_counts:
        outs.append(TensorType(DType.I64, (k,)))
    return tuple(outs) if len(outs) > 1 else values


def _unique(x, sorted, return_inverse, return_counts, axis):
    a = None if axis is None else norm_axis(axis, x.ndim, "unique")
    values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                               return_counts=True, axis=a)
    if not sorted:  # in order of first occurrence (ONNX Unique's sorted=0)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values = np.take(values, order, axis=0 if a is None else a)
        counts, inverse = counts[order], rank[inverse]
    inverse = inverse.reshape(x.shape if a is None else (x.shape[a],)).astype(np.int64)
    outs = [values]
    if return_inverse:
        outs.append(inverse)
    if return_counts:
        outs.append(counts.astype(np.int64))
    return tuple(outs) if len(outs) > 1 else values


def _unique_samples(rng):
    x = rng.integers(0, 4, (3, 5))
    yield Sample(args=(x,), grad=False, name="sorted")
    yield Sample(args=(x,), params={"return_inverse": True, "return_counts": True}, grad=False,
                 name="inverse_counts")
    yield Sample(args=(x,), params={"sorted": False, "return_inverse": True,
                                    "return_counts": True}, grad=False, name="first_occurrence")
    rows = np.array([[1, 2], [0, 1], [1, 2], [0, 0]])
    yield Sample(args=(rows,), params={"axis": 0, "return_inverse": True}, grad=False,
                 name="rows")
    yield Sample(args=(rng.standard_normal(4).round(0),), grad=False, name="floats")


unique = OpDef(
    name="unique", inputs=("x",),
    params={"sorted": Param(kind="bool", default=True,
                            doc="ascending; False keeps the order of first occurrence"),
            "return_inverse": Param(kind="bool", default=False,
                                    doc="also where each element went (x's shape, or the axis' "
                                        "length)"),
            "return_counts": Param(kind="bool", default=False, doc="also how often each occurs"),
            "axis": Param(kind="axis", default=None, optional=True,
                          doc="unique slices along this axis; None flattens")},
    kernel=_unique, infer=_unique_infer, vjp=None, samples=_unique_samples,
    untraceable=DATA_DEPENDENT, methods=("unique",),
    doc="The distinct values (torch.unique), with the inverse indices and counts when asked "
        "(values, inverse, counts in that order). Data-dependent: eager only.",
)


# -- masked_select ------------------------------------------------------------------------------
def _check_mask(op, mask):
    if mask.dtype != DType.BOOL:
        raise OpError(f"ops.{op}: mask must be a bool tensor, got {mask}")


def _masked_select_infer(x, mask):
    _check_mask("masked_select", mask)
    broadcast_shapes(x.shape, mask.shape, op="ops.masked_select")
    return TensorType(x.dtype, (_count("masked_select"),))


def _masked_select(x, mask):
    xb, mb = np.broadcast_arrays(x, mask)
    return xb[mb]


def _masked_select_vjp(ctx, g):
    x, mask = ctx.inputs
    xb, mb = np.broadcast_arrays(x, mask)
    gx = np.zeros(xb.shape, g.dtype)
    gx[mb] = g
    return gx, None  # the core sums a broadcast gradient back to x's shape


def _masked_samples(rng):
    x = rng.standard_normal((3, 4))
    yield Sample(args=(x, x > 0), name="same_shape")
    yield Sample(args=(x, np.array([True, False, False, True])), name="broadcast_mask")
    yield Sample(args=(rng.standard_normal(4), rng.standard_normal((2, 4)) > 0),
                 name="broadcast_x")


masked_select = OpDef(
    name="masked_select", inputs=("x", "mask"), kernel=_masked_select,
    infer=_masked_select_infer, vjp=_masked_select_vjp, samples=_masked_samples,
    untraceable=DATA_DEPENDENT, methods=("masked_select",),
    doc="The elements of x where mask is True, as a 1-D tensor (torch.masked_select; x and mask "
        "broadcast). Data-dependent: eager only.",
)


# -- x[mask] and x[mask] = value --------------------------------------------------------------------
def _region(op, x, mask):
    _check_mask(op, mask)
    k = mask.ndim
    if k == 0 or k > x.ndim or not all(
            not is_static(m, n) or m == n for m, n in zip(mask.shape, x.shape[:k])):
        raise OpError(f"ops.{op}: a boolean mask {mask} must match the leading axes of x {x}")
    return (_count("index_mask"),) + tuple(x.shape[k:])


def _index_mask_infer(x, mask):
    return TensorType(x.dtype, _region("index_mask", x, mask))


def _index_mask_vjp(ctx, g):
    x, mask = ctx.inputs
    gx = np.zeros(x.shape, g.dtype)
    gx[mask] = g
    return gx, None


def _index_mask_samples(rng):
    x = rng.standard_normal((3, 4, 2))
    yield Sample(args=(x, x > 0), name="full_mask")
    yield Sample(args=(x, np.array([True, False, True])), name="rows")
    yield Sample(args=(x, rng.standard_normal((3, 4)) > 0), name="leading_two")


index_mask = OpDef(
    name="index_mask", inputs=("x", "mask"), kernel=lambda x, mask: x[mask],
    infer=_index_mask_infer, vjp=_index_mask_vjp, samples=_index_mask_samples,
    untraceable=DATA_DEPENDENT, methods=("__getitem_mask__",),
    doc="x[mask] for a bool mask matching x's leading axes (PyTorch's and numpy's boolean "
        "indexing): the selected slices stacked along a new first axis. Data-dependent: eager "
        "only.",
)


def _index_put_mask_infer(x, mask, value):
    rest = _region("index_put_mask", x, mask)[1:]
    if value.ndim > len(rest) + 1:
        raise OpError(f"ops.index_put_mask: a value {value} has more axes than the selected "
                      f"slices (count, {', '.join(map(str, rest))})")
    # the count of slices is known only from the mask's data: the kernel checks that axis
    broadcast_shapes(rest, value.shape[max(value.ndim - len(rest), 0):], op="ops.index_put_mask")
    return TensorType(x.dtype, x.shape)


def _index_put_mask(x, mask, value):
    out = x.copy()
    region = (int(mask.sum()),) + x.shape[mask.ndim:]
    try:
        out[mask] = np.broadcast_to(value, region)
    except ValueError:
        raise OpError(f"ops.index_put_mask: a value of shape {list(value.shape)} cannot fill the "
                      f"{region[0]} selected slices of shape {list(region)}") from None
    return out


def _index_put_mask_vjp(ctx, g):
    x, mask, value = ctx.inputs
    gx = gv = None
    if ctx.needs_grad[0]:
        gx = g.copy()
        gx[mask] = 0
    if ctx.needs_grad[2]:
        gv = g[mask]  # the region's shape; the core sums the broadcast back to value's
    return gx, None, gv


def _index_put_mask_samples(rng):
    x = rng.standard_normal((3, 4))
    yield Sample(args=(x, x > 0, np.array(0.5)), name="scalar")
    yield Sample(args=(x, np.array([True, False, True]), rng.standard_normal(4)), name="rows")
    yield Sample(args=(x, np.array([False, True, True]), rng.standard_normal((2, 4))),
                 name="per_slice")


index_put_mask = OpDef(
    name="index_put_mask", inputs=("x", "mask", "value"), kernel=_index_put_mask,
    infer=_index_put_mask_infer, vjp=_index_put_mask_vjp, samples=_index_put_mask_samples,
    untraceable=DATA_DEPENDENT, methods=("__setitem_mask__",),
    doc="A copy of x with x[mask] = value (value broadcast to the selected slices); "
        "Tensor.__setitem__ writes it back. Data-dependent: eager only.",
)

OPS = (nonzero, unique, masked_select, index_mask, index_put_mask)
