"""1-D pooling and adaptive pooling (PyTorch's functional forms).

* max_pool1d / avg_pool1d run pool.py's separable 2-D kernels over a height of one.
* adaptive_avg_pool1d/2d: output cell ``i`` of an axis of length ``L`` averages input
  ``floor(i L / out) .. ceil((i + 1) L / out)`` (PyTorch's windows), one (L, out) averaging matrix
  per axis, so forward and gradient are matrix products. The input length may be symbolic: the
  windows are computed at run time from the concrete length.
* adaptive_max_pool2d: the max of each such window, the gradient to its first maximum.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from onemodel.core import TensorType
from onemodel.core.symbolic import Dim
from onemodel.errors import OpError
from onemodel.registry import OpDef, OpTraits, Param, Sample

from . import pool
from ._common import check_positive_size, float_dtype, require_window, result_dtype
from .conv_more import single


# -- max_pool1d / avg_pool1d --------------------------------------------------------------------
def _pool1d_params(op, kernel_size, stride, padding, dilation=1):
    k = single(op, "kernel_size", kernel_size, 1)
    s = k if stride is None or stride == () else single(op, "stride", stride, 1)
    p = single(op, "padding", padding, 0)
    d = single(op, "dilation", dilation, 1)
    if isinstance(k, int) and isinstance(p, int) and p > k // 2:
        raise OpError(f"ops.{op}: padding {padding!r} must be at most half of kernel_size "
                      f"{kernel_size!r}")
    return k, s, p, d


def _pool1d_infer(op):
    def infer(x, kernel_size, stride, padding, ceil_mode=False, dilation=1,
              count_include_pad=True, return_indices=False):
        dtype = float_dtype(op, x)
        if x.ndim != 3:
            raise OpError(f"ops.{op}: expects input (N, C, L), got {x}")
        k, s, p, d = _pool1d_params(op, kernel_size, stride, padding, dilation)
        n, c, length = x.shape
        require_window(op, "length", length, k, d, p, p, s - 1 if ceil_mode else 0)
        lo = pool._out_size(op, length, k, s, p, p, d, ceil_mode)
        check_positive_size(op, "the output length", lo)
        return pool.with_indices(TensorType(dtype, (n, c, lo)), return_indices)

    return infer


def _as2d(op, kernel_size, stride, padding, dilation=1):
    k, s, p, d = _pool1d_params(op, kernel_size, stride, padding, dilation)
    return {"kernel_size": (1, k), "stride": (1, s), "padding": (0, p), "dilation": (1, d)}


def _max1d_forward(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices=False):
    out, saved = pool._max_forward(x[:, :, None, :], ceil_mode=ceil_mode,
                                   return_indices=return_indices,
                                   **_as2d("max_pool1d", kernel_size, stride, padding, dilation))
    if return_indices:  # a plane of height one: the flat index is the position along L
        return (out[0][:, :, 0, :], out[1][:, :, 0, :]), saved
    return out[:, :, 0, :], saved


def _max1d_kernel(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices=False):
    if return_indices:
        return _max1d_forward(x, kernel_size, stride, padding, dilation, ceil_mode, True)[0]
    return pool._max_kernel(x[:, :, None, :], ceil_mode=ceil_mode,
                            **_as2d("max_pool1d", kernel_size, stride, padding, dilation)
                            )[:, :, 0, :]


def _max1d_vjp(ctx, g, g_indices=None):
    (x,) = ctx.inputs
    (gx,) = pool._max_vjp(SimpleNamespace(inputs=(x[:, :, None, :],), saved=ctx.saved),
                          g[:, :, None, :])
    return (gx[:, :, 0, :],)


def _max1d_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 3, 8)),), params={"kernel_size": 2}, name="k2")
    yield Sample(args=(r((1, 2, 9)),), params={"kernel_size": 3, "stride": 2, "padding": 1},
                 name="padding1")
    yield Sample(args=(r((1, 2, 9)),), params={"kernel_size": 2, "stride": 1, "dilation": 2},
                 name="dilated")
    yield Sample(args=(r((1, 2, 8)),), params={"kernel_size": 3, "stride": 2,
                                               "ceil_mode": True}, name="ceil")
    yield Sample(args=(r((2, 3, 9)),), params={"kernel_size": 3, "stride": 2, "padding": 1,
                                               "return_indices": True}, name="indices")
    yield Sample(args=(np.array([[[1.0, 3.0, 3.0, 0.0, 2.0, 2.0]]]),),
                 params={"kernel_size": 2, "stride": 1, "return_indices": True}, grad=False,
                 name="ties_indices")


max_pool1d = OpDef(
    name="max_pool1d", inputs=("input",),
    params={"kernel_size": Param(kind="ints", doc="int or (k,)"),
            "stride": Param(kind="ints", default=None, optional=True,
                            doc="int or (s,); None means kernel_size"),
            "padding": Param(kind="ints", default=0, doc="int or (p,); -inf padding"),
            "dilation": Param(kind="ints", default=1),
            "ceil_mode": Param(kind="bool", default=False),
            "return_indices": Param(kind="bool", default=False,
                                    doc="also each maximum's index along L (int64, torch's)")},
    kernel=_max1d_kernel, forward=_max1d_forward, infer=_pool1d_infer("max_pool1d"),
    vjp=_max1d_vjp, samples=_max1d_samples, traits=OpTraits(batch="rows"),
    doc="Max over kernel_size windows of (N, C, L) input (torch.nn.functional.max_pool1d); "
        "the gradient goes to the first maximum of each window; return_indices=True gives "
        "(values, indices) as torch.",
)


def _avg1d_kernel(x, kernel_size, stride, padding, ceil_mode, count_include_pad):
    return pool._avg_kernel(x[:, :, None, :], ceil_mode=ceil_mode,
                            count_include_pad=count_include_pad,
                            **_as2d("avg_pool1d", kernel_size, stride, padding))[:, :, 0, :]


def _avg1d_vjp(ctx, g):
    (x,) = ctx.inputs
    p = ctx.params
    params2 = dict(_as2d("avg_pool1d", p["kernel_size"], p["stride"], p["padding"]),
                   ceil_mode=p["ceil_mode"], count_include_pad=p["count_include_pad"])
    (gx,) = pool._avg_vjp(SimpleNamespace(inputs=(x[:, :, None, :],), params=params2),
                          g[:, :, None, :])
    return (gx[:, :, 0, :],)


def _avg1d_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 3, 8)),), params={"kernel_size": 2}, name="k2")
    yield Sample(args=(r((1, 2, 9)),), params={"kernel_size": 3, "stride": 2, "padding": 1},
                 name="padding1")
    yield Sample(args=(r((1, 2, 9)),), params={"kernel_size": 3, "stride": 2, "padding": 1,
                                               "count_include_pad": False}, name="exclude_pad")
    yield Sample(args=(r((1, 2, 8)),), params={"kernel_size": 3, "stride": 2,
                                               "ceil_mode": True}, name="ceil")


avg_pool1d = OpDef(
    name="avg_pool1d", inputs=("input",),
    params={"kernel_size": Param(kind="ints", doc="int or (k,)"),
            "stride": Param(kind="ints", default=None, optional=True,
                            doc="int or (s,); None means kernel_size"),
            "padding": Param(kind="ints", default=0, doc="int or (p,)"),
            "ceil_mode": Param(kind="bool", default=False),
            "count_include_pad": Param(kind="bool", default=True)},
    kernel=_avg1d_kernel, infer=_pool1d_infer("avg_pool1d"), vjp=_avg1d_vjp,
    samples=_avg1d_samples, traits=OpTraits(batch="rows"),
    doc="Mean over kernel_size windows of (N, C, L) input (torch.nn.functional.avg_pool1d).",
)


# -- adaptive pools -----------------------------------------------------------------------------
def windows(length: int, out: int):
    """PyTorch's adaptive windows: (start, end) of each of ``out`` cells over ``length``."""
    i = np.arange(out)
    return (i * length) // out, -((-(i + 1) * length) // out)


