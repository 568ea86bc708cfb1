"""ONNX import: ``load_onnx(path) -> Graph`` (and ``from_onnx(model_proto) -> Graph``).

The package's modules, one job each: `errors` (the exceptions), `decode` (tensors, attributes,
dtypes from protos), `entries` and `node` (what rules read), `context` (`ImportContext`),
`builtin_rules` and `sizes` (rules not about one op; the size evaluator), `rules` (finding a
node's rules), `checks` (before conversion), `convert` (the driver) and `load` (entry points).

Each ONNX node is turned into OneModel nodes by an import rule: op records claim ONNX op types in
``OpDef.onnx.imports`` (``{"Relu": rule}``, in each plugin's ``onnx_mapping.py``, attached with
``onemodel.formats.onnx_api.attach_onnx``; plugins import only from `onnx_api`); a few rules
that are not about any one op (``Constant``, ``Shape``, ``Size``, ``Identity``...) live here.
A rule is ``rule(ctx, node) -> list`` with one result per ONNX output, where

* ``node`` is an `OnnxNode`: ``op_type``, ``inputs`` / ``outputs`` (names, "" when absent),
  ``attrs`` (Python values: ints, floats, str, lists, numpy arrays for tensors) and
  ``node.attr(name, default)``, ``node.input(i)`` ("" past the end), ``node.tensor(name)``;
* a result is what ``ctx.emit`` returned, an entry taken from ``ctx.entry(name)`` (pass-through),
  a numpy array (a constant), or None for an optional output nobody uses.

The `ImportContext` ``ctx``:

``ctx.opset``
    The file's opset of the default domain (rules read attributes that moved to inputs by it).
``ctx.opset_of(domain)``
    The version the file imports of another domain (``"ai.onnx.preview"``), or None.
``ctx.emit(op, inputs, **params)``
    Append a OneModel node (inputs: ONNX names, entries, numpy arrays or None); types come from
    the op's inference. When every input is a constant (and no param is symbolic) the op's kernel
    runs at once and the result is a constant: shape subgraphs over static sizes fold away.
    Returns one entry, or a tuple for an op with several outputs.
``ctx.const(x)``
    The numpy value when ``x`` is static (an initializer, a ``Constant``, folded), else None.
``ctx.symbolic(x)``
    For a static or symbolic integer tensor (``Shape`` of an input with named axes, and
    ``Gather``/``Concat``/``Unsqueeze``/``Slice``/arithmetic on it): an object array of ints and
    `Dim`s; None otherwise. ``ctx.shape_param(x)`` is the same as a tuple, refusing others.
``ctx.type(x)``
    The `TensorType` of an input. ``ctx.rank(x)`` its rank.
``ctx.dtype(code, what)``
    The OneModel `DType` of an ONNX element type code (``Cast``'s ``to``), refusing others.
``ctx.cast(x, dtype)``
    ``x`` as ``dtype`` (through the op providing the ``__cast__`` protocol).
``ctx.ints(node, index, attr)``
    An int list given as input ``index`` (opset 13+ style) or attribute ``attr`` (older), or
    None when neither is present.
``ctx.unsupported(why)``
    Raise `OnnxUnsupportedError` naming the node: the file uses something OneModel cannot
    represent (an attribute value, a dtype, a mode).
``ctx.decline(why)``
    Leave the node to the next rule claiming its op type (`OnnxDeclined`); ``why`` is reported
    only when no rule takes it.

Each ONNX node becomes the OneModel ops it names, nothing more: decomposed patterns exporters emit
(erf-based GELU, the ReduceMean/Sub/Pow/... layer norm, MatMul + Add) are recognised afterwards by
the plugins' passes marked ``on_load``, which `from_onnx` runs on the imported graph (`recognise`).
Symbolic ``dim_param`` axes of the graph inputs become symbolic sizes of the same names;
``Shape``/``Gather``/``Concat``... chains over them are evaluated symbolically, so a ``Reshape``
to ``[batch, -1]`` imports as ``reshape`` with a symbolic shape param.
"""
from __future__ import annotations

from .builtin_rules import BUILTIN_RULES
from .context import ImportContext
from .convert import GUARDS_KEY, import_nodes, recognise
from ..onnx_dtypes import ONNX_TO_DTYPE
from .entries import Const, Entry, Sym, Val
from .errors import OnnxDeclined, OnnxImportError, OnnxUnsupportedError
from .load import from_onnx, load_onnx
from .node import OnnxNode
from .rules import claimed_op_types, claimed_rules
from .sizes import SYMBOLIC_OPS

__all__ = ["load_onnx", "from_onnx", "ImportContext", "OnnxNode", "OnnxImportError",
           "OnnxUnsupportedError", "OnnxDeclined", "claimed_op_types", "claimed_rules", "Const",
           "Sym", "Val", "Entry", "BUILTIN_RULES", "SYMBOLIC_OPS", "ONNX_TO_DTYPE",
           "GUARDS_KEY", "import_nodes", "recognise"]
