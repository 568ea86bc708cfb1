"""Kernels for the nn ops and the fused ops: weights pre-packed once per plan, results written
into the plan's buffers, activations applied in place."""
from __future__ import annotations

import numpy as np

from onemodel.core.plan import OUT, PlanKernel
from onemodel.registry import KernelDef, get_op

from ._util import all_float_same, const, out_type, pair
from .elementwise import sigmoid_into, zero
from .special import gelu_into, gelu_tanh_into


def activation_into(name: str, dtype=np.float32):
    """An in-place activation ``f(out)`` for a fused op's ``activation`` param."""
    if name == "relu":
        z = zero(dtype)
        return lambda out: np.maximum(out, z, out=out)
    if name == "tanh":
        return lambda out: np.tanh(out, out=out)
    if name == "sigmoid":
        return lambda out: sigmoid_into(out, out)
    if np.dtype(dtype) == np.float32:
        fast = gelu_tanh_into if name == "gelu_tanh" else gelu_into
        return lambda out: fast(out, out)
    approximate = "tanh" if name == "gelu_tanh" else "none"
    gelu = get_op("gelu").kernel
    return lambda out: np.copyto(out, gelu(out, approximate=approximate))


# -- linear --------------------------------------------------------------------------------------
def _linear_kernel(types, activation=None):
    x, w = types[0], types[1]
    b = types[2] if len(types) > 2 else None
    if not all_float_same([x, w, b]) or len(w.shape) != 2 or len(x.shape) < 1:
        return None
    W, B = const(w), const(b) if b is not None else None
    if W is None or (b is not None and B is None):
        return None  # weights fed at run time: the generic kernel
    act = activation_into(activation, x.dtype.numpy) if activation else None
    wt = np.ascontiguousarray(W.T)  # (in, out): x @ wt with no transposed operand
    # np.dot has less overhead than np.matmul for 2-D operands (batch 1 is all overhead)
    matmul, add = (np.dot if len(x.shape) == 2 else np.matmul), np.add
    if B is None and act is None:
        def linear(x, out):
            return matmul(x, wt, out=out)
    elif B is None:
        def linear(x, out):
            matmul(x, wt, out=out)
            act(out)
            return out
    else:
        B = np.ascontiguousarray(B)
        if act is None:
            def linear(x, out):
                matmul(x, wt, out=out)
                add(out, B, out=out)
                return out
        elif activation == "relu":
            maximum, z = np.maximum, zero(x.dtype.numpy)

            def linear(x, out):
                matmul(x, wt, out=out)
                add(out, B, out=out)
                maximum(out, z, out=out)
                return out
        else:
            def linear(x, out):
                matmul(x, wt, out=out)
                add(out, B, out=out)
                act(out)
                return out
    return PlanKernel(linear, OUT, inputs=(0,))


def _linear_make(params, types):
    return _linear_kernel(types)


def _fused_linear_make(params, types):
    return _linear_kernel(types, params["activation"])


# -- conv2d (im2col + one batched matmul written straight into NCHW) ------------------------------
def _conv_kernel(params, types, activation=None):
    x, w = types[0], types[1]
    b = types[2] if len(types) > 2 else None
    W, B = const(w), const(b) if b is not None else None
    if (W is None or (b is not None and B is None) or len(x.shape) != 4
            or not all_float_same([x, w, b]) or int(params.get("groups", 1)) != 1):
        return None
    try:
        sh, sw = pair(params.get("stride", 1))
        ph, pw = pair(params.get("padding", 0))
        dh, dw = pair(params.get("dilation", 1))
    except (TypeError, ValueError):
        return None
    n, c, h, wd = x.shape
    o, _, kh, kw = W.shape
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    wmat = np.ascontiguousarray(W.reshape(o, c * kh * kw))
    bias = None if B is None else np.ascontiguousarray(B.reshape(1, o, 1))
    act = activation_into(activation, x.dtype.numpy) if activation else None
    dtype = x.dtype.numpy
    window = np.lib.stride_tricks.sliding_window_view
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1

    def conv2d(x, out):
        if ph or pw:
            xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw), dtype)
            xp[:, :, ph:ph + h, pw:pw + wd] = x
        else:
            xp = x
        win = window(xp, (span_h, span_w), axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
        # (n, c, oh, ow, kh, kw) -> (n, c, kh, kw, oh, ow) -> (n, c*kh*kw, oh*ow): one copy
        cols = win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * kh * kw, oh * ow)
        res = out.reshape(n, o, oh * ow)
        np.matmul(wmat, cols, out=res)
        if bias is not None:
            np.add(res, bias, out=res)
        if act is not None:
            act(out)
        return out

    return PlanKernel(conv2d, OUT, inputs=(0,))


