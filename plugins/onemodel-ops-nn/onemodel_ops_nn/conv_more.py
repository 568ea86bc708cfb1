"""conv1d, conv_transpose1d and conv_transpose2d on conv.py's im2col / col2im GEMMs.

conv1d (N, C, L) is conv2d over a height of one, with PyTorch's 1-D argument forms (an int or a
1-tuple); the transposed convolutions are described above their records.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from onemodel.core import TensorType
from onemodel.core.guards import require
from onemodel.core.symbolic import Dim
from onemodel.errors import OpError
from onemodel.registry import OpDef, OpTraits, Param, Sample

from . import conv
from ._common import (as_dtype, check_dim, check_positive_size, float_dtype, pair,
                      require_window, result_dtype)


def single(op: str, name: str, value, minimum: int = 0) -> int:
    """An int or a 1-tuple as an int (PyTorch's ``_single``), checked against ``minimum``."""
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise OpError(f"ops.{op}: {name} must be an int or a 1-tuple, got {value!r}")
        value = value[0]
    if not isinstance(value, Dim) and int(value) < minimum:
        raise OpError(f"ops.{op}: {name} must be >= {minimum}, got {value!r}")
    return value


def _conv1d_params(stride, padding, dilation):
    return (single("conv1d", "stride", stride, 1), single("conv1d", "padding", padding, 0),
            single("conv1d", "dilation", dilation, 1))


def _conv1d_infer(x, weight, bias, stride, padding, dilation, groups):
    dtype = float_dtype("conv1d", x, weight, bias)
    if x.ndim != 3 or weight.ndim != 3:
        raise OpError(f"ops.conv1d: expects input (N, C, L) and weight (out, in/groups, k), got "
                      f"input {x}, weight {weight}")
    s, p, d = _conv1d_params(stride, padding, dilation)
    if groups < 1:
        raise OpError(f"ops.conv1d: groups must be >= 1, got {groups}")
    n, c, length = x.shape
    o, cg, k = weight.shape
    check_dim("conv1d", f"the channel count of input {x} (weight {weight}, groups={groups})", c,
              cg * groups)
    if not isinstance(o, Dim) and o % groups:
        raise OpError(f"ops.conv1d: the output channels of weight {weight} are not divisible by "
                      f"groups={groups}")
    if bias is not None:
        if bias.ndim != 1:
            raise OpError(f"ops.conv1d: bias must be 1-d (out,), got {bias}")
        check_dim("conv1d", f"the size of bias {bias}", bias.shape[0], o)
    require_window("conv1d", "length", length, k, d, p, p)
    lo = (length + 2 * p - d * (k - 1) - 1) // s + 1
    check_positive_size("conv1d", "the output length", lo)
    return TensorType(dtype, (n, o, lo))


def _as2d(stride, padding, dilation):
    s, p, d = _conv1d_params(stride, padding, dilation)
    return {"stride": (1, s), "padding": (0, p), "dilation": (1, d)}


def _conv1d_forward(x, weight, bias, stride, padding, dilation, groups):
    out, saved = conv._forward(x[:, :, None, :], weight[:, :, None, :], bias, groups=groups,
                               **_as2d(stride, padding, dilation))
    return out[:, :, 0, :], saved


def _conv1d_kernel(*args, **params):
    return _conv1d_forward(*args, **params)[0]


def _conv1d_vjp(ctx, g):
    x, weight, bias = ctx.inputs
    ctx2 = SimpleNamespace(inputs=(x[:, :, None, :], weight[:, :, None, :], bias),
                           saved=ctx.saved, needs_grad=ctx.needs_grad)
    gx, gw, gb = conv._vjp(ctx2, g[:, :, None, :])
    return (None if gx is None else gx[:, :, 0, :]), (None if gw is None else gw[:, :, 0, :]), gb


def _conv1d_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 2, 7)), r((3, 2, 3)), r(3)), name="basic")
    yield Sample(args=(r((1, 2, 9)), r((2, 2, 3)), None), params={"stride": 2, "padding": 1},
                 name="stride_padding")
    yield Sample(args=(r((1, 4, 8)), r((4, 2, 2)), r(4)),
                 params={"groups": 2, "dilation": (2,), "padding": (1,)}, name="groups_dilation")


