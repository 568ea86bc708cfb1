"""max_pool2d and avg_pool2d over NCHW input (PyTorch's defaults: stride = kernel_size, zero
padding counted in the average, padding at most half the kernel).

Both are separable: a pass along the width over the ``kw`` window offsets, then one along the
height over the ``kh`` offsets, each a handful of whole-tensor strided ufunc calls (no loops over
pixels or channels). Max pooling keeps the arg-max offsets of both passes (PyTorch's tie rule:
the first maximum in row-major window order) and routes the gradient back through them.
"""
from __future__ import annotations

import numpy as np

from onemodel.core import DType, TensorType
from onemodel.core.symbolic import Dim
from onemodel.errors import OpError
from onemodel.registry import OpDef, OpTraits, Param, Sample

from ._common import check_positive_size, float_dtype, pair, require_window
from .costs import pool_cost


def _pads(op, padding):
    """``padding`` as (top, left, bottom, right): an int, a pair (PyTorch) or four ints (ONNX's
    explicit, possibly asymmetric pads)."""
    if isinstance(padding, (tuple, list)) and len(padding) == 4:
        pads = tuple(padding)
        for v in pads:
            if not isinstance(v, Dim) and int(v) < 0:
                raise OpError(f"ops.{op}: padding must be >= 0, got {padding!r}")
        return pads, False
    ph, pw = pair(op, "padding", padding, 0)
    return (ph, pw, ph, pw), True


def _pool_params(op, kernel_size, stride, padding, dilation=1):
    k = pair(op, "kernel_size", kernel_size, 1)
    s = pair(op, "stride", kernel_size if stride is None or stride == () else stride, 1)
    d = pair(op, "dilation", dilation, 1)
    pads, symmetric = _pads(op, padding)
    if symmetric:
        for kk, pp in zip(k, pads[:2]):
            if isinstance(kk, int) and isinstance(pp, int) and pp > kk // 2:
                raise ValueError(f"padding {padding!r} must be at most half of kernel_size "
                                 f"{kernel_size!r}")
    return k, s, pads, d


