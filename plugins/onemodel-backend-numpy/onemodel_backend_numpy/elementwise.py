"""Elementwise and shape kernels: numpy ufuncs writing straight into the plan's buffers."""
from __future__ import annotations

import numpy as np

from onemodel.core.plan import OUT, VIEW, PlanKernel
from onemodel.registry import KernelDef

from ._util import all_float_same, out_type

BINARY_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                 "maximum": np.maximum, "minimum": np.minimum, "pow": np.power}
UNARY_UFUNCS = {"neg": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
                "abs": np.absolute, "tanh": np.tanh}


def _binary(name):
    ufunc = BINARY_UFUNCS[name]

    def make(params, types):
        if len(types) != 2 or not all_float_same(types):
            return None
        return PlanKernel(ufunc, OUT, inplace=True)

    return KernelDef(op=name, backend="numpy", make=make, doc=f"np.{ufunc.__name__} with out=")


def _unary(name):
    ufunc = UNARY_UFUNCS[name]

    def make(params, types):
        if not all_float_same(types):
            return None
        return PlanKernel(ufunc, OUT, inplace=True)

    return KernelDef(op=name, backend="numpy", make=make, doc=f"np.{ufunc.__name__} with out=")


def zero(dtype) -> np.ndarray:
    """A 0-d zero of ``dtype``: ufuncs take it faster than a Python scalar."""
    return np.zeros((), dtype)


def _relu_make(params, types):
    if not all_float_same(types):
        return None
    return PlanKernel(np.maximum, OUT, inplace=True, extra=(zero(types[0].dtype.numpy),))


def sigmoid_into(x, out):
    """sigmoid(x) = 0.5 * tanh(x / 2) + 0.5: no overflow, four in-place ufuncs."""
    np.multiply(x, 0.5, out=out)
    np.tanh(out, out=out)
    np.multiply(out, 0.5, out=out)
    np.add(out, 0.5, out=out)
    return out


def _sigmoid_make(params, types):
    if not all_float_same(types):
        return None
    return PlanKernel(sigmoid_into, OUT, inplace=True)


def _view(op):
    def make(params, types):
        t = out_type(op, params, types)
        shape = tuple(t.shape)

        def reshape(x):
            return x.reshape(shape)

        return PlanKernel(reshape, VIEW)

    return KernelDef(op=op, backend="numpy", make=make, doc="a reshaped view")


def _transpose_make(params, types):
    a, b = int(params["axis0"]), int(params["axis1"])

    def transpose(x):
        return x.swapaxes(a, b)

    return PlanKernel(transpose, VIEW)


def _permute_make(params, types):
    axes = tuple(int(a) for a in params["axes"])

    def permute(x):
        return x.transpose(axes)

    return PlanKernel(permute, VIEW)


def _matmul_make(params, types):
    a, b = types
    if len(a.shape) < 2 or len(b.shape) < 2 or not all_float_same(types):
        return None
    return PlanKernel(np.matmul, OUT)


def _matmul_t_make(params, types):
    a, b = types
    if len(a.shape) < 2 or len(b.shape) < 2 or not all_float_same(types):
        return None
    ta, tb = bool(params.get("transpose_a")), bool(params.get("transpose_b"))
    bconst = getattr(b, "value", None)
    if bconst is not None and not ta:
        packed = np.ascontiguousarray(np.swapaxes(bconst, -1, -2) if tb else bconst)

        def matmul_const(x, out):
            return np.matmul(x, packed, out=out)

        return PlanKernel(matmul_const, OUT, inputs=(0,))

    def matmul_t(x, y, out):
        return np.matmul(x.swapaxes(-1, -2) if ta else x, y.swapaxes(-1, -2) if tb else y,
                         out=out)

    return PlanKernel(matmul_t, OUT)


KERNELS = (
    *(_binary(n) for n in BINARY_UFUNCS),
    *(_unary(n) for n in UNARY_UFUNCS),
    KernelDef(op="relu", backend="numpy", make=_relu_make, doc="np.maximum(x, 0, out=)"),
    KernelDef(op="sigmoid", backend="numpy", make=_sigmoid_make, doc="tanh form, in place"),
    *(_view(op) for op in ("reshape", "flatten", "squeeze", "unsqueeze")),
    KernelDef(op="transpose", backend="numpy", make=_transpose_make, doc="a swapped-axes view"),
    KernelDef(op="permute", backend="numpy", make=_permute_make, doc="a transposed view"),
    KernelDef(op="matmul", backend="numpy", make=_matmul_make, doc="np.matmul with out="),
    KernelDef(op="matmul_t", backend="numpy", make=_matmul_t_make,
              doc="np.matmul on swapped-axes views (a constant operand pre-packed)"),
)