def _conv_make(params, types):
    return _conv_kernel(params, types)


def _fused_conv_make(params, types):
    return _conv_kernel(params, types, params["activation"])


# -- pooling -------------------------------------------------------------------------------------
def _max_pool_make(params, types):
    x = types[0]
    if len(x.shape) != 4 or not x.dtype.is_float:
        return None
    try:
        kh, kw = pair(params["kernel_size"])
        stride = params.get("stride")
        sh, sw = pair(stride) if stride is not None else (kh, kw)
        ph, pw = pair(params.get("padding", 0))
    except (TypeError, ValueError, KeyError):
        return None
    if (params.get("dilation", 1) not in (1, (1, 1)) or params.get("ceil_mode", False)
            or params.get("return_indices", False)
            or len(np.atleast_1d(params.get("padding", 0))) > 2):
        return None  # dilation, ceil mode, asymmetric pads, indices: the op's own kernel
    n, c, h, w = x.shape
    hp, wp = h + 2 * ph, w + 2 * pw
    oh, ow = (hp - kh) // sh + 1, (wp - kw) // sw + 1
    if oh < 1 or ow < 1:
        return None
    dtype = x.dtype.numpy
    # separable: the maximum over the kh window rows (strided row views, long contiguous runs),
    # then over the kw columns of that: (kh - 1) + (kw - 1) elementwise maxima instead of a
    # slow reduce or kh*kw - 1 maxima over doubly strided views
    rows = [slice(i, i + sh * (oh - 1) + 1, sh) for i in range(kh)]
    cols = [slice(j, j + sw * (ow - 1) + 1, sw) for j in range(kw)]
    maximum = np.maximum

    def max_pool2d(x, out):
        if ph or pw:
            xp = np.full((n, c, hp, wp), -np.inf, dtype)
            xp[:, :, ph:ph + h, pw:pw + w] = x
            x = xp
        if kh == 1:
            m = x[:, :, rows[0], :]
        else:
            m = maximum(x[:, :, rows[0], :], x[:, :, rows[1], :])
            for r in rows[2:]:
                maximum(m, x[:, :, r, :], out=m)
        if kw == 1:
            np.copyto(out, m[..., cols[0]])
        else:
            maximum(m[..., cols[0]], m[..., cols[1]], out=out)
            for cs in cols[2:]:
                maximum(out, m[..., cs], out=out)
        return out

    return PlanKernel(max_pool2d, OUT)


# -- normalisation and softmax ---------------------------------------------------------------------
def _softmax_make(params, types):
    x = types[0]
    if not all_float_same([x]) or 0 in x.shape:
        return None  # an empty tensor: the op's own kernel
    axis = int(params.get("axis", -1))

    def softmax(x, out):
        np.subtract(x, x.max(axis=axis, keepdims=True), out=out)
        np.exp(out, out=out)
        np.divide(out, out.sum(axis=axis, keepdims=True), out=out)
        return out

    return PlanKernel(softmax, OUT, inplace=True)


