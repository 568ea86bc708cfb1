"""The one table between ONNX element types (``TensorProto.DataType`` codes) and OneModel dtypes.

Import (reading tensors, ``Cast``'s ``to``) and export (value infos, ``Cast`` nodes) both use it,
so a dtype added here works both ways; it imports nothing of either side.
"""
from __future__ import annotations

from ..core.dtype import DType
from .onnx_errors import OnnxUnsupportedError

#: OneModel dtype -> ONNX element type, for every dtype OneModel has
DTYPE_TO_ONNX: dict[DType, int] = {
    DType.F32: 1, DType.U8: 2, DType.I8: 3, DType.U16: 4, DType.I16: 5, DType.I32: 6,
    DType.I64: 7, DType.BOOL: 9, DType.F16: 10, DType.F64: 11, DType.U32: 12, DType.U64: 13,
}
#: ONNX element type -> OneModel dtype, for the ONNX types OneModel represents
ONNX_TO_DTYPE: dict[int, DType] = {code: dt for dt, code in DTYPE_TO_ONNX.items()}

#: names of the ONNX element types OneModel does not represent (for messages)
_OTHER_NAMES = {0: "undefined", 8: "string", 14: "complex64", 15: "complex128", 16: "bfloat16",
                17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz",
                21: "uint4", 22: "int4", 23: "float4e2m1"}


class OnnxDtypeError(OnnxUnsupportedError, ValueError):
    """An ONNX element type OneModel has no dtype for (a refusal: another rule may still take
    the node)."""


def onnx_type_name(code: int) -> str:
    """A readable name for an ONNX element type code (``16`` -> ``"bfloat16"``)."""
    dt = ONNX_TO_DTYPE.get(code)
    if dt is not None:
        return dt.numpy.name
    return _OTHER_NAMES.get(code, str(code))


def dtype_from_onnx(code: int) -> DType:
    """The OneModel dtype of an ONNX element type code; `OnnxDtypeError` names a type OneModel
    does not represent (bfloat16, strings, complex, float8...)."""
    try:
        return ONNX_TO_DTYPE[code]
    except (KeyError, TypeError):
        name = onnx_type_name(code)
        label = f"{code!r} ({name})" if name != str(code) else repr(code)
        raise OnnxDtypeError(f"ONNX element type {label} has no OneModel dtype") from None


def onnx_dtype(dtype) -> int:
    """The ONNX element type code of a OneModel dtype (a `DType`, its name, or a numpy dtype)."""
    return DTYPE_TO_ONNX[DType.parse(dtype)]


__all__ = ["DTYPE_TO_ONNX", "ONNX_TO_DTYPE", "OnnxDtypeError", "onnx_type_name",
           "dtype_from_onnx", "onnx_dtype"]
