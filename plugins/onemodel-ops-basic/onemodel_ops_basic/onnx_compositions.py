"""ONNX op types that are a few standard ops, imported as those ops (no new op for each):
Celu, ThresholdedRelu, Shrink, Mean, Sinh/Cosh/Asinh/Acosh/Atanh, Hardmax, EyeLike, BitShift,
CumProd and MeanVarianceNormalization. Each rule follows onnx's definition (the formula its
reference evaluator computes), in the input's dtype. plugin.py attaches each to the record of
the op at its heart (``where``, ``add``, ``exp``...)."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.core.symbolic import Dim


def _scalar(ctx, x, value):
    return np.array(value, dtype=ctx.type(x).dtype.numpy)


def _float(ctx, node, x):
    if not ctx.type(x).dtype.is_float:
        ctx.unsupported(f"{node.op_type} of a {ctx.type(x).dtype.name.lower()} tensor (floats)")


def import_celu(ctx, node):
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""
    x = node.inputs[0]
    _float(ctx, node, x)
    a = _scalar(ctx, x, node.attr("alpha", 1.0))
    neg = ctx.emit("mul", [a, ctx.emit("expm1", [ctx.emit("div", [x, a])])])
    return [ctx.emit("where", [ctx.emit("greater", [x, _scalar(ctx, x, 0)]), x, neg])]


def import_thresholded_relu(ctx, node):
    x = node.inputs[0]
    _float(ctx, node, x)
    keep = ctx.emit("greater", [x, _scalar(ctx, x, node.attr("alpha", 1.0))])
    return [ctx.emit("where", [keep, x, _scalar(ctx, x, 0)])]


def import_shrink(ctx, node):
    """x + bias below -lambd, x - bias above lambd, 0 between."""
    x = node.inputs[0]
    lambd, bias = node.attr("lambd", 0.5), node.attr("bias", 0.0)
    if not ctx.type(x).dtype.is_float and not (float(bias).is_integer()):
        ctx.unsupported(f"Shrink of an integer tensor with bias {bias}")
    dt = ctx.type(x).dtype.numpy
    lo = ctx.emit("less", [x, np.array(-lambd, np.float64)])
    hi = ctx.emit("greater", [x, np.array(lambd, np.float64)])
    b = _scalar(ctx, x, bias if ctx.type(x).dtype.is_float else int(bias))
    inner = ctx.emit("where", [hi, ctx.emit("sub", [x, b]), np.array(0, dt)])
    return [ctx.emit("where", [lo, ctx.emit("add", [x, b]), inner])]


def import_mean(ctx, node):
    xs = [i for i in node.inputs if i]
    total = xs[0]
    for x in xs[1:]:
        total = ctx.emit("add", [total, x])
    if len(xs) == 1:
        return [ctx.emit("identity", [total])]
    _float(ctx, node, total)
    return [ctx.emit("div", [total, _scalar(ctx, total, len(xs))])]


def _half(ctx, v):
    return ctx.emit("mul", [v, _scalar(ctx, v, 0.5)])


def import_sinh(ctx, node):
    """(expm1(x) - expm1(-x)) / 2: no cancellation near 0."""
    x = node.inputs[0]
    _float(ctx, node, x)
    return [_half(ctx, ctx.emit("sub", [ctx.emit("expm1", [x]),
                                        ctx.emit("expm1", [ctx.emit("neg", [x])])]))]


def import_cosh(ctx, node):
    x = node.inputs[0]
    _float(ctx, node, x)
    return [_half(ctx, ctx.emit("add", [ctx.emit("exp", [x]),
                                        ctx.emit("exp", [ctx.emit("neg", [x])])]))]


def import_asinh(ctx, node):
    """sign(x) * log(|x| + sqrt(x^2 + 1)): the odd form, exact in sign."""
    x = node.inputs[0]
    _float(ctx, node, x)
    a = ctx.emit("abs", [x])
    r = ctx.emit("sqrt", [ctx.emit("add", [ctx.emit("mul", [a, a]), _scalar(ctx, x, 1)])])
    return [ctx.emit("mul", [ctx.emit("sign", [x]), ctx.emit("log", [ctx.emit("add", [a, r])])])]


def import_acosh(ctx, node):
    x = node.inputs[0]
    _float(ctx, node, x)
    r = ctx.emit("sqrt", [ctx.emit("sub", [ctx.emit("mul", [x, x]), _scalar(ctx, x, 1)])])
    return [ctx.emit("log", [ctx.emit("add", [x, r])])]


def import_atanh(ctx, node):
    """(log1p(x) - log1p(-x)) / 2."""
    x = node.inputs[0]
    _float(ctx, node, x)
    return [_half(ctx, ctx.emit("sub", [ctx.emit("log1p", [x]),
                                        ctx.emit("log1p", [ctx.emit("neg", [x])])]))]


def import_hardmax(ctx, node):
    """1 at the first maximum along ``axis``, 0 elsewhere (opset 13's per-axis form)."""
    x = node.inputs[0]
    if ctx.opset < 13:
        ctx.unsupported(f"Hardmax-{ctx.opset} (it flattens to 2-D; opset 13's form is imported)")
    shape = ctx.type(x).shape
    axis = node.attr("axis", -1) % max(len(shape), 1)
    n = shape[axis]
    if isinstance(n, Dim):
        ctx.unsupported(f"Hardmax over the symbolic axis {n}")
    at = ctx.emit("argmax", [x], axis=axis, keepdims=True)
    iota = np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (len(shape) - axis - 1))
    hit = ctx.emit("equal", [at, iota])
    return [ctx.emit("cast", [hit], dtype=ctx.type(x).dtype)]


