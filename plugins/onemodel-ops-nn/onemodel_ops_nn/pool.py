"""max_pool2d and avg_pool2d over NCHW input (PyTorch's defaults: stride = kernel_size, zero
padding counted in the average, padding at most half the kernel).

Both are separable: a pass along the width over the ``kw`` window offsets, then one along the
height over the ``kh`` offsets, each a handful of whole-tensor strided ufunc calls (no loops over
pixels or channels). Max pooling keeps the arg-max offsets of both passes (PyTorch's tie rule:
the first maximum in row-major window order) and routes the gradient back through them.
"""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.registry import OpDef, OpTraits, Param, Sample

from ._common import check_positive_size, float_dtype, pair
from .costs import pool_cost


def _pool_params(op, kernel_size, stride, padding):
    k = pair(op, "kernel_size", kernel_size, 1)
    s = pair(op, "stride", kernel_size if stride is None or stride == () else stride, 1)
    p = pair(op, "padding", padding, 0)
    for kk, pp in zip(k, p):
        if isinstance(kk, int) and isinstance(pp, int) and pp > kk // 2:
            raise ValueError(f"padding {padding!r} must be at most half of kernel_size "
                             f"{kernel_size!r}")
    return k, s, p


def _pool_infer(op):
    def infer(x: TensorType, kernel_size, stride, padding) -> TensorType:
        dtype = float_dtype(op, x)
        if x.ndim != 4:
            raise ValueError(f"expects x (N, C, H, W), got {x}")
        (kh, kw), (sh, sw), (ph, pw) = _pool_params(op, kernel_size, stride, padding)
        n, c, h, w = x.shape
        ho = (h + 2 * ph - kh) // sh + 1
        wo = (w + 2 * pw - kw) // sw + 1
        check_positive_size(op, "the output height", ho)
        check_positive_size(op, "the output width", wo)
        return TensorType(dtype, (n, c, ho, wo))

    return infer


class _Geo:
    __slots__ = ("kh", "kw", "sh", "sw", "ph", "pw", "n", "c", "h", "w", "hp", "wp", "ho", "wo")

    def __init__(self, op, shape, kernel_size, stride, padding):
        (self.kh, self.kw), (self.sh, self.sw), (self.ph, self.pw) = _pool_params(
            op, kernel_size, stride, padding)
        self.n, self.c, self.h, self.w = shape
        self.hp, self.wp = self.h + 2 * self.ph, self.w + 2 * self.pw
        self.ho = (self.hp - self.kh) // self.sh + 1
        self.wo = (self.wp - self.kw) // self.sw + 1

    def cols(self, j):  # window offset j along the width -> slice of padded columns
        return slice(j, j + self.sw * (self.wo - 1) + 1, self.sw)

    def rows(self, i):
        return slice(i, i + self.sh * (self.ho - 1) + 1, self.sh)

    @property
    def overlap(self) -> bool:
        return self.sh < self.kh or self.sw < self.kw


def _padded(x, geo, value):
    if not (geo.ph or geo.pw):
        return x
    xp = np.full((geo.n, geo.c, geo.hp, geo.wp), value, dtype=x.dtype)
    xp[:, :, geo.ph:geo.ph + geo.h, geo.pw:geo.pw + geo.w] = x
    return xp


def _unpad(xp, geo):
    if not (geo.ph or geo.pw):
        return xp
    return np.ascontiguousarray(xp[:, :, geo.ph:geo.ph + geo.h, geo.pw:geo.pw + geo.w])


def _max_arg(slices):
    """Elementwise max over equally shaped arrays and the index of the first maximum (uint8)."""
    best = slices[0]
    idx = None
    for k, s in enumerate(slices[1:], 1):
        m = s > best
        best = np.maximum(best, s)
        idx = m.view(np.uint8) if idx is None else idx + m * (np.uint8(k) - idx)
    if idx is None:  # a window of one: copy so that the output never aliases the input
        best = np.array(best, copy=True)
    return best, idx


# -- max_pool2d ---------------------------------------------------------------------------------
def _max_forward(x, kernel_size, stride, padding):
    geo = _Geo("max_pool2d", x.shape, kernel_size, stride, padding)
    xp = _padded(x, geo, -np.inf)
    h, jarg = _max_arg([xp[:, :, :, geo.cols(j)] for j in range(geo.kw)])
    out, iarg = _max_arg([h[:, :, geo.rows(i), :] for i in range(geo.kh)])
    return out, (iarg, jarg, geo)


def _max_kernel(x, kernel_size, stride, padding):
    """The forward without the arg-max bookkeeping (no gradient needed)."""
    geo = _Geo("max_pool2d", x.shape, kernel_size, stride, padding)
    xp = _padded(x, geo, -np.inf)
    h = xp[:, :, :, geo.cols(0)].copy()
    for j in range(1, geo.kw):
        np.maximum(h, xp[:, :, :, geo.cols(j)], out=h)
    out = h[:, :, geo.rows(0), :].copy()
    for i in range(1, geo.kh):
        np.maximum(out, h[:, :, geo.rows(i), :], out=out)
    return out


def _routes(g, arg, k):
    """The parts of ``g`` whose arg-max is offset 0, 1, ... k-1 (they sum to ``g``)."""
    if arg is None:
        return [g]
    if k == 2:  # arg is 0/1: one product, the other part is the rest (exact: g - g or g - 0)
        one = g * arg
        return [g - one, one]
    return [g * (arg == i) for i in range(k)]


