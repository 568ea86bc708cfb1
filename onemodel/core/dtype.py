"""Element types and PyTorch-style type promotion."""
from __future__ import annotations

import enum

import numpy as np

from ..errors import OneModelError


class DType(enum.Enum):
    F16 = "f16"
    F32 = "f32"
    F64 = "f64"
    I8 = "i8"
    I16 = "i16"
    I32 = "i32"
    I64 = "i64"
    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    BOOL = "bool"

    @property
    def numpy(self) -> np.dtype:
        return _TO_NUMPY[self]

    @property
    def is_float(self) -> bool:
        return self in (DType.F16, DType.F32, DType.F64)

    @property
    def is_int(self) -> bool:
        return self in (DType.I8, DType.I16, DType.I32, DType.I64, DType.U8, DType.U16,
                        DType.U32, DType.U64)

    @property
    def itemsize(self) -> int:
        return _TO_NUMPY[self].itemsize

    @classmethod
    def from_numpy(cls, dtype) -> "DType":
        try:
            return _FROM_NUMPY[np.dtype(dtype)]
        except (KeyError, TypeError):
            raise DTypeError(f"numpy dtype {dtype!r} has no OneModel DType; supported: "
                             f"{', '.join(str(d.numpy) for d in DType)}") from None

    @classmethod
    def parse(cls, value) -> "DType":
        """A DType from a DType, its short name ("f32"), its enum name ("F32"), numpy's name
        ("float32") or a numpy dtype."""
        if isinstance(value, DType):
            return value
        if isinstance(value, str):
            for d in DType:
                if value in (d.value, d.name, d.numpy.name):
                    return d
            raise DTypeError(f"unknown dtype name {value!r}; known: "
                             f"{', '.join(d.value for d in DType)} (or numpy's names: "
                             f"{', '.join(d.numpy.name for d in DType)})")
        return cls.from_numpy(value)

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype, under the name numpy looks for: ``np.zeros(3, DType.F32)`` works."""
        return _TO_NUMPY[self]

    def __eq__(self, other) -> bool:
        """Equal to itself and to the same numpy dtype (``x.dtype == np.float32`` as in numpy)."""
        if isinstance(other, DType):
            return self is other
        if isinstance(other, np.dtype) or (isinstance(other, type) and issubclass(other, np.generic)):
            return _TO_NUMPY[self] == np.dtype(other)
        return NotImplemented

    __hash__ = enum.Enum.__hash__

    def __repr__(self) -> str:
        return f"DType.{self.name}"

    def __str__(self) -> str:
        return self.value


class DTypeError(OneModelError, TypeError):
    """An unsupported or mismatched element type."""


_TO_NUMPY: dict[DType, np.dtype] = {
    DType.F16: np.dtype(np.float16), DType.F32: np.dtype(np.float32),
    DType.F64: np.dtype(np.float64), DType.I8: np.dtype(np.int8), DType.I16: np.dtype(np.int16),
    DType.I32: np.dtype(np.int32), DType.I64: np.dtype(np.int64), DType.U8: np.dtype(np.uint8),
    DType.U16: np.dtype(np.uint16), DType.U32: np.dtype(np.uint32),
    DType.U64: np.dtype(np.uint64), DType.BOOL: np.dtype(np.bool_),
}
_FROM_NUMPY = {v: k for k, v in _TO_NUMPY.items()}

_FLOAT_RANK = {DType.F16: 0, DType.F32: 1, DType.F64: 2}


def promote_types(*dtypes: DType) -> DType:
    """PyTorch's promotion between tensors: floats win over ints and bools (keeping the float's
    width, so i64 + f32 is f32), the wider float wins, ints promote as numpy does (u8 + i8 is
    i16, u32 + i32 is i64; u64 with a signed int is f64, numpy's rule, where PyTorch refuses)."""
    result = dtypes[0]
    for d in dtypes[1:]:
        result = _promote2(result, d)
    return result


def _promote2(a: DType, b: DType) -> DType:
    if a == b:
        return a
    if a.is_float or b.is_float:
        floats = [d for d in (a, b) if d.is_float]
        return max(floats, key=_FLOAT_RANK.__getitem__)
    if a == DType.BOOL:
        return b
    if b == DType.BOOL:
        return a
    return DType.from_numpy(np.promote_types(a.numpy, b.numpy))
