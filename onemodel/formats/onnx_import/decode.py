"""Proto decoding: ONNX tensors, attributes and protobuf strings as Python and numpy values.

Everything here reads one proto and trusts nothing in it: a string that is not UTF-8, a dtype
OneModel has no counterpart for, or a tensor ``onnx.numpy_helper`` cannot read is an error
naming the place.
"""
from __future__ import annotations

import numpy as np

from ..onnx_dtypes import ONNX_TO_DTYPE, onnx_type_name
from .errors import OnnxImportError, OnnxUnsupportedError

#: ONNX element types OneModel represents


def _attr_value(onnx, a, where: str):
    t = a.type
    A = onnx.AttributeProto
    _text(a.name, f"{where}: attribute name")
    if t == A.FLOAT:
        return float(str(np.float32(a.f)))  # the shortest decimal that is this float32
    if t == A.INT:
        return int(a.i)
    if t == A.STRING:
        return a.s.decode("utf-8", "replace")
    if t == A.TENSOR:
        return _tensor_array(onnx, a.t, where)
    if t == A.FLOATS:
        return [float(str(np.float32(x))) for x in a.floats]
    if t == A.INTS:
        return [int(x) for x in a.ints]
    if t == A.STRINGS:
        return [s.decode("utf-8", "replace") for s in a.strings]
    if t == A.TENSORS:
        return [_tensor_array(onnx, x, where) for x in a.tensors]
    if t == A.GRAPH:  # If's branches, Loop's and Scan's body: see onnx_subgraph.py
        from ..onnx_subgraph import read_graph

        return read_graph(onnx, a.g, f"{where}: attribute {a.name!r}")
    raise OnnxUnsupportedError(f"{where}: attribute {a.name!r} of type "
                               f"{A.AttributeType.Name(t)} is not supported (lists of subgraphs, "
                               f"sparse tensors and type protos are not imported)")


def _text(x, where: str) -> str:
    """A protobuf string field as ``str``: protobuf hands back ``bytes`` for a proto2 string that
    is not valid UTF-8 (a corrupted or hostile file)."""
    if isinstance(x, str):
        return x
    raise OnnxImportError(f"{where}: {bytes(x)[:40]!r} is not valid UTF-8 text")


def _tensor_array(onnx, t, where: str) -> np.ndarray:
    _text(t.name, f"{where}: tensor name")
    if t.data_type not in ONNX_TO_DTYPE:
        name = onnx_type_name(t.data_type)
        raise OnnxUnsupportedError(f"{where}: tensor {t.name!r} has dtype {name}, which OneModel "
                                   f"does not support")
    try:
        arr = onnx.numpy_helper.to_array(t)
    except Exception as exc:  # noqa: BLE001
        raise OnnxImportError(f"{where}: tensor {t.name!r} cannot be read: {exc}") from exc
    want = ONNX_TO_DTYPE[t.data_type].numpy
    return np.require(np.asarray(arr, dtype=want), requirements="C")