def _out_size(op, size, k, s, begin, end, d, ceil_mode):
    """PyTorch's (and ONNX Runtime's) output length; in ceil mode the last window must start
    inside the input or its leading padding."""
    span = size + begin + end - d * (k - 1) - 1
    if not ceil_mode:
        return span // s + 1
    out = -((-span) // s) + 1
    if isinstance(out, Dim):
        if not isinstance(begin, Dim) and begin == 0 and s <= d * (k - 1) + 1:
            return out  # the last window always starts inside the input
        raise OpError(f"ops.{op}: ceil_mode with leading padding or a stride wider than the "
                      f"window on a symbolic axis")
    return out - 1 if (out - 1) * s >= size + begin else out


def _pool_infer(op):
    def infer(x: TensorType, kernel_size, stride, padding, dilation=1, ceil_mode=False,
              count_include_pad=True, return_indices=False) -> TensorType:
        dtype = float_dtype(op, x)
        if x.ndim != 4:
            raise ValueError(f"expects x (N, C, H, W), got {x}")
        (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw) = _pool_params(op, kernel_size, stride,
                                                                      padding, dilation)
        n, c, h, w = x.shape
        # in ceil mode a last window that starts inside the input counts (see `_out_size`)
        require_window(op, "height", h, kh, dh, pt, pb, sh - 1 if ceil_mode else 0)
        require_window(op, "width", w, kw, dw, pl, pr, sw - 1 if ceil_mode else 0)
        ho = _out_size(op, h, kh, sh, pt, pb, dh, ceil_mode)
        wo = _out_size(op, w, kw, sw, pl, pr, dw, ceil_mode)
        check_positive_size(op, "the output height", ho)
        check_positive_size(op, "the output width", wo)
        return with_indices(TensorType(dtype, (n, c, ho, wo)), return_indices)

    return infer


class _Geo:
    """Window geometry: taps ``i * dh`` within a window, windows ``o * sh`` apart, over the
    input padded by ``pt`` rows before and enough after to hold every window."""

    __slots__ = ("kh", "kw", "sh", "sw", "pt", "pl", "pb", "pr", "dh", "dw", "n", "c", "h", "w",
                 "hp", "wp", "ho", "wo")

    def __init__(self, op, shape, kernel_size, stride, padding, dilation=1, ceil_mode=False):
        (self.kh, self.kw), (self.sh, self.sw), pads, (self.dh, self.dw) = _pool_params(
            op, kernel_size, stride, padding, dilation)
        self.pt, self.pl, self.pb, self.pr = pads
        self.n, self.c, self.h, self.w = shape
        self.ho = _out_size(op, self.h, self.kh, self.sh, self.pt, self.pb, self.dh, ceil_mode)
        self.wo = _out_size(op, self.w, self.kw, self.sw, self.pl, self.pr, self.dw, ceil_mode)
        self.hp = max(self.pt + self.h + self.pb,
                      (self.ho - 1) * self.sh + self.dh * (self.kh - 1) + 1)
        self.wp = max(self.pl + self.w + self.pr,
                      (self.wo - 1) * self.sw + self.dw * (self.kw - 1) + 1)

    def cols(self, j):  # window tap j along the width -> slice of padded columns
        return slice(j * self.dw, j * self.dw + self.sw * (self.wo - 1) + 1, self.sw)

    def rows(self, i):
        return slice(i * self.dh, i * self.dh + self.sh * (self.ho - 1) + 1, self.sh)

    @property
    def overlap(self) -> bool:
        return not (self.dh == 1 and self.dw == 1 and self.sh >= self.kh and self.sw >= self.kw)

    @property
    def padded(self) -> bool:
        return (self.hp, self.wp) != (self.h, self.w)

    def counts(self, include_pad: bool) -> np.ndarray:
        """(ho, wo) number of taps of each window inside the input (or inside the input and its
        explicit padding): the divisor of an average."""
        def axis(size, k, s, d, begin, end, out):
            lo, hi = (-begin, size + end) if include_pad else (0, size)
            taps = np.arange(out)[:, None] * s + np.arange(k)[None, :] * d - begin
            return ((taps >= lo) & (taps < hi)).sum(axis=1)

        ch = axis(self.h, self.kh, self.sh, self.dh, self.pt, self.pb, self.ho)
        cw = axis(self.w, self.kw, self.sw, self.dw, self.pl, self.pr, self.wo)
        return np.outer(ch, cw)


def _padded(x, geo, value):
    if not geo.padded:
        return x
    xp = np.full((geo.n, geo.c, geo.hp, geo.wp), value, dtype=x.dtype)
    xp[:, :, geo.pt:geo.pt + geo.h, geo.pl:geo.pl + geo.w] = x
    return xp


def _unpad(xp, geo):
    if not geo.padded:
        return xp
    return np.ascontiguousarray(xp[:, :, geo.pt:geo.pt + geo.h, geo.pl:geo.pl + geo.w])


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
def with_indices(values: TensorType, return_indices: bool):
    """A max pool's output type(s): the values, and with ``return_indices`` int64 indices."""
    return (values, TensorType(DType.I64, values.shape)) if return_indices else values


def plane_indices(iarg, jarg, geo) -> np.ndarray:
    """torch's ``return_indices``: each window's first maximum as a flat index into its
    (H, W) input plane, from the row and column arg-max offsets of the separable passes."""
    shape = (geo.n, geo.c, geo.ho, geo.wo)
    rows = np.arange(geo.ho, dtype=np.int64)[:, None] * geo.sh
    if iarg is not None:
        rows = rows + iarg.astype(np.int64) * geo.dh
    rows = np.broadcast_to(rows, shape)
    cols = np.arange(geo.wo, dtype=np.int64) * geo.sw
    if jarg is not None:  # the column offset within the row the row pass chose
        cols = cols + np.take_along_axis(jarg, rows, axis=2).astype(np.int64) * geo.dw
    return np.ascontiguousarray((rows - geo.pt) * geo.w + (cols - geo.pl))


def _max_forward(x, kernel_size, stride, padding, dilation=1, ceil_mode=False,
                 return_indices=False):
    geo = _Geo("max_pool2d", x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    xp = _padded(x, geo, -np.inf)
    h, jarg = _max_arg([xp[:, :, :, geo.cols(j)] for j in range(geo.kw)])
    out, iarg = _max_arg([h[:, :, geo.rows(i), :] for i in range(geo.kh)])
    if return_indices:
        return (out, plane_indices(iarg, jarg, geo)), (iarg, jarg, geo)
    return out, (iarg, jarg, geo)


def _max_kernel(x, kernel_size, stride, padding, dilation=1, ceil_mode=False,
                return_indices=False):
    """The forward without the arg-max bookkeeping (no gradient needed)."""
    if return_indices:
        return _max_forward(x, kernel_size, stride, padding, dilation, ceil_mode, True)[0]
    geo = _Geo("max_pool2d", x.shape, kernel_size, stride, padding, dilation, ceil_mode)
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


def _max_vjp(ctx, g, g_indices=None):
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
    yield Sample(args=(np.array([[[[1.0, 1.0, 0.0], [1.0, 0.5, 2.0], [0.0, 2.0, 2.0]]]]),),
                 params={"kernel_size": 2, "stride": 1, "return_indices": True}, grad=False,
                 name="ties_indices")
    yield Sample(args=(r((2, 2, 5, 6)),), params={"kernel_size": 3, "stride": 2, "padding": 1,
                                                  "return_indices": True}, name="indices")
    yield Sample(args=(r((1, 2, 7, 7)),), params={"kernel_size": 2, "stride": 1, "dilation": 2,
                                                  "ceil_mode": True, "return_indices": True},
                 name="indices_dilated")
    yield from _general_samples(rng)


def _general_samples(rng, avg=False):
    """ceil mode, asymmetric pads and dilation (squeezenet, ONNX files)."""
    r = rng.standard_normal
    yield Sample(args=(r((1, 2, 6, 7)),), params={"kernel_size": 3, "stride": 2,
                                                  "ceil_mode": True}, name="ceil")
    yield Sample(args=(r((1, 2, 5, 5)),), params={"kernel_size": 2, "stride": 2, "padding": 1,
                                                  "ceil_mode": True}, name="ceil_padded")
    yield Sample(args=(r((1, 2, 5, 6)),), params={"kernel_size": (3, 2), "stride": 1,
                                                  "padding": (1, 0, 0, 1)}, name="asymmetric")
    yield Sample(args=(r((1, 1, 7, 7)),), params={"kernel_size": 2, "stride": 1, "dilation": 2},
                 name="dilated")
    yield Sample(args=(r((1, 1, 4, 4)),), params={"kernel_size": 3, "stride": 1,
                                                  "padding": (2, 2, 2, 2)}, name="wide_pads")
    if avg:
        yield Sample(args=(r((1, 2, 5, 5)),), params={"kernel_size": 3, "stride": 2,
                                                      "padding": 1, "count_include_pad": False},
                     name="exclude_pad")
        yield Sample(args=(r((1, 2, 5, 6)),), params={"kernel_size": 3, "stride": 2,
                                                      "padding": 1, "ceil_mode": True,
                                                      "count_include_pad": False},
                     name="ceil_exclude_pad")


max_pool2d = OpDef(
    name="max_pool2d", inputs=("x",),
    params={"kernel_size": Param(kind="ints", doc="int or (kh, kw)"),
            "stride": Param(kind="ints", default=None, optional=True,
                            doc="int or (sh, sw); None means kernel_size"),
            "padding": Param(kind="ints", default=0,
                             doc="int, (ph, pw) or (top, left, bottom, right); -inf padding"),
            "dilation": Param(kind="ints", default=1, doc="int or (dh, dw)"),
            "ceil_mode": Param(kind="bool", default=False,
                               doc="round the output size up (PyTorch's rule)"),
            "return_indices": Param(kind="bool", default=False,
                                    doc="also each maximum's flat index into its (H, W) plane "
                                        "(int64, torch's; no gradient)")},
    kernel=_max_kernel, forward=_max_forward, infer=_pool_infer("max_pool2d"), vjp=_max_vjp,
    samples=_max_samples, traits=OpTraits(batch="rows", cost=pool_cost),
    doc="Max over kernel_size windows of NCHW input (torch.nn.functional.max_pool2d); the "
        "gradient goes to the first maximum of each window; return_indices=True gives "
        "(values, indices) as torch.",
)


# -- avg_pool2d ---------------------------------------------------------------------------------
def _avg_kernel(x, kernel_size, stride, padding, dilation=1, ceil_mode=False,
                count_include_pad=True):
    geo = _Geo("avg_pool2d", x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    xp = _padded(x, geo, 0)
    h = xp[:, :, :, geo.cols(0)].copy()
    for j in range(1, geo.kw):
        h += xp[:, :, :, geo.cols(j)]
    out = h[:, :, geo.rows(0), :].copy()
    for i in range(1, geo.kh):
        out += h[:, :, geo.rows(i), :]
    return _divide(out, geo, count_include_pad)


def _divide(out, geo, count_include_pad):
    counts = geo.counts(count_include_pad)
    if (counts == geo.kh * geo.kw).all():
        out *= 1.0 / (geo.kh * geo.kw)
    else:  # windows reaching past the padding (ceil mode) or into it (count_include_pad=False)
        out /= np.maximum(counts, 1).astype(out.dtype)
    return out


def _avg_vjp(ctx, g):
    x = ctx.inputs[0]
    p = ctx.params
    geo = _Geo("avg_pool2d", x.shape, p["kernel_size"], p["stride"], p["padding"],
               p.get("dilation", 1), p.get("ceil_mode", False))
    g = _divide(np.array(g, dtype=x.dtype), geo, p.get("count_include_pad", True))
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
    yield from _general_samples(rng, avg=True)


avg_pool2d = OpDef(
    name="avg_pool2d", inputs=("x",),
    params={"kernel_size": Param(kind="ints", doc="int or (kh, kw)"),
            "stride": Param(kind="ints", default=None, optional=True,
                            doc="int or (sh, sw); None means kernel_size"),
            "padding": Param(kind="ints", default=0,
                             doc="int, (ph, pw) or (top, left, bottom, right)"),
            "dilation": Param(kind="ints", default=1, doc="int or (dh, dw) (ONNX; not PyTorch)"),
            "ceil_mode": Param(kind="bool", default=False,
                               doc="round the output size up (PyTorch's rule)"),
            "count_include_pad": Param(kind="bool", default=True,
                                       doc="zero padding counts in the average")},
    kernel=_avg_kernel, infer=_pool_infer("avg_pool2d"), vjp=_avg_vjp, samples=_avg_samples,
    traits=OpTraits(batch="rows", cost=pool_cost),
    doc="Mean over kernel_size windows of NCHW input (torch.nn.functional.avg_pool2d, "
        "ceil_mode, count_include_pad) with ONNX's dilation and asymmetric padding.",
)

OPS = (max_pool2d, avg_pool2d)
