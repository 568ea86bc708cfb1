"""conv1d (N, C, L) as conv2d over a height of one: the same im2col GEMMs (conv.py), so the
forward and both gradients are shared, with PyTorch's 1-D argument forms (an int or a 1-tuple).
"""
from __future__ import annotations

from types import SimpleNamespace

from onemodel.core import TensorType
from onemodel.core.symbolic import Dim
from onemodel.errors import OpError
from onemodel.registry import OpDef, OpTraits, Param, Sample

from . import conv
from ._common import check_dim, check_positive_size, float_dtype, require_window


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

OPS = (conv1d,)
