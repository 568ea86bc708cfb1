"""bitcast (torch's ``Tensor.view(dtype)``, ONNX BitCast): the bytes of a tensor read as another
dtype, little endian, with no value conversion. Between dtypes of one width the shape is kept;
otherwise the last axis scales by the width ratio (float32 to uint8 makes it 4 times longer,
uint8 to float32 4 times shorter, so its length must divide), as in torch. A bool result reads
each nonzero byte as True (a bool holds only 0 or 1). Nothing here is differentiable."""
from __future__ import annotations

import numpy as np

from onemodel.core import Dim
from onemodel.registry import OpDef, Param, Sample

from ._common import DType, OpError, TensorType


def _last_axis(shape: tuple, src: DType, dst: DType) -> tuple:
    """The result's shape: the last axis scaled by src's width over dst's."""
    a, b = src.itemsize, dst.itemsize
    if a == b:
        return tuple(shape)
    what = f"ops.bitcast: {src.name.lower()} to {dst.name.lower()}"
    if not shape:
        raise OpError(f"{what} changes the width ({a} to {b} bytes), which needs at least one "
                      f"axis; a 0-d tensor can only be bitcast to a dtype of its own width")
    last = shape[-1]
    if a > b:
        return (*shape[:-1], last * (a // b))
    if isinstance(last, Dim):
        raise OpError(f"{what} shortens the last axis {b // a} times, which needs a fixed "
                      f"length; got the symbolic {last}")
    if last % (b // a):
        raise OpError(f"{what} needs the last axis's length ({last}) to be a multiple of "
                      f"{b // a}")
    return (*shape[:-1], last // (b // a))


def _infer(x: TensorType, dtype: DType) -> TensorType:
    return TensorType(dtype, _last_axis(x.shape, x.dtype, dtype))


def _kernel(x, dtype):
    src, dst = DType.from_numpy(x.dtype), DType.parse(dtype)
    shape = _last_axis(x.shape, src, dst)
    raw = np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("<")).reshape(-1).view(np.uint8)
    if dst == DType.BOOL:
        return (raw != 0).reshape(shape)
    out = raw.view(np.dtype(dst.numpy).newbyteorder("<")).reshape(shape)
    return out.astype(dst.numpy)  # in the native byte order, and a fresh array


def _samples(rng):
    f32 = rng.standard_normal((3, 4)).astype(np.float32)
    yield Sample(args=(f32,), params={"dtype": "i32"}, grad=False, name="f32_to_i32")
    yield Sample(args=(rng.integers(-2**31, 2**31, (5,)).astype(np.int32),),
                 params={"dtype": "u32"}, grad=False, name="i32_to_u32")
    yield Sample(args=(f32,), params={"dtype": "u8"}, grad=False, name="wider_to_bytes")
    yield Sample(args=(rng.integers(0, 256, (2, 8)).astype(np.uint8),), params={"dtype": "f16"},
                 grad=False, name="bytes_to_f16")
    yield Sample(args=(rng.standard_normal((2, 2)),), params={"dtype": "i16"}, grad=False,
                 name="f64_to_i16")
    yield Sample(args=(np.array(1.5, np.float32),), params={"dtype": "u32"}, grad=False,
                 name="scalar")
    yield Sample(args=(rng.standard_normal((4,)) > 0,), params={"dtype": "u8"}, grad=False,
                 name="bool_to_u8")
    yield Sample(args=(np.array([0, 1, 1, 0], np.int8),), params={"dtype": "bool"}, grad=False,
                 name="i8_to_bool")


bitcast = OpDef(
    name="bitcast", inputs=("x",), params={"dtype": Param(kind="dtype")},
    kernel=_kernel, infer=_infer, vjp=None, samples=_samples, methods=("bitcast",),
    doc="x's bytes (little endian) read as dtype, no value conversion (torch's "
        "x.view(dtype)): a dtype of another width scales the last axis by the width ratio.",
)

OPS = (bitcast,)