def _layer_norm_make(params, types):
    x = types[0]
    w = types[1] if len(types) > 1 else None
    b = types[2] if len(types) > 2 else None
    if not all_float_same([x, w, b]):
        return None
    ns = params.get("normalized_shape")
    k = len(ns) if isinstance(ns, (tuple, list)) else 1
    axes = tuple(range(-k, 0))
    eps = float(params.get("eps", 1e-5))
    W = None if w is None else const(w)
    B = None if b is None else const(b)
    if (w is not None and W is None) or (b is not None and B is None):
        return None

    def layer_norm(x, out):
        np.subtract(x, x.mean(axis=axes, keepdims=True), out=out)
        var = np.mean(np.square(out), axis=axes, keepdims=True)
        var += eps
        np.sqrt(var, out=var)
        np.divide(out, var, out=out)
        if W is not None:
            np.multiply(out, W, out=out)
        if B is not None:
            np.add(out, B, out=out)
        return out

    return PlanKernel(layer_norm, OUT, inputs=(0,))


def _batch_norm_make(params, types):
    if params.get("training", False):
        return None
    x = types[0]
    consts = [None if t is None else const(t) for t in types[1:5]]
    if any(t is not None and c is None for t, c in zip(types[1:5], consts)):
        return None
    if len(x.shape) < 2 or not x.dtype.is_float:
        return None
    mean, var = consts[0], consts[1]
    if mean is None or var is None:
        return None
    ch = x.shape[1]
    gamma = np.ones(ch) if len(consts) < 3 or consts[2] is None else consts[2].astype(np.float64)
    beta = np.zeros(ch) if len(consts) < 4 or consts[3] is None else consts[3].astype(np.float64)
    scale = gamma / np.sqrt(var.astype(np.float64) + float(params.get("eps", 1e-5)))
    shift = beta - mean.astype(np.float64) * scale
    bshape = (1, ch) + (1,) * (len(x.shape) - 2)
    scale = scale.astype(x.dtype.numpy).reshape(bshape)
    shift = shift.astype(x.dtype.numpy).reshape(bshape)

    def batch_norm(x, out):
        np.multiply(x, scale, out=out)
        np.add(out, shift, out=out)
        return out

    return PlanKernel(batch_norm, OUT, inputs=(0,))


def _sdpa_make(params, types):
    q, k, v = types[:3]
    mask = types[3] if len(types) > 3 else None
    if not all_float_same([q, k, v]) or (mask is not None and mask.dtype != q.dtype):
        return None  # boolean masks and mixed dtypes: the op's own kernel
    scale = np.asarray(1.0 / np.sqrt(q.shape[-1]), q.dtype.numpy)
    matmul, exp = np.matmul, np.exp

    def attention(q, k, v, mask, out):
        s = matmul(q, k.swapaxes(-1, -2))
        s *= scale
        if mask is not None:
            s += mask
        s -= s.max(axis=-1, keepdims=True)
        exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        return matmul(s, v, out=out)

    return PlanKernel(attention, OUT)


KERNELS = (
    KernelDef(op="scaled_dot_product_attention", backend="numpy", make=_sdpa_make,
              doc="scores computed and softmaxed in one buffer, written into out="),
    KernelDef(op="linear", backend="numpy", make=_linear_make,
              doc="x @ W.T pre-packed as a contiguous (in, out) matrix, bias added in place"),
    KernelDef(op="fused_linear", backend="numpy", make=_fused_linear_make,
              doc="linear + activation in one buffer"),
    KernelDef(op="conv2d", backend="numpy", make=_conv_make,
              doc="im2col + one batched matmul into the NCHW output (groups=1)"),
    KernelDef(op="fused_conv2d", backend="numpy", make=_fused_conv_make,
              doc="conv2d + activation in one buffer"),
    KernelDef(op="max_pool2d", backend="numpy", make=_max_pool_make,
              doc="non-overlapping windows as one reshaped max"),
    KernelDef(op="softmax", backend="numpy", make=_softmax_make, doc="in one buffer"),
    KernelDef(op="layer_norm", backend="numpy", make=_layer_norm_make, doc="in one buffer"),
    KernelDef(op="batch_norm", backend="numpy", make=_batch_norm_make,
              doc="eval mode: one scale and one shift, folded once"),
)

# out_type is re-exported for the chain kernels
__all__ = ["KERNELS", "activation_into", "out_type"]
