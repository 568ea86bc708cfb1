"""conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1), NCHW (PyTorch's).

Forward and backward are each one (batched) GEMM over an im2col matrix built from strided views:

* forward: ``cols[n, g, (c, i, j), l] = xpad[n, g*Cg + c, ho*sh + i*dh, wo*sw + j*dw]`` (one copy
  of a strided view, no loops) and ``out[n, g] = W[g] @ cols[n, g]``;
* weight gradient: ``gW[g] = sum_n grad[n, g] @ cols[n, g].T`` (the saved cols);
* input gradient: ``gcols[n, g] = W[g].T @ grad[n, g]`` then col2im, an accumulation over the
  ``kh*kw`` kernel offsets (each a whole-tensor strided add, no loops over pixels or channels).

With stride 1 the im2col works on the flattened padded image ("implicit padding columns"): output
rows are computed over the full padded width ``Wp`` and the ``Wp - Wo`` extra columns are dropped,
which turns every window of the im2col and every add of the col2im into one long contiguous run.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from onemodel.core import TensorType
from onemodel.core.symbolic import Dim
from onemodel.registry import OpDef, OpTraits, Param, Sample

from ._common import (as_dtype, check_dim, check_positive_size, float_dtype, pair,
                      require_window, result_dtype)
from .costs import conv2d_cost


def _params(stride, padding, dilation):
    return pair("conv2d", "stride", stride, 1), pair("conv2d", "padding", padding, 0), \
        pair("conv2d", "dilation", dilation, 1)


def _out_size(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _infer(x: TensorType, weight: TensorType, bias: TensorType | None, stride, padding, dilation,
           groups) -> TensorType:
    dtype = float_dtype("conv2d", x, weight, bias)
    if x.ndim != 4 or weight.ndim != 4:
        raise ValueError(f"expects x (N, C, H, W) and weight (out, in/groups, kh, kw), got x {x}, "
                         f"weight {weight}")
    (sh, sw), (ph, pw), (dh, dw) = _params(stride, padding, dilation)
    if groups < 1:
        raise ValueError(f"groups must be >= 1, got {groups}")
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    check_dim("conv2d", f"the channel count of x {x} (weight {weight}, groups={groups})", c,
              cg * groups)
    if not isinstance(o, Dim) and o % groups:
        raise ValueError(f"the output channels of weight {weight} are not divisible by "
                         f"groups={groups}")
    if bias is not None:
        if bias.ndim != 1:
            raise ValueError(f"bias must be 1-d (out,), got {bias}")
        check_dim("conv2d", f"the size of bias {bias}", bias.shape[0], o)
    require_window("conv2d", "height", h, kh, dh, ph, ph)
    require_window("conv2d", "width", w, kw, dw, pw, pw)
    ho = _out_size(h, kh, sh, ph, dh)
    wo = _out_size(w, kw, sw, pw, dw)
    check_positive_size("conv2d", "the output height", ho)
    check_positive_size("conv2d", "the output width", wo)
    return TensorType(dtype, (n, o, ho, wo))


class _Geo:
    """Sizes of one convolution (concrete ints) and the im2col layout it uses."""

    __slots__ = ("n", "c", "h", "w", "o", "cg", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw",
                 "groups", "hp", "wp", "ho", "wo", "flat", "lx", "wx")

    def __init__(self, xshape, wshape, stride, padding, dilation, groups):
        self.n, self.c, self.h, self.w = xshape
        self.o, self.cg, self.kh, self.kw = wshape
        (self.sh, self.sw), (self.ph, self.pw), (self.dh, self.dw) = _params(stride, padding,
                                                                               dilation)
        self.groups = groups
        self.hp, self.wp = self.h + 2 * self.ph, self.w + 2 * self.pw
        self.ho = _out_size(self.h, self.kh, self.sh, self.ph, self.dh)
        self.wo = _out_size(self.w, self.kw, self.sw, self.pw, self.dw)
        # stride 1: rows of the output are computed over the padded width (flat layout)
        self.flat = self.sh == 1 and self.sw == 1
        self.wx = self.wp if self.flat else self.wo
        self.lx = self.ho * self.wx

    @property
    def k(self) -> int:
        return self.cg * self.kh * self.kw


def _im2col(x: np.ndarray, geo: _Geo) -> np.ndarray:
    """cols of shape (N, G, Cg*kh*kw, Lx) (C-contiguous)."""
    n, c = geo.n, geo.c
    it = x.itemsize
    if geo.flat:
        # padded image flattened per channel, with slack so that the last window stays inside
        slack = (geo.kw - 1) * geo.dw
        buf = np.zeros((n, c, geo.hp * geo.wp + slack), dtype=x.dtype)
        img = buf[:, :, :geo.hp * geo.wp].reshape(n, c, geo.hp, geo.wp)
        img[:, :, geo.ph:geo.ph + geo.h, geo.pw:geo.pw + geo.w] = x
        sn, sc, _ = buf.strides
        view = as_strided(buf, shape=(n, c, geo.kh, geo.kw, geo.lx),
                          strides=(sn, sc, geo.dh * geo.wp * it, geo.dw * it, it),
                          writeable=False)
    else:
        if geo.ph or geo.pw:
            xp = np.zeros((n, c, geo.hp, geo.wp), dtype=x.dtype)
            xp[:, :, geo.ph:geo.ph + geo.h, geo.pw:geo.pw + geo.w] = x
        else:
            xp = x
        sn, sc, sy, sx = xp.strides
        view = as_strided(xp, shape=(n, c, geo.kh, geo.kw, geo.ho, geo.wo),
                          strides=(sn, sc, geo.dh * sy, geo.dw * sx, geo.sh * sy, geo.sw * sx),
                          writeable=False)
    cols = np.ascontiguousarray(view)
    return cols.reshape(n, geo.groups, geo.k, geo.lx)


def _col2im(gcols: np.ndarray, geo: _Geo) -> np.ndarray:
    """The adjoint of `_im2col`: gcols (N, G, K, Lx) summed back into an (N, C, H, W) array."""
    n, c = geo.n, geo.c
    gcols = gcols.reshape(n, c, geo.kh, geo.kw, geo.lx)
    if geo.flat:
        slack = (geo.kw - 1) * geo.dw
        buf = np.zeros((n, c, geo.hp * geo.wp + slack), dtype=gcols.dtype)
        for i in range(geo.kh):
            for j in range(geo.kw):
                off = i * geo.dh * geo.wp + j * geo.dw
                buf[:, :, off:off + geo.lx] += gcols[:, :, i, j]
        img = buf[:, :, :geo.hp * geo.wp].reshape(n, c, geo.hp, geo.wp)
    else:
        img = np.zeros((n, c, geo.hp, geo.wp), dtype=gcols.dtype)
        g6 = gcols.reshape(n, c, geo.kh, geo.kw, geo.ho, geo.wo)
        for i in range(geo.kh):
            for j in range(geo.kw):
                y0, x0 = i * geo.dh, j * geo.dw
                img[:, :, y0:y0 + geo.sh * (geo.ho - 1) + 1:geo.sh,
                    x0:x0 + geo.sw * (geo.wo - 1) + 1:geo.sw] += g6[:, :, i, j]
    if geo.ph or geo.pw or geo.flat:
        return np.ascontiguousarray(img[:, :, geo.ph:geo.ph + geo.h, geo.pw:geo.pw + geo.w])
    return img


def _forward(x, weight, bias, stride, padding, dilation, groups):
    dt = result_dtype(x, weight, bias)
    x, weight = as_dtype(x, dt), as_dtype(weight, dt)
    geo = _Geo(x.shape, weight.shape, stride, padding, dilation, groups)
    cols = _im2col(x, geo)
    w3 = weight.reshape(geo.groups, geo.o // geo.groups, geo.k)
    out = np.matmul(w3, cols)  # (N, G, Og, Lx)
    out = out.reshape(geo.n, geo.o, geo.ho, geo.wx)
    if bias is not None:
        out += as_dtype(bias, dt).reshape(-1, 1, 1)
    if geo.flat and geo.wx != geo.wo:
        out = np.ascontiguousarray(out[..., :geo.wo])
    return out, (cols, geo)


def _kernel(*args, **params):
    return _forward(*args, **params)[0]


def _vjp(ctx, g):
    x, weight, bias = ctx.inputs
    cols, geo = ctx.saved
    need_x, need_w, need_b = ctx.needs_grad
    dt = cols.dtype
    g = as_dtype(g, dt)
    gb = g.sum(axis=(0, 2, 3)) if (need_b and bias is not None) else None
    if geo.flat and geo.wx != geo.wo:
        g_ext = np.zeros((geo.n, geo.o, geo.ho, geo.wx), dtype=dt)  # zeros on the extra columns
        g_ext[..., :geo.wo] = g
        g = g_ext
    og = geo.o // geo.groups
    g4 = np.ascontiguousarray(g).reshape(geo.n, geo.groups, og, geo.lx)
    gx = gw = None
    if need_w:  # per sample cols @ g^T (the faster orientation for BLAS), summed over N
        gwt = np.matmul(cols, g4.transpose(0, 1, 3, 2)).sum(axis=0)  # (G, K, Og)
        gw = gwt.transpose(0, 2, 1).reshape(weight.shape)
    if need_x:
        w3t = np.ascontiguousarray(as_dtype(weight, dt).reshape(geo.groups, og, geo.k)
                                   .transpose(0, 2, 1))
        gcols = np.matmul(w3t, g4)  # (N, G, K, Lx)
        gx = _col2im(gcols, geo)
    return gx, gw, gb


def _samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 2, 5, 5)), r((3, 2, 3, 3)), r(3)), name="basic")
    yield Sample(args=(r((1, 2, 7, 6)), r((2, 2, 3, 3)), r(2)), params={"stride": 2},
                 name="stride2")
    yield Sample(args=(r((1, 2, 4, 4)), r((3, 2, 3, 3)), r(3)), params={"padding": 1},
                 name="padding1")
    yield Sample(args=(r((1, 2, 7, 7)), r((2, 2, 3, 3)), None), params={"dilation": 2},
                 name="dilation2")
    yield Sample(args=(r((1, 4, 4, 4)), r((4, 2, 3, 3)), r(4)), params={"groups": 2,
                                                                        "padding": 1},
                 name="groups2")
    yield Sample(args=(r((2, 2, 5, 6)), r((2, 2, 2, 3)), None),
                 params={"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)}, name="pairs")
    yield Sample(args=(r((1, 2, 6, 6)), r((2, 1, 3, 3)), None),
                 params={"stride": 2, "padding": 1, "dilation": 2, "groups": 2}, name="all")


conv2d = OpDef(
    name="conv2d", inputs=("x", "weight", "bias?"),
    params={"stride": Param(kind="ints", default=1, doc="int or (sh, sw)"),
            "padding": Param(kind="ints", default=0, doc="int or (ph, pw): zeros on both sides"),
            "dilation": Param(kind="ints", default=1, doc="int or (dh, dw)"),
            "groups": Param(kind="int", default=1)},
    kernel=_kernel, forward=_forward, infer=_infer, vjp=_vjp, samples=_samples,
    traits=OpTraits(batch="rows", cost=conv2d_cost),
    doc="2-d cross-correlation over NCHW input with weight (out, in/groups, kh, kw), as "
        "torch.nn.functional.conv2d.",
)

OPS = (conv2d,)