def import_eye_like(ctx, node):
    """A constant: only the input's (fixed) shape matters."""
    t = ctx.type(node.inputs[0])
    if len(t.shape) != 2 or any(isinstance(d, Dim) for d in t.shape):
        ctx.unsupported(f"EyeLike of shape {[str(d) for d in t.shape]} (a fixed 2-D shape)")
    code = node.attr("dtype")
    dtype = t.dtype if code is None else ctx.dtype(code, "EyeLike dtype")
    return [np.eye(*t.shape, k=int(node.attr("k", 0)), dtype=dtype.numpy)]


def import_bit_shift(ctx, node):
    """x * 2^y (LEFT, wrapping as a shift does) or floor(x / 2^y) (RIGHT: arithmetic for
    signed dtypes); 8- to 32-bit integers shift in int64 and wrap back when cast. A shift
    below 0 or past the width gives onnx's 0 (or -1, a negative x shifted right)."""
    x, y = node.inputs[0], node.inputs[1]
    dt = ctx.type(x).dtype
    if not dt.is_int or dt == DType.BOOL:
        ctx.unsupported(f"BitShift of {dt.name.lower()} (integers only)")
    direction = node.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        ctx.unsupported(f"BitShift direction {direction!r}")
    bits = 8 * dt.numpy.itemsize
    wide = dt if dt in (DType.U64, DType.I64) else DType.I64
    xw, yw = ((x, y) if wide == dt else
              (ctx.emit("cast", [x], dtype=wide), ctx.emit("cast", [y], dtype=wide)))
    outside = ctx.emit("logical_or", [ctx.emit("less", [yw, np.array(0, wide.numpy)]),
                                      ctx.emit("greater", [yw, np.array(bits - 1, wide.numpy)])])
    safe = ctx.emit("clip", [yw], min=0, max=bits - 1)
    p = ctx.emit("pow", [np.array(2, wide.numpy), safe])
    out = ctx.emit("mul" if direction == "LEFT" else "floor_divide", [xw, p])
    out = out if wide == dt else ctx.emit("cast", [out], dtype=dt)
    fill = np.array(0, dt.numpy)
    if direction == "RIGHT" and dt.numpy.kind == "i":
        fill = ctx.emit("where", [ctx.emit("less", [x, np.array(0, dt.numpy)]),
                                  np.array(-1, dt.numpy), fill])
    return [ctx.emit("where", [outside, fill, out])]


def import_cumprod(ctx, node):
    """cumprod over a constant axis, reversed by flips; exclusive as the product shifted by one
    place (a pad of 1 at the start, the last cropped): exact, with zeros too."""
    x, a = node.inputs[0], node.inputs[1]
    axis = ctx.const(a)
    if axis is None:
        ctx.decline("CumProd's axis is fed at run time")
    rank = ctx.rank(x)
    axis = int(np.asarray(axis).reshape(-1)[0]) % max(rank, 1)
    reverse = bool(node.attr("reverse", 0))
    v = ctx.emit("flip", [x], axes=(axis,)) if reverse else x
    out = ctx.emit("cumprod", [v], axis=axis)
    if node.attr("exclusive", 0):
        widths = [0, 0] * (rank - 1 - axis) + [1, -1]
        out = ctx.emit("pad", [out], pad=tuple(widths), value=1)
    if reverse:
        out = ctx.emit("flip", [out], axes=(axis,))
    if ctx.type(out).dtype != ctx.type(x).dtype:
        out = ctx.emit("cast", [out], dtype=ctx.type(x).dtype)
    return [out]


def import_mvn(ctx, node):
    """(x - mean) / sqrt(mean((x - mean)^2)) over ``axes`` (ONNX's function body, epsilon 1e-9
    added under the root)."""
    x = node.inputs[0]
    _float(ctx, node, x)
    axes = tuple(sorted(a % ctx.rank(x) for a in node.attr("axes", [0, 2, 3])))
    m = ctx.emit("mean", [x], axis=axes, keepdims=True)
    d = ctx.emit("sub", [x, m])
    var = ctx.emit("mean", [ctx.emit("mul", [d, d])], axis=axes, keepdims=True)
    return [ctx.emit("div", [d, ctx.emit("sqrt", [ctx.emit("add", [var,
                                                                   _scalar(ctx, x, 1e-9)])])])]


#: op name -> the ONNX op types its record also claims
RIDERS = {
    "where": {"Celu": import_celu, "ThresholdedRelu": import_thresholded_relu,
              "Shrink": import_shrink},
    "add": {"Mean": import_mean},
    "exp": {"Sinh": import_sinh, "Cosh": import_cosh},
    "log": {"Asinh": import_asinh, "Acosh": import_acosh},
    "log1p": {"Atanh": import_atanh},
    "argmax": {"Hardmax": import_hardmax},
    "full": {"EyeLike": import_eye_like},
    "pow": {"BitShift": import_bit_shift},
    "cumprod": {"CumProd": import_cumprod},
    "mean": {"MeanVarianceNormalization": import_mvn},
}
