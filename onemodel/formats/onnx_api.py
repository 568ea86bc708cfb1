"""The public ONNX API for plugin authors: everything an op's ONNX mapping needs, in one module.

A plugin's mapping modules import from here (not ``onnx`` itself, and not the private modules of
``onemodel.formats``); these names stay. Importing it is cheap (it loads neither onnx nor the
import machinery), so a plugin may do it at the top of the module its hook imports.

Dtypes (one table, used by import and export alike)
    `ONNX_TO_DTYPE`, `DTYPE_TO_ONNX`; `dtype_from_onnx(code)` (an `OnnxUnsupportedError` for a
    type OneModel does not represent, such as bfloat16), `onnx_dtype(dtype)`,
    `onnx_type_name(code)`. In a rule, ``ctx.dtype(code, what)`` refuses the node instead.
Tensor attributes
    On import a ``TENSOR`` attribute arrives as a numpy array (``node.attr("value")``;
    ``node.tensor(name)`` refuses anything else). On export `tensor_attribute(array)` makes the
    ``TensorProto`` to pass to ``ctx.make_node(..., value=...)``.
Import rules
    ``rule(ctx, node) -> list`` gets an `ImportContext` and an `OnnxNode` (their methods are
    listed in the docstring of ``onemodel.formats.onnx_import``): ``ctx.emit``, ``ctx.const``,
    ``ctx.symbolic``, ``ctx.type``, ``ctx.ints``, ``ctx.cast``; it refuses a node with
    ``ctx.unsupported(why)`` (`OnnxUnsupportedError`) or passes it to the next rule claiming its
    op type with ``ctx.decline(why)`` (`OnnxDeclined`).
Export lowerings
    ``export(ctx, node)`` gets an `ExportContext` (documented in ``onemodel.formats.onnx_export``)
    and refuses with ``ctx.unsupported(node, why)`` (`OnnxExportError`).
Attaching mappings
    `attach_onnx(ops, mappings, plugin=...)` in the ``onemodel_ops`` hook: a mapping for an op the
    plugin does not define raises `OnnxMappingError` naming both; `add_import_rules` adds rules
    that ride on another op's spec.
Graph attributes
    On import a ``GRAPH`` attribute arrives read, not converted; `inline_call(ctx, graph, args,
    what)` converts it into the rule's context as a function of ``args`` and returns its
    outputs' entries (FlexAttention's ``score_mod``).
Other domains
    An import rule keyed ``"<domain>.<op type>"`` (``"ai.onnx.preview.FlexAttention"``) takes
    that domain's nodes; ``ctx.opset_of(domain)`` is the version the file imports.
Building blocks
    `import_unary`, `import_binary`, `import_variadic`, `export_elementwise`, `export_chain`,
    `scalar_const`, `slice_bounds`, `dims_input`, `INT64_MAX`, `INT64_MIN`.

`ImportContext`, `OnnxNode` and the entry classes (`Const`, `Sym`, `Val`) load the import
machinery (and onnx) when first used from here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..registry.records import OnnxSpec
from .onnx_dtypes import (DTYPE_TO_ONNX, ONNX_TO_DTYPE, OnnxDtypeError, dtype_from_onnx,
                          onnx_dtype, onnx_type_name)
from .onnx_errors import (OnnxDeclined, OnnxExportError, OnnxImportError, OnnxMappingError,
                          OnnxUnsupportedError)
from .onnx_export import ExportContext
from .onnx_lowering import (INT64_MAX, INT64_MIN, dims_input, export_chain, export_elementwise,
                            import_binary, import_unary, import_variadic, scalar_const,
                            slice_bounds)
from .onnx_mappings import add_import_rules, attach_onnx

if TYPE_CHECKING:  # loaded on first use (see `__getattr__`): they bring in onnx
    from .onnx_import.context import ImportContext
    from .onnx_import.entries import Const, Entry, Sym, Val
    from .onnx_import.node import OnnxNode

_LAZY = {"ImportContext": "context", "OnnxNode": "node", "Const": "entries", "Sym": "entries",
         "Val": "entries", "Entry": "entries"}


def tensor_attribute(array, name: str = "value"):
    """An ``onnx.TensorProto`` holding ``array`` (a numpy array or scalar), for a ``TENSOR``
    attribute of an exported node (``ConstantOfShape``'s ``value``)."""
    from .onnx_export import _onnx

    return _onnx().numpy_helper.from_array(np.asarray(array), name)


def tensor_array(proto, where: str = "tensor") -> np.ndarray:
    """A ``TensorProto`` as a numpy array, checked like the import checks initializers (an
    `OnnxUnsupportedError` for a dtype OneModel does not represent)."""
    from .onnx_import.decode import _tensor_array
    from .onnx_import.errors import _onnx

    return _tensor_array(_onnx(), proto, where)


def inline_call(ctx, graph, args: list, what: str) -> list:
    """Convert a ``GRAPH`` attribute into ``ctx`` called on ``args`` (entries or ONNX names, one
    per formal input); the entries of its outputs (see `onnx_subgraph.inline_call`)."""
    from .onnx_subgraph import inline_call as _inline_call

    return _inline_call(ctx, graph, args, what)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".onnx_import.{module}", __package__), name)


__all__ = ["ONNX_TO_DTYPE", "DTYPE_TO_ONNX", "OnnxDtypeError", "dtype_from_onnx", "onnx_dtype",
           "onnx_type_name", "tensor_attribute", "tensor_array", "OnnxImportError",
           "OnnxUnsupportedError", "OnnxDeclined", "OnnxExportError", "OnnxMappingError",
           "OnnxSpec", "ImportContext", "ExportContext", "OnnxNode", "Const", "Sym", "Val",
           "Entry", "attach_onnx", "add_import_rules", "inline_call", "INT64_MAX", "INT64_MIN", "dims_input",
           "export_chain", "export_elementwise", "import_binary", "import_unary",
           "import_variadic", "scalar_const", "slice_bounds"]
