"""bitwise_and, bitwise_or, bitwise_xor and bitwise_not (torch.bitwise_*): on the bits of
integers (two's complement for signed ones), and logical on bools. Floats are refused, as in
torch. Nothing here is differentiable (integer results)."""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Sample

from ._common import DType, OpError, TensorType, broadcast_shapes, promote_types


def _check(op: str, *types) -> None:
    for t in types:
        if not (t.dtype.is_int or t.dtype == DType.BOOL):
            raise OpError(f"ops.{op}: takes integer or bool tensors, got {t.dtype.name.lower()}")


def _binary_infer(op: str):
    def infer(a, b):
        _check(op, a, b)
        shape = broadcast_shapes(a.shape, b.shape, op=f"ops.{op}")
        return TensorType(promote_types(a.dtype, b.dtype), shape)
    return infer


def _binary_kernel(op: str, ufunc):
    def kernel(a, b):
        dt = promote_types(DType.from_numpy(a.dtype), DType.from_numpy(b.dtype)).numpy
        if dt.kind not in "iub":
            raise OpError(f"ops.{op}: takes integer or bool tensors, got {dt}")
        return np.asarray(ufunc(a.astype(dt, copy=False), b.astype(dt, copy=False)))
    return kernel


def _not_infer(x):
    _check("bitwise_not", x)
    return TensorType(x.dtype, x.shape)


def _not_kernel(x):
    if x.dtype.kind not in "iub":
        raise OpError(f"ops.bitwise_not: takes integer or bool tensors, got {x.dtype}")
    return np.asarray(np.invert(x))


def _binary_samples(rng):
    ints = lambda dt, *s: rng.integers(-100, 100, s).astype(dt)  # noqa: E731
    yield Sample(args=(ints(np.int32, 3, 4), ints(np.int32, 3, 4)), grad=False, name="int32")
    yield Sample(args=(ints(np.int64, 2, 3, 4), ints(np.int64, 4)), grad=False,
                 name="broadcast")
    yield Sample(args=(rng.integers(0, 256, (3, 1)).astype(np.uint8),
                       rng.integers(0, 256, (1, 4)).astype(np.uint8)), grad=False, name="uint8")
    yield Sample(args=(ints(np.int8, 5), ints(np.int16, 5)), grad=False, name="promote")
    yield Sample(args=(rng.standard_normal((3, 4)) > 0, rng.standard_normal((3, 4)) > 0),
                 grad=False, name="bools")


def _not_samples(rng):
    yield Sample(args=(rng.integers(-100, 100, (3, 4)).astype(np.int32),), grad=False,
                 name="int32")
    yield Sample(args=(rng.integers(0, 2**16, (5,)).astype(np.uint16),), grad=False,
                 name="uint16")
    yield Sample(args=(rng.standard_normal((2, 3)) > 0,), grad=False, name="bools")


def _binary(name: str, ufunc, word: str) -> OpDef:
    return OpDef(
        name=name, inputs=("a", "b"), kernel=_binary_kernel(name, ufunc),
        infer=_binary_infer(name), vjp=None, samples=_binary_samples, methods=(name,),
        doc=f"Elementwise bitwise {word} of integer (or bool) tensors a and b, with "
            f"broadcasting and torch's type promotion.",
    )


bitwise_and = _binary("bitwise_and", np.bitwise_and, "and")
bitwise_or = _binary("bitwise_or", np.bitwise_or, "or")
bitwise_xor = _binary("bitwise_xor", np.bitwise_xor, "xor")

bitwise_not = OpDef(
    name="bitwise_not", inputs=("x",), kernel=_not_kernel, infer=_not_infer, vjp=None,
    samples=_not_samples, methods=("bitwise_not",),
    doc="Every bit of an integer tensor flipped (~x: -x - 1 for signed ints); logical not of a "
        "bool tensor.",
)

OPS = (bitwise_and, bitwise_or, bitwise_xor, bitwise_not)