conv1d = OpDef(
    name="conv1d", inputs=("input", "weight", "bias?"),
    params={"stride": Param(kind="ints", default=1, doc="int or (s,)"),
            "padding": Param(kind="ints", default=0, doc="int or (p,): zeros on both sides"),
            "dilation": Param(kind="ints", default=1, doc="int or (d,)"),
            "groups": Param(kind="int", default=1)},
    kernel=_conv1d_kernel, forward=_conv1d_forward, infer=_conv1d_infer, vjp=_conv1d_vjp,
    samples=_conv1d_samples, traits=OpTraits(batch="rows"),
    doc="1-d cross-correlation over (N, C, L) input with weight (out, in/groups, k), as "
        "torch.nn.functional.conv1d.",
)



# -- conv_transpose2d / conv_transpose1d --------------------------------------------------------
# The transposed convolution is the adjoint of conv2d's input gradient: its forward is conv.py's
# col2im of ``W^T @ x`` (the input-gradient code path), its input gradient a plain conv2d of the
# upstream gradient (im2col then ``W @ cols``), its weight gradient ``cols @ x^T``.
def _ct_pairs(op, stride, padding, output_padding, dilation):
    s = pair(op, "stride", stride, 1)
    p = pair(op, "padding", padding, 0)
    op_ = pair(op, "output_padding", output_padding, 0)
    d = pair(op, "dilation", dilation, 1)
    for o, ss, dd in zip(op_, s, d):
        if isinstance(o, int) and isinstance(ss, int) and isinstance(dd, int) and \
                o >= max(ss, dd):
            raise OpError(f"ops.{op}: output_padding {output_padding!r} must be smaller than "
                          f"stride or dilation ({stride!r}, {dilation!r})")
    return s, p, op_, d


def _ct_size(size, k, s, p, op, d):
    return (size - 1) * s - 2 * p + d * (k - 1) + op + 1


def _ct_infer(op, x, weight, bias, stride, padding, output_padding, groups, dilation, axes):
    dtype = float_dtype(op, x, weight, bias)
    rank = 2 + len(axes)
    if x.ndim != rank or weight.ndim != rank:
        raise OpError(f"ops.{op}: expects input (N, C_in, {', '.join(axes)}) and weight "
                      f"(C_in, C_out/groups, k...), got input {x}, weight {weight}")
    if groups < 1:
        raise OpError(f"ops.{op}: groups must be >= 1, got {groups}")
    n, c = x.shape[:2]
    cin, cog = weight.shape[:2]
    check_dim(op, f"the channel count of input {x} (weight {weight})", c, cin)
    if not isinstance(cin, Dim) and cin % groups:
        raise OpError(f"ops.{op}: the input channels of weight {weight} are not divisible by "
                      f"groups={groups}")
    if bias is not None:
        if bias.ndim != 1:
            raise OpError(f"ops.{op}: bias must be 1-d (C_out,), got {bias}")
        check_dim(op, f"the size of bias {bias}", bias.shape[0], cog * groups)
    return dtype, n, cog * groups