def _averaging(length: int, out: int, dtype) -> np.ndarray:
    """The (length, out) matrix whose column i averages window i."""
    start, end = windows(length, out)
    pos = np.arange(length)[:, None]
    inside = (pos >= start[None, :]) & (pos < end[None, :])
    return (inside / (end - start)[None, :]).astype(dtype)


def _output_size(op, output_size, n):
    """``output_size`` as n entries (an int is repeated; None keeps the input's size)."""
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != n:
            raise OpError(f"ops.{op}: output_size must be an int or {n} ints, got "
                          f"{output_size!r}")
        sizes = tuple(output_size)
    else:
        sizes = (output_size,) * n
    for v in sizes:
        if v is not None and not isinstance(v, Dim) and int(v) < 1:
            raise OpError(f"ops.{op}: output_size must be >= 1, got {output_size!r}")
    return sizes


def _adaptive_infer(op, n):
    def infer(x, output_size):
        dtype = float_dtype(op, x)
        if x.ndim not in (n + 1, n + 2):
            raise OpError(f"ops.{op}: expects input (N, C, {'H, W' if n == 2 else 'L'}) or "
                          f"without N, got {x}")
        sizes = _output_size(op, output_size, n)
        spatial = x.shape[-n:]
        for s in spatial:
            check_positive_size(op, "the input size", s)
        out = tuple(s if o is None else o for o, s in zip(sizes, spatial))
        return TensorType(dtype, x.shape[:-n] + out)

    return infer