def _max_vjp(ctx, g):
    iarg, jarg, geo = ctx.saved
    x = ctx.inputs[0]
    g = np.asarray(g, dtype=x.dtype)
    overlap = geo.overlap
    # windows that tile the input exactly write every element once: no zero fill needed
    tiles_h = not overlap and geo.hp == geo.ho * geo.kh
    tiles_w = not overlap and geo.wp == geo.wo * geo.kw
    new = np.empty if tiles_h else np.zeros
    gh = new((geo.n, geo.c, geo.hp, geo.wo), dtype=g.dtype)
    for i, part in enumerate(_routes(g, iarg, geo.kh)):
        if overlap:
            gh[:, :, geo.rows(i), :] += part
        else:
            gh[:, :, geo.rows(i), :] = part
    new = np.empty if (tiles_h and tiles_w) else np.zeros
    gxp = new((geo.n, geo.c, geo.hp, geo.wp), dtype=g.dtype)
    for j, part in enumerate(_routes(gh, jarg, geo.kw)):
        if overlap:
            gxp[:, :, :, geo.cols(j)] += part
        else:
            gxp[:, :, :, geo.cols(j)] = part
    return (_unpad(gxp, geo),)


def _max_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 2, 4, 4)),), params={"kernel_size": 2}, name="k2")
    yield Sample(args=(r((1, 2, 5, 5)),), params={"kernel_size": 3, "stride": 1}, name="overlap")
    yield Sample(args=(r((1, 2, 5, 6)),), params={"kernel_size": 3, "stride": 2, "padding": 1},
                 name="padding1")
    yield Sample(args=(r((1, 3, 5, 7)),), params={"kernel_size": (2, 3), "stride": (1, 2)},
                 name="pairs")
    yield Sample(args=(r((1, 2, 5, 5)),), params={"kernel_size": 2}, name="odd_size")
    yield Sample(args=(np.array([[[[1.0, 1.0, 0.0], [1.0, 0.5, 2.0], [0.0, 2.0, 2.0]]]]),),
                 params={"kernel_size": 2, "stride": 1}, grad=False, name="ties")


max_pool2d = OpDef(
    name="max_pool2d", inputs=("x",),
    params={"kernel_size": Param(kind="ints", doc="int or (kh, kw)"),
            "stride": Param(kind="ints", default=None, optional=True,
                            doc="int or (sh, sw); None means kernel_size"),
            "padding": Param(kind="ints", default=0, doc="int or (ph, pw), -inf padding")},
    kernel=_max_kernel, forward=_max_forward, infer=_pool_infer("max_pool2d"), vjp=_max_vjp,
    samples=_max_samples, traits=OpTraits(batch="rows", cost=pool_cost),
    doc="Max over kernel_size windows of NCHW input (torch.nn.functional.max_pool2d); the "
        "gradient goes to the first maximum of each window.",
)


# -- avg_pool2d ---------------------------------------------------------------------------------
def _avg_kernel(x, kernel_size, stride, padding):
    geo = _Geo("avg_pool2d", x.shape, kernel_size, stride, padding)
    xp = _padded(x, geo, 0)
    h = xp[:, :, :, geo.cols(0)].copy()
    for j in range(1, geo.kw):
        h += xp[:, :, :, geo.cols(j)]
    out = h[:, :, geo.rows(0), :].copy()
    for i in range(1, geo.kh):
        out += h[:, :, geo.rows(i), :]
    out *= 1.0 / (geo.kh * geo.kw)
    return out


def _avg_vjp(ctx, g):
    x = ctx.inputs[0]
    p = ctx.params
    geo = _Geo("avg_pool2d", x.shape, p["kernel_size"], p["stride"], p["padding"])
    g = np.asarray(g, dtype=x.dtype) * (1.0 / (geo.kh * geo.kw))
    gh = np.zeros((geo.n, geo.c, geo.hp, geo.wo), dtype=g.dtype)
    for i in range(geo.kh):
        gh[:, :, geo.rows(i), :] += g
    gxp = np.zeros((geo.n, geo.c, geo.hp, geo.wp), dtype=g.dtype)
    for j in range(geo.kw):
        gxp[:, :, :, geo.cols(j)] += gh
    return (_unpad(gxp, geo),)


def _avg_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 2, 4, 4)),), params={"kernel_size": 2}, name="k2")
    yield Sample(args=(r((1, 2, 5, 5)),), params={"kernel_size": 3, "stride": 1}, name="overlap")
    yield Sample(args=(r((1, 2, 5, 6)),), params={"kernel_size": 3, "stride": 2, "padding": 1},
                 name="padding1")
    yield Sample(args=(r((1, 3, 5, 7)),), params={"kernel_size": (2, 3), "stride": (1, 2),
                                                  "padding": (1, 0)}, name="pairs")


avg_pool2d = OpDef(
    name="avg_pool2d", inputs=("x",),
    params={"kernel_size": Param(kind="ints", doc="int or (kh, kw)"),
            "stride": Param(kind="ints", default=None, optional=True,
                            doc="int or (sh, sw); None means kernel_size"),
            "padding": Param(kind="ints", default=0,
                             doc="int or (ph, pw); zero padding counts in the average")},
    kernel=_avg_kernel, infer=_pool_infer("avg_pool2d"), vjp=_avg_vjp, samples=_avg_samples,
    traits=OpTraits(batch="rows", cost=pool_cost),
    doc="Mean over kernel_size windows of NCHW input (torch.nn.functional.avg_pool2d, "
        "count_include_pad=True).",
)

OPS = (max_pool2d, avg_pool2d)
