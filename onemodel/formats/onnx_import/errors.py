"""The errors of ONNX import (defined in ``onnx_errors``, below import and export alike), and the
one place that imports ``onnx`` for the import."""
from __future__ import annotations

from ..onnx_errors import OnnxDeclined, OnnxImportError, OnnxUnsupportedError


def _onnx():
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover
        raise OnnxImportError("ONNX import needs the 'onnx' package (pip install onnx)") from exc
    return onnx


__all__ = ["OnnxImportError", "OnnxUnsupportedError", "OnnxDeclined", "_onnx"]