def _resolved(op, output_size, shape, n):
    return tuple(s if o is None else int(o)
                 for o, s in zip(_output_size(op, output_size, n), shape[-n:]))


def _adaptive_avg_kernel(n):
    op = f"adaptive_avg_pool{n}d"

    def kernel(x, output_size):
        dt = result_dtype(x)
        sizes = _resolved(op, output_size, x.shape, n)
        y = np.asarray(x, dtype=dt)
        for a, (length, out) in enumerate(zip(x.shape[-n:], sizes)):
            axis = x.ndim - n + a
            y = np.moveaxis(np.moveaxis(y, axis, -1) @ _averaging(length, out, dt), -1, axis)
        return np.ascontiguousarray(y)

    def vjp(ctx, g):
        (x,) = ctx.inputs
        dt = result_dtype(x)
        sizes = _resolved(op, ctx.params["output_size"], x.shape, n)
        gx = np.asarray(g, dtype=dt)
        for a, (length, out) in enumerate(zip(x.shape[-n:], sizes)):
            axis = x.ndim - n + a
            gx = np.moveaxis(np.moveaxis(gx, axis, -1) @ _averaging(length, out, dt).T, -1,
                             axis)
        return (np.ascontiguousarray(gx),)

    return kernel, vjp


def _adaptive_samples(n):
    def samples(rng):
        r = rng.standard_normal
        if n == 1:
            yield Sample(args=(r((2, 3, 7)),), params={"output_size": 3}, name="uneven")
            yield Sample(args=(r((2, 3, 8)),), params={"output_size": 4}, name="divisible")
            yield Sample(args=(r((2, 3, 5)),), params={"output_size": 1}, name="global")
            yield Sample(args=(r((3, 5)),), params={"output_size": (7,)}, name="unbatched_up")
        else:
            yield Sample(args=(r((2, 3, 7, 6)),), params={"output_size": (3, 4)}, name="uneven")
            yield Sample(args=(r((2, 3, 8, 6)),), params={"output_size": (4, 3)},
                         name="divisible")
            yield Sample(args=(r((2, 3, 5, 4)),), params={"output_size": 1}, name="global")
            yield Sample(args=(r((3, 5, 6)),), params={"output_size": (None, 2)},
                         name="unbatched_none")

    return samples


_avg1_kernel, _avg1_vjp = _adaptive_avg_kernel(1)
_avg2_kernel, _avg2_vjp = _adaptive_avg_kernel(2)

_OUTPUT_SIZE = Param(kind="any", doc="int or one int per spatial axis (None keeps the size)")

adaptive_avg_pool1d = OpDef(
    name="adaptive_avg_pool1d", inputs=("input",), params={"output_size": _OUTPUT_SIZE},
    kernel=_avg1_kernel, infer=_adaptive_infer("adaptive_avg_pool1d", 1), vjp=_avg1_vjp,
    samples=_adaptive_samples(1), traits=OpTraits(batch="rows"),
    doc="Mean over output_size windows spanning the length of (N, C, L) input "
        "(torch.nn.functional.adaptive_avg_pool1d).",
)

