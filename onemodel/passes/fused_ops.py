"""Op records for the fused nodes the ``all``-level passes create.

They are ordinary `OpDef`s (kernel, inference, samples), so every backend runs them: the kernels
here compose the registered ops' own kernels (the reference semantics); a backend may register
faster `KernelDef`s for them. They have no gradient (``vjp=None``): fusion happens after tracing.
"""
from __future__ import annotations

import numpy as np

from ..core.dispatch import infer as _infer
from ..core.types import TensorType
from ..registry import get_op
from ..registry.records import OpDef, Param, Sample

ACTIVATIONS = ("relu", "sigmoid", "tanh", "gelu", "gelu_tanh")


def activation_op(name: str) -> tuple[str, dict]:
    """The op and params an activation name stands for."""
    if name == "gelu":
        return "gelu", {"approximate": "none"}
    if name == "gelu_tanh":
        return "gelu", {"approximate": "tanh"}
    return name, {}


def apply_activation(y: np.ndarray, activation: str) -> np.ndarray:
    op, params = activation_op(activation)
    return get_op(op).kernel(y, **params)


def _infer_via(op_name: str, *types, **params) -> TensorType:
    return _infer(get_op(op_name), list(types), params)


# -- fused_linear -------------------------------------------------------------------------------
def _fused_linear(x, weight, bias=None, activation="relu"):
    return apply_activation(get_op("linear").kernel(x, weight, bias), activation)


def _fused_linear_samples(rng):
    for act in ACTIVATIONS:
        yield Sample(args=(rng.standard_normal((3, 4)), rng.standard_normal((5, 4)),
                           rng.standard_normal(5)), params={"activation": act}, grad=False,
                     name=act)
    yield Sample(args=(rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), None),
                 params={"activation": "relu"}, grad=False, name="nobias")


fused_linear = OpDef(
    name="fused_linear", inputs=("x", "weight", "bias?"),
    params={"activation": Param(kind="str", choices=ACTIVATIONS)},
    kernel=_fused_linear,
    infer=lambda x, w, b=None, activation="relu": _infer_via("linear", x, w, b),
    vjp=None, samples=_fused_linear_samples,
    doc="activation(linear(x, weight, bias)), made by the fuse_activation pass.")


# -- fused_conv2d -------------------------------------------------------------------------------
_CONV_PARAMS = ("stride", "padding", "dilation", "groups")


def _fused_conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                  activation="relu"):
    y = get_op("conv2d").kernel(x, weight, bias, stride=stride, padding=padding,
                                dilation=dilation, groups=groups)
    return apply_activation(y, activation)


def _fused_conv2d_infer(x, w, b=None, stride=1, padding=0, dilation=1, groups=1,
                        activation="relu"):
    return _infer_via("conv2d", x, w, b, stride=stride, padding=padding, dilation=dilation,
                      groups=groups)


def _fused_conv2d_samples(rng):
    yield Sample(args=(rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3)),
                       rng.standard_normal(4)),
                 params={"padding": 1, "activation": "relu"}, grad=False, name="relu")
    yield Sample(args=(rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3)),
                       None), params={"stride": 2, "activation": "tanh"}, grad=False,
                 name="tanh")


fused_conv2d = OpDef(
    name="fused_conv2d", inputs=("x", "weight", "bias?"),
    params={"stride": Param(kind="ints", default=1), "padding": Param(kind="ints", default=0),
            "dilation": Param(kind="ints", default=1), "groups": Param(kind="int", default=1),
            "activation": Param(kind="str", choices=ACTIVATIONS)},
    kernel=_fused_conv2d, infer=_fused_conv2d_infer, vjp=None, samples=_fused_conv2d_samples,
    doc="activation(conv2d(x, weight, bias, ...)), made by the fuse_activation pass.")


# -- matmul_t -----------------------------------------------------------------------------------
def _t(a):
    return np.swapaxes(a, -1, -2)


def _matmul_t(a, b, transpose_a=False, transpose_b=False):
    return get_op("matmul").kernel(_t(a) if transpose_a else a, _t(b) if transpose_b else b)


def _tt(t: TensorType) -> TensorType:
    s = list(t.shape)
    s[-1], s[-2] = s[-2], s[-1]
    return TensorType(t.dtype, s)


def _matmul_t_infer(a, b, transpose_a=False, transpose_b=False):
    return _infer_via("matmul", _tt(a) if transpose_a else a, _tt(b) if transpose_b else b)


def _matmul_t_samples(rng):
    yield Sample(args=(rng.standard_normal((4, 3)), rng.standard_normal((4, 5))),
                 params={"transpose_a": True}, grad=False, name="ta")
    yield Sample(args=(rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))),
                 params={"transpose_b": True}, grad=False, name="tb")


matmul_t = OpDef(
    name="matmul_t", inputs=("a", "b"),
    params={"transpose_a": Param(kind="bool", default=False),
            "transpose_b": Param(kind="bool", default=False)},
    kernel=_matmul_t, infer=_matmul_t_infer, vjp=None, samples=_matmul_t_samples,
    doc="matmul with its operands' last two axes swapped first, made by fold_transpose_matmul.")


# -- elementwise_chain --------------------------------------------------------------------------
ACC = -1  # in a step's args: the previous step's result


def _step_args(step, inputs, acc):
    return [acc if j == ACC else inputs[j] for j in step[1]]


def _chain(*inputs, steps=()):
    acc = None
    for step in steps:
        op = get_op(step[0])
        acc = op.kernel(*_step_args(step, inputs, acc), **dict(step[2]))
    return acc


def _chain_infer(*types, steps=()):
    acc = None
    for step in steps:
        acc = _infer_via(step[0], *_step_args(step, types, acc), **dict(step[2]))
    return acc


def _chain_samples(rng):
    x, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    yield Sample(args=([x, b],), params={"steps": (("add", (0, 1), ()), ("relu", (ACC,), ()))},
                 grad=False, name="add_relu")
    yield Sample(args=([x, b, np.asarray(2.0)],),
                 params={"steps": (("mul", (0, 2), ()), ("sub", (1, ACC), ()),
                                   ("tanh", (ACC,), ()))}, grad=False, name="mul_sub_tanh")


elementwise_chain = OpDef(
    name="elementwise_chain", inputs=("inputs*",),
    params={"steps": Param(kind="any", doc="((op, args, params), ...): args index the inputs, "
                                            "-1 is the previous step's result")},
    kernel=_chain, infer=_chain_infer, vjp=None, samples=_chain_samples,
    doc="A chain of elementwise ops computed in one output buffer (fuse_elementwise).")

from ..formats.onnx_fused import with_onnx  # noqa: E402  ONNX lowerings of these records
FUSED_OPS = with_onnx((fused_linear, fused_conv2d, matmul_t, elementwise_chain))
