"""The errors of ONNX import, and the one place that imports ``onnx`` for it.

At the bottom of the package: every other module (and the checks) raises these, so they import
nothing of the import machinery.
"""
from __future__ import annotations

from ...errors import FormatError


class OnnxImportError(FormatError):
    """An ONNX file cannot be read (malformed, external data outside its folder...)."""


class OnnxUnsupportedError(OnnxImportError):
    """The file uses ops, attributes or dtypes that OneModel does not import."""


class OnnxDeclined(OnnxUnsupportedError):
    """An import rule leaves the node to another rule claiming its op type (`ctx.decline`);
    its message is reported only when no rule takes the node and none said more."""


def _onnx():
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover
        raise OnnxImportError("ONNX import needs the 'onnx' package (pip install onnx)") from exc
    return onnx
