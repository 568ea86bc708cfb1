"""grid_sample, PyTorch's: read the input at the normalised points of a grid.

Along each spatial axis a grid coordinate in [-1, 1] maps to a source position (PyTorch's
``align_corners`` rule) and gives a few taps (index, weight); the output is the sum over the
taps' combinations of the product of their weights times the input there. Out-of-range taps
read zero, the border or the mirror (``padding_mode``). As in PyTorch, the bilinear and nearest
modes pad the source position, bicubic pads each tap's index. The taps also carry the weights'
derivatives, so the gradient reaches both the input (the taps' weights, scattered back) and
the grid. Any number of spatial axes (PyTorch: 2, or 3 without bicubic).
"""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.errors import OpError
from onemodel.registry import OpDef, Param, Sample

from ._common import as_dtype, check_dim, float_dtype, result_dtype

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
_A = -0.75  # PyTorch's (and ONNX's) cubic convolution coefficient


def _reflect(u, lo2, hi2):
    """PyTorch's reflect_coordinates over [lo2 / 2, hi2 / 2], with its derivative's sign."""
    if lo2 == hi2:
        return np.zeros_like(u), np.zeros_like(u)
    lo, span = lo2 / 2.0, (hi2 - lo2) / 2.0
    d = u - lo
    sign = np.where(d < 0, -1.0, 1.0)
    d = np.abs(d)
    extra = np.fmod(d, span)
    even = np.floor(d / span) % 2 == 0
    return np.where(even, extra + lo, span - extra + lo), np.where(even, sign, -sign)


def _pad_coord(u, size, padding_mode, align_corners):
    """The source position after padding and d(position)/du."""
    if padding_mode == "zeros":
        return u, np.ones_like(u)
    deriv = np.ones_like(u)
    if padding_mode == "reflection":
        lo2, hi2 = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        u, deriv = _reflect(u, lo2, hi2)
    inside = (u > 0) & (u < size - 1)
    return np.clip(u, 0, size - 1), np.where(inside, deriv, 0.0)


def _pad_index(i, size, padding_mode, align_corners):
    """Integer tap indices padded (bicubic) and whether each reads the input."""
    if padding_mode == "zeros":
        return i, (i >= 0) & (i < size)
    p, _ = _pad_coord(i.astype(np.float64), size, padding_mode, align_corners)
    return p.astype(np.int64), np.ones(i.shape, bool)