adaptive_avg_pool2d = OpDef(
    name="adaptive_avg_pool2d", inputs=("input",), params={"output_size": _OUTPUT_SIZE},
    kernel=_avg2_kernel, infer=_adaptive_infer("adaptive_avg_pool2d", 2), vjp=_avg2_vjp,
    samples=_adaptive_samples(2), traits=OpTraits(batch="rows"),
    doc="Mean over output_size windows spanning (H, W) of (N, C, H, W) input "
        "(torch.nn.functional.adaptive_avg_pool2d).",
)


def _amax_forward(x, output_size, return_indices=False):
    ho, wo = _resolved("adaptive_max_pool2d", output_size, x.shape, 2)
    h, w = x.shape[-2:]
    hs, he = windows(h, ho)
    ws, we = windows(w, wo)
    out = np.empty(x.shape[:-2] + (ho, wo), dtype=x.dtype)
    args = np.empty(x.shape[:-2] + (ho, wo), dtype=np.int64)
    for i in range(ho):
        for j in range(wo):
            win = x[..., hs[i]:he[i], ws[j]:we[j]]
            flat = win.reshape(win.shape[:-2] + (-1,))
            k = flat.argmax(axis=-1)  # the first maximum, row-major (PyTorch's rule)
            out[..., i, j] = np.take_along_axis(flat, k[..., None], axis=-1)[..., 0]
            cols = we[j] - ws[j]
            args[..., i, j] = (hs[i] + k // cols) * w + ws[j] + k % cols
    return ((out, args) if return_indices else out), args


def _amax_kernel(x, output_size, return_indices=False):
    return _amax_forward(x, output_size, return_indices)[0]


def _amax_infer(x, output_size, return_indices=False):
    return pool.with_indices(_adaptive_infer("adaptive_max_pool2d", 2)(x, output_size),
                             return_indices)


def _amax_vjp(ctx, g, g_indices=None):
    (x,) = ctx.inputs
    args = ctx.saved
    lead = x.shape[:-2]
    gflat = np.zeros(lead + (x.shape[-2] * x.shape[-1],), dtype=x.dtype)
    g = np.asarray(g, dtype=x.dtype).reshape(lead + (-1,))
    idx = args.reshape(lead + (-1,))
    # windows may overlap: accumulate (np.add.at over the flattened leading axes)
    m = int(np.prod(lead)) if lead else 1
    gf = gflat.reshape(m, -1)
    rows = np.repeat(np.arange(m), idx.shape[-1])
    np.add.at(gf, (rows, idx.reshape(m, -1).ravel()), g.reshape(m, -1).ravel())
    return (gf.reshape(x.shape),)


def _amax_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 3, 7, 6)),), params={"output_size": (3, 4)}, name="uneven")
    yield Sample(args=(r((2, 3, 8, 6)),), params={"output_size": 2}, name="divisible")
    yield Sample(args=(r((2, 3, 5, 4)),), params={"output_size": 1}, name="global")
    yield Sample(args=(r((3, 5, 6)),), params={"output_size": (None, 4)}, name="unbatched")
    yield Sample(args=(np.array([[[[1.0, 1.0, 0.0], [1.0, 0.5, 1.0]]]]),),
                 params={"output_size": (1, 2)}, grad=False, name="ties")
    # windows that divide the input evenly: ONNX's MaxPool has the Indices output for those
    yield Sample(args=(np.array([[[[1.0, 1.0, 0.0, 2.0], [1.0, 0.5, 2.0, 2.0]]]]),),
                 params={"output_size": (1, 2), "return_indices": True}, grad=False,
                 name="ties_indices")
    yield Sample(args=(r((2, 3, 8, 6)),), params={"output_size": (4, 3), "return_indices": True},
                 name="indices")


adaptive_max_pool2d = OpDef(
    name="adaptive_max_pool2d", inputs=("input",),
    params={"output_size": _OUTPUT_SIZE,
            "return_indices": Param(kind="bool", default=False,
                                    doc="also each maximum's flat index into its (H, W) plane "
                                        "(int64, torch's)")},
    kernel=_amax_kernel, forward=_amax_forward, infer=_amax_infer,
    vjp=_amax_vjp, samples=_amax_samples, traits=OpTraits(batch="rows"),
    doc="Max over output_size windows spanning (H, W) of (N, C, H, W) input "
        "(torch.nn.functional.adaptive_max_pool2d); the gradient goes to the first maximum of "
        "each window; return_indices=True gives (values, indices) as torch.",
)

OPS = (max_pool1d, avg_pool1d, adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool2d)
