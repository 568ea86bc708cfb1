"""The errors of ONNX import and export, in a module below both.

The import machinery, its checks, the export, the dtype table and plugins' rules all raise these,
so none of them imports another to name an error (and importing this is cheap: no onnx).
"""
from __future__ import annotations

from ..errors import FormatError, PluginError


class OnnxImportError(FormatError):
    """An ONNX file cannot be read (malformed, external data outside its folder...)."""


class OnnxUnsupportedError(OnnxImportError):
    """The file uses ops, attributes or dtypes that OneModel does not import."""


class OnnxDeclined(OnnxUnsupportedError):
    """An import rule leaves the node to another rule claiming its op type (`ctx.decline`);
    its message is reported only when no rule takes the node and none said more."""


class OnnxExportError(FormatError):
    """A graph cannot be written as ONNX (an op without lowering, an unsupported param...)."""


class OnnxMappingError(PluginError):
    """A plugin's ONNX mappings do not fit its ops (a mapping for an op it does not define)."""


__all__ = ["OnnxImportError", "OnnxUnsupportedError", "OnnxDeclined", "OnnxExportError",
           "OnnxMappingError"]