def _cubic(t):
    """The 4 cubic weights of fractional offset t and their derivatives in t."""
    def near(x):  # |x| <= 1
        return ((_A + 2) * x - (_A + 3)) * x * x + 1, (3 * (_A + 2) * x - 2 * (_A + 3)) * x

    def far(x):  # 1 < |x| < 2
        return (((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A,
                (3 * _A * x - 10 * _A) * x + 8 * _A)

    w0, d0 = far(t + 1)
    w1, d1 = near(t)
    w2, d2 = near(1 - t)
    w3, d3 = far(2 - t)
    return [w0, w1, w2, w3], [d0, d1, -d2, -d3]


def axis_taps(g, size, mode, padding_mode, align_corners):
    """One spatial axis: a list of (index, valid, weight, d weight / d grid) per tap."""
    g = g.astype(np.float64)
    if align_corners:
        u, du = (g + 1) / 2 * (size - 1), (size - 1) / 2
    else:
        u, du = ((g + 1) * size - 1) / 2, size / 2
    if mode == "bicubic":
        i0 = np.floor(u)
        ws, ds = _cubic(u - i0)
        taps = []
        for k in range(4):
            idx, ok = _pad_index(i0.astype(np.int64) + k - 1, size, padding_mode, align_corners)
            taps.append((idx, ok, ws[k], ds[k] * du))
        return taps
    src, dsrc = _pad_coord(u, size, padding_mode, align_corners)
    if mode == "nearest":
        idx = np.rint(src).astype(np.int64)
        return [(idx, (idx >= 0) & (idx < size), np.ones_like(src), np.zeros_like(src))]
    i0 = np.floor(src)
    t = src - i0
    i0 = i0.astype(np.int64)
    return [(i0, (i0 >= 0) & (i0 < size), 1 - t, -dsrc * du),
            (i0 + 1, (i0 + 1 >= 0) & (i0 + 1 < size), t, dsrc * du)]


def _all_taps(x, grid, mode, padding_mode, align_corners):
    spatial = x.shape[2:]
    n = len(spatial)
    return [axis_taps(grid[..., n - 1 - a], spatial[a], mode, padding_mode, align_corners)
            for a in range(n)]


def _combos(taps):
    """Each combination of one tap per axis, as the list of the chosen taps."""
    for combo in np.ndindex(*[len(t) for t in taps]):
        yield [taps[a][k] for a, k in enumerate(combo)]


def _gather_setup(x, chosen):
    """Whether every tap of the combination reads the input, and its flat index (N, P)."""
    spatial = x.shape[2:]
    ok = np.logical_and.reduce([c[1] for c in chosen])
    idx = [np.where(ok, c[0], 0) for c in chosen]
    flat = np.ravel_multi_index(idx, spatial).reshape(x.shape[0], -1)  # (N, P)
    return ok.reshape(x.shape[0], -1), flat


def _kernel(x, grid, mode, padding_mode, align_corners):
    dt = result_dtype(x, grid)
    n_, c_ = x.shape[:2]
    out_sp = grid.shape[1:-1]
    xf = as_dtype(x, np.float64).reshape(n_, c_, -1)
    y = np.zeros((n_, c_, int(np.prod(out_sp, dtype=np.int64))))
    for chosen in _combos(_all_taps(x, grid, mode, padding_mode, align_corners)):
        ok, flat = _gather_setup(x, chosen)
        w = np.prod([c[2] for c in chosen], axis=0).reshape(n_, -1) * ok
        y += np.take_along_axis(xf, flat[:, None, :], axis=2) * w[:, None, :]
    return y.reshape(n_, c_, *out_sp).astype(dt)


def _vjp(ctx, g):
    x, grid = ctx.inputs
    p = ctx.params
    n_, c_ = x.shape[:2]
    nsp = x.ndim - 2
    xf = as_dtype(x, np.float64).reshape(n_, c_, -1)
    gf = np.asarray(g, np.float64).reshape(n_, c_, -1)
    gx = np.zeros_like(xf)
    gg = np.zeros(grid.shape, np.float64).reshape(n_, -1, nsp)
    rows = np.arange(n_)[:, None, None]
    chans = np.arange(c_)[None, :, None]
    for chosen in _combos(_all_taps(x, grid, p["mode"], p["padding_mode"],
                                    p["align_corners"])):
        ok, flat = _gather_setup(x, chosen)
        ws = [c[2].reshape(n_, -1) * ok for c in chosen]
        w = np.prod(ws, axis=0)
        np.add.at(gx, (rows, chans, flat[:, None, :]), gf * w[:, None, :])
        seen = (np.take_along_axis(xf, flat[:, None, :], axis=2) * gf).sum(axis=1)  # (N, P)
        for a in range(nsp):
            others = np.prod([ws[b] for b in range(nsp) if b != a], axis=0) if nsp > 1 else 1.0
            gg[:, :, nsp - 1 - a] += seen * chosen[a][3].reshape(n_, -1) * others * ok
    dx, dg = result_dtype(x), result_dtype(grid)
    return gx.reshape(x.shape).astype(dx), gg.reshape(grid.shape).astype(dg)


def _infer(x, grid, mode, padding_mode, align_corners):
    dtype = float_dtype("grid_sample", x, grid)
    nsp = x.ndim - 2
    if nsp < 1:
        raise OpError(f"ops.grid_sample: expects input (N, C, *spatial), got {x}")
    if grid.ndim != x.ndim:
        raise OpError(f"ops.grid_sample: grid must be (N, *output_spatial, {nsp}) for input "
                      f"{x}, got {grid}")
    check_dim("grid_sample", f"the last axis of grid {grid}", grid.shape[-1], nsp)
    check_dim("grid_sample", f"the batch of grid {grid}", grid.shape[0], x.shape[0])
    return TensorType(dtype, (x.shape[0], x.shape[1], *grid.shape[1:-1]))


def _samples(rng):
    def grid(*shape, spread=1.2):
        return rng.uniform(-spread, spread, shape)

    r = rng.standard_normal
    for mode in MODES:
        for pad in PADDINGS:
            for ac in (False, True):
                # ONNX's cubic mode pads the source position, torch's each tap: no ONNX form
                yield Sample(args=(r((2, 2, 4, 5)), grid(2, 3, 2, 2)),
                             params={"mode": mode, "padding_mode": pad, "align_corners": ac},
                             name=f"{mode}_{pad}_{'ac' if ac else 'noac'}",
                             onnx=not (mode == "bicubic" and pad != "zeros"))
    yield Sample(args=(r((1, 2, 3, 4, 3)), grid(1, 2, 2, 3, 3)),
                 params={"mode": "bilinear", "padding_mode": "reflection"}, name="trilinear")
    yield Sample(args=(r((1, 1, 3, 4, 2)), grid(1, 2, 1, 2, 3)),
                 params={"mode": "nearest", "padding_mode": "border", "align_corners": True},
                 name="volumetric_nearest")
    yield Sample(args=(r((1, 2, 1, 5)), grid(1, 2, 3, 2, spread=3.0)),
                 params={"mode": "bilinear", "padding_mode": "reflection"},
                 name="reflection_far_height_1")


grid_sample = OpDef(
    name="grid_sample", inputs=("input", "grid"),
    params={"mode": Param(kind="str", default="bilinear", choices=MODES),
            "padding_mode": Param(kind="str", default="zeros", choices=PADDINGS),
            "align_corners": Param(kind="bool", default=False,
                                   doc="-1 and 1 are the corner pixels' centres, not edges")},
    kernel=_kernel, infer=_infer, vjp=_vjp, samples=_samples,
    doc="Sample input (N, C, *spatial) at grid (N, *out, ndim) of normalised [-1, 1] points "
        "(x first): (N, C, *out) (torch.nn.functional.grid_sample; any number of spatial "
        "axes, bicubic included).",
)

OPS = (grid_sample,)