def _ct_out(op, axis, size, k, s, p, o, d):
    out = _ct_size(size, k, s, p, o, d)
    c = -2 * p + d * (k - 1) + o + 1
    if isinstance(size, Dim) and not isinstance(c, Dim) and c < 1:
        require(1 + -(-(1 - c) // s), size, f"ops.{op}: the {axis} of the output must be positive")
    check_positive_size(op, f"the output {axis}", out)
    return out


def _ct2d_infer(x, weight, bias, stride, padding, output_padding, groups, dilation):
    op = "conv_transpose2d"
    dtype, n, cout = _ct_infer(op, x, weight, bias, stride, padding, output_padding, groups,
                               dilation, ("H", "W"))
    s, p, o, d = _ct_pairs(op, stride, padding, output_padding, dilation)
    h, w = x.shape[2:]
    kh, kw = weight.shape[2:]
    return TensorType(dtype, (n, cout, _ct_out(op, "height", h, kh, s[0], p[0], o[0], d[0]),
                              _ct_out(op, "width", w, kw, s[1], p[1], o[1], d[1])))


def _ct_geo(op, xshape, wshape, stride, padding, output_padding, dilation, groups):
    s, p, o, d = _ct_pairs(op, stride, padding, output_padding, dilation)
    n, _cin, h, w = xshape
    kh, kw = wshape[2:]
    out_hw = (_ct_size(h, kh, s[0], p[0], o[0], d[0]), _ct_size(w, kw, s[1], p[1], o[1], d[1]))
    return conv._Geo((n, wshape[1] * groups) + out_hw, wshape, s, p, d, groups)


def _ct2d_forward(x, weight, bias, stride, padding, output_padding, groups, dilation):
    dt = result_dtype(x, weight, bias)
    x, weight = as_dtype(x, dt), as_dtype(weight, dt)
    geo = _ct_geo("conv_transpose2d", x.shape, weight.shape, stride, padding, output_padding,
                  dilation, groups)
    n, cin, h, w = x.shape
    og = cin // groups
    if geo.flat and geo.wx != w:  # conv.py's flat layout: rows over the padded width
        xe = np.zeros((n, cin, h, geo.wx), dtype=dt)
        xe[..., :w] = x
    else:
        xe = x
    x4 = np.ascontiguousarray(xe).reshape(n, groups, og, geo.lx)
    w3t = np.ascontiguousarray(weight.reshape(groups, og, geo.k).transpose(0, 2, 1))
    out = conv._col2im(np.matmul(w3t, x4), geo)
    if bias is not None:
        out = out + as_dtype(bias, dt).reshape(-1, 1, 1)
    return out, (x4, geo)


def _ct2d_kernel(*args, **params):
    return _ct2d_forward(*args, **params)[0]


def _ct2d_vjp(ctx, g):
    x, weight, bias = ctx.inputs
    x4, geo = ctx.saved
    need_x, need_w, need_b = ctx.needs_grad
    dt = x4.dtype
    g = as_dtype(np.ascontiguousarray(g), dt)
    n, cin, h, w = x.shape
    og = cin // geo.groups
    cols = conv._im2col(g, geo)  # (N, G, K, Lx)
    gx = gw = gb = None
    if need_x:
        w3 = as_dtype(weight, dt).reshape(geo.groups, og, geo.k)
        gx = np.matmul(w3, cols).reshape(n, cin, geo.ho, geo.wx)
        if geo.wx != w:
            gx = np.ascontiguousarray(gx[..., :w])
    if need_w:  # out = col2im(W^T x): gW^T[g] = sum_n cols[n, g] @ x4[n, g]^T
        gwt = np.matmul(cols, x4.transpose(0, 1, 3, 2)).sum(axis=0)  # (G, K, Og)
        gw = gwt.transpose(0, 2, 1).reshape(weight.shape)
    if need_b and bias is not None:
        gb = g.sum(axis=(0, 2, 3))
    return gx, gw, gb


def _ct2d_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 3, 4, 4)), r((3, 2, 3, 3)), r(2)), name="basic")
    yield Sample(args=(r((1, 2, 3, 4)), r((2, 3, 3, 3)), None),
                 params={"stride": 2, "padding": 1, "output_padding": 1}, name="stride2")
    yield Sample(args=(r((1, 4, 3, 3)), r((4, 1, 2, 3)), r(2)),
                 params={"groups": 2, "dilation": (2, 1), "stride": (1, 2)}, name="groups")
    yield Sample(args=(r((1, 2, 4, 3)), r((2, 2, 3, 3)), None),
                 params={"stride": 3, "padding": (1, 2), "output_padding": (2, 0)},
                 name="pairs")


