"""PyTorch's scatter and scatter_add: the inverse of gather. For axis 0,
``out[index[i][j]][j] = src[i][j]`` (scatter) or ``+=`` (scatter_add); index has x's rank and is
no larger than src anywhere, nor than x outside axis. Only src's leading ``index.shape`` part is
read, as in PyTorch."""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import OpError, TensorType, is_static, norm_axis
from .index import _check_indices


def _infer(op):
    def infer(x, index, src, axis):
        _check_indices(op, index)
        if not (x.ndim == index.ndim == src.ndim):
            raise OpError(f"ops.{op}: x {x}, index {index} and src {src} must have one rank")
        if x.ndim == 0:
            raise OpError(f"ops.{op}: x must have at least one axis, got {x}")
        a = norm_axis(axis, x.ndim, op)
        for i, (d, s, n) in enumerate(zip(index.shape, src.shape, x.shape)):
            if is_static(d, s) and d > s:
                raise OpError(f"ops.{op}: index {index} is larger than src {src} on axis {i}")
            if i != a and is_static(d, n) and d > n:
                raise OpError(f"ops.{op}: index {index} is larger than x {x} on axis {i}")
        return TensorType(x.dtype, x.shape)
    return infer


def _positions(op, x, index, axis):
    """The numpy key that sends each entry of index to its place in x."""
    a = norm_axis(axis, x.ndim, op)
    n = x.shape[a]
    if index.size and (index.min() < 0 or index.max() >= n):
        raise OpError(f"ops.{op}: index holds {int(index.min())}..{int(index.max())}, out of "
                      f"range 0..{n - 1} of axis {axis} (negative positions are refused, as in "
                      f"PyTorch)")
    grid = list(np.indices(index.shape, sparse=True))
    grid[a] = index
    return tuple(grid)


def _head(src, index):
    return src[tuple(slice(0, d) for d in index.shape)]


def _scatter(x, index, src, axis):
    out = x.copy()
    out[_positions("scatter", x, index, axis)] = _head(src, index)
    return out


def _scatter_add(x, index, src, axis):
    out = x.copy()
    np.add.at(out, _positions("scatter_add", x, index, axis), _head(src, index).astype(x.dtype))
    return out


def _src_grad(g, src, index, key):
    gs = np.zeros(src.shape, g.dtype)
    gs[tuple(slice(0, d) for d in index.shape)] = g[key]
    return gs


def _scatter_vjp(ctx, g):
    x, index, src = ctx.inputs
    key = _positions("scatter", x, index, ctx.params["axis"])
    gx = g.copy()
    gx[key] = 0  # overwritten entries carry no gradient to x
    return gx, None, _src_grad(g, src, index, key)


def _scatter_add_vjp(ctx, g):
    x, index, src = ctx.inputs
    key = _positions("scatter_add", x, index, ctx.params["axis"])
    return g, None, _src_grad(g, src, index, key)


def _samples(rng, unique):
    r = rng.standard_normal
    if unique:  # scatter with repeated positions keeps an unspecified one (PyTorch too)
        idx0 = np.array([[2, 0, 1], [0, 2, 0]])
    else:
        idx0 = np.array([[2, 0, 2], [2, 2, 0]])
    yield Sample(args=(r((3, 3)), idx0, r((2, 3))), params={"axis": 0}, name="axis0")
    yield Sample(args=(r((2, 4)), np.array([[3, 1], [0, 2]]), r((2, 3))), params={"axis": 1},
                 name="axis1_larger_src")
    yield Sample(args=(np.zeros((2, 3), np.int64), np.array([[1], [2]]),
                       np.array([[5], [7]], np.int64)), params={"axis": -1}, name="int")


_AXIS = {"axis": Param(kind="axis")}
_SIGNATURE = ("x", "axis", "index", "src")

scatter = OpDef(
    name="scatter", inputs=("x", "index", "src"), params=dict(_AXIS), signature=_SIGNATURE,
    kernel=_scatter, infer=_infer("scatter"), vjp=_scatter_vjp,
    samples=lambda rng: _samples(rng, True), methods=("scatter",), inplace=("scatter_",),
    doc="A copy of x with src's entries written at index along axis (torch.scatter(x, dim, "
        "index, src)); src is cast to x's dtype. Positions written twice keep one value. "
        "No gradient for index.",
)

scatter_add = OpDef(
    name="scatter_add", inputs=("x", "index", "src"), params=dict(_AXIS), signature=_SIGNATURE,
    kernel=_scatter_add, infer=_infer("scatter_add"), vjp=_scatter_add_vjp,
    samples=lambda rng: _samples(rng, False), methods=("scatter_add",),
    inplace=("scatter_add_",),
    doc="A copy of x with src's entries added at index along axis (torch.scatter_add(x, dim, "
        "index, src)); repeated positions accumulate. No gradient for index.",
)

OPS = (scatter, scatter_add)