_CT_PARAMS = {"stride": Param(kind="ints", default=1),
              "padding": Param(kind="ints", default=0,
                               doc="dilation * (k - 1) - padding zeros around the input"),
              "output_padding": Param(kind="ints", default=0,
                                      doc="extra rows/columns on one side of the output"),
              "groups": Param(kind="int", default=1),
              "dilation": Param(kind="ints", default=1)}

conv_transpose2d = OpDef(
    name="conv_transpose2d", inputs=("input", "weight", "bias?"), params=dict(_CT_PARAMS),
    kernel=_ct2d_kernel, forward=_ct2d_forward, infer=_ct2d_infer, vjp=_ct2d_vjp,
    samples=_ct2d_samples, traits=OpTraits(batch="rows"),
    doc="The transposed 2-d convolution (the gradient of conv2d with respect to its input) over "
        "NCHW input with weight (C_in, C_out/groups, kh, kw), as "
        "torch.nn.functional.conv_transpose2d.",
)


def _one_as_pair(op, name, v, minimum):
    return (1 if name in ("stride", "dilation") else 0, single(op, name, v, minimum))


def _ct1d_2d(params):
    op = "conv_transpose1d"
    return {"stride": _one_as_pair(op, "stride", params["stride"], 1),
            "padding": _one_as_pair(op, "padding", params["padding"], 0),
            "output_padding": _one_as_pair(op, "output_padding", params["output_padding"], 0),
            "dilation": _one_as_pair(op, "dilation", params["dilation"], 1),
            "groups": params["groups"]}


def _ct1d_infer(x, weight, bias, **params):
    op = "conv_transpose1d"
    dtype, n, cout = _ct_infer(op, x, weight, bias, groups=params["groups"], axes=("L",),
                               **{k: params[k] for k in ("stride", "padding", "output_padding",
                                                         "dilation")})
    p2 = _ct1d_2d(params)
    _ct_pairs(op, p2["stride"], p2["padding"], p2["output_padding"], p2["dilation"])
    return TensorType(dtype, (n, cout, _ct_out(op, "length", x.shape[2], weight.shape[2],
                                               p2["stride"][1], p2["padding"][1],
                                               p2["output_padding"][1], p2["dilation"][1])))


def _ct1d_forward(x, weight, bias, **params):
    out, saved = _ct2d_forward(x[:, :, None, :], weight[:, :, None, :], bias, **_ct1d_2d(params))
    return out[:, :, 0, :], saved


def _ct1d_kernel(*args, **params):
    return _ct1d_forward(*args, **params)[0]


def _ct1d_vjp(ctx, g):
    x, weight, bias = ctx.inputs
    ctx2 = SimpleNamespace(inputs=(x[:, :, None, :], weight[:, :, None, :], bias),
                           saved=ctx.saved, needs_grad=ctx.needs_grad)
    gx, gw, gb = _ct2d_vjp(ctx2, g[:, :, None, :])
    return (None if gx is None else gx[:, :, 0, :]), (None if gw is None else gw[:, :, 0, :]), gb


def _ct1d_samples(rng):
    r = rng.standard_normal
    yield Sample(args=(r((2, 3, 5)), r((3, 2, 3)), r(2)), name="basic")
    yield Sample(args=(r((1, 2, 6)), r((2, 3, 4)), None),
                 params={"stride": 3, "padding": 1, "output_padding": 2}, name="stride3")
    yield Sample(args=(r((1, 4, 5)), r((4, 1, 2)), r(2)),
                 params={"groups": 2, "dilation": 2}, name="groups_dilation")


conv_transpose1d = OpDef(
    name="conv_transpose1d", inputs=("input", "weight", "bias?"), params=dict(_CT_PARAMS),
    kernel=_ct1d_kernel, forward=_ct1d_forward, infer=_ct1d_infer, vjp=_ct1d_vjp,
    samples=_ct1d_samples, traits=OpTraits(batch="rows"),
    doc="The transposed 1-d convolution over (N, C_in, L) input with weight "
        "(C_in, C_out/groups, k), as torch.nn.functional.conv_transpose1d.",
)

OPS = (conv1d, conv_transpose1d, conv_transpose2d)
