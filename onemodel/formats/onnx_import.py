"""ONNX import: ``load_onnx(path) -> Graph`` (and ``from_onnx(model_proto) -> Graph``).

Each ONNX node is turned into OneModel nodes by an import rule: op records claim ONNX op types in
``OpDef.onnx.imports`` (``{"Relu": rule}``, in each plugin's ``onnx_mapping.py``); a few rules
that are not about any one op (``Constant``, ``Shape``, ``Size``, ``Identity``...) live here.
A rule is ``rule(ctx, node) -> list`` with one result per ONNX output, where

* ``node`` is an `OnnxNode`: ``op_type``, ``inputs`` / ``outputs`` (names, "" when absent),
  ``attrs`` (Python values: ints, floats, str, lists, numpy arrays for tensors) and
  ``node.attr(name, default)``;
* a result is what ``ctx.emit`` returned, an entry taken from ``ctx.entry(name)`` (pass-through),
  a numpy array (a constant), or None for an optional output nobody uses.

The `ImportContext` ``ctx``:

``ctx.opset``
    The file's opset of the default domain (rules read attributes that moved to inputs by it).
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
``ctx.ints(node, index, attr)``
    An int list given as input ``index`` (opset 13+ style) or attribute ``attr`` (older), or
    None when neither is present.
``ctx.unsupported(why)``
    Raise `OnnxUnsupportedError` naming the node: the file uses something OneModel cannot
    represent (an attribute value, a dtype, a mode).

Each ONNX node becomes the OneModel ops it names, nothing more: decomposed patterns exporters emit
(erf-based GELU, the ReduceMean/Sub/Pow/... layer norm, MatMul + Add) are recognised afterwards by
the plugins' passes marked ``on_load``, which `from_onnx` runs on the imported graph (`recognise`).
Symbolic ``dim_param`` axes of the graph inputs become symbolic sizes of the same names;
``Shape``/``Gather``/``Concat``... chains over them are evaluated symbolically, so a ``Reshape``
to ``[batch, -1]`` imports as ``reshape`` with a symbolic shape param.
"""
from __future__ import annotations

import keyword
import math
import os
import re
from typing import Any, Callable, Mapping

import numpy as np
from attrs import evolve

from ..core.dtype import DType
from ..core.graph import Graph, Node, Value
from ..core.symbolic import Dim, SymbolicError, contains_symbolic
from ..core.types import TensorType
from ..errors import FormatError, GraphError, OneModelError
from ..passes import optimize_on_load
from .onnx_checks import check_model
from .onnx_fold import fold, statically_constant

#: ONNX element types OneModel represents
ONNX_TO_DTYPE = {1: DType.F32, 2: DType.U8, 3: DType.I8, 4: DType.U16, 5: DType.I16,
                 6: DType.I32, 7: DType.I64, 9: DType.BOOL, 10: DType.F16, 11: DType.F64,
                 12: DType.U32, 13: DType.U64}
_ONNX_TYPE_NAMES = {0: "undefined", 8: "string",
                    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8e4m3fn",
                    18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4",
                    22: "int4", 23: "float4e2m1"}


#: constant results up to this many elements (or as many as their inputs hold) are folded
FOLD_LIMIT = 65536


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


# ----------------------------------------------------------------------------------------------
# entries: what an ONNX value is while importing
# ----------------------------------------------------------------------------------------------
class Entry:
    __slots__ = ()


class Const(Entry):
    __slots__ = ("array", "source")

    def __init__(self, array: np.ndarray, source: str | None = None):
        self.array = array
        self.source = source  # the ONNX name it came from (names the initializer)

    def __repr__(self):
        return f"Const({self.array.dtype}{list(self.array.shape)})"


class Sym(Entry):
    """An integer tensor whose entries are ints and symbolic sizes (an object array)."""

    __slots__ = ("array", "dtype", "_data")

    def __init__(self, array: np.ndarray, dtype: DType = DType.I64):
        self.array = array
        self.dtype = dtype
        self._data = None  # the run-time tensor computing it, once something uses it as data

    def __repr__(self):
        return f"Sym({[str(v) for v in self.array.reshape(-1)]})"


class Val(Entry):
    __slots__ = ("name", "type")

    def __init__(self, name: str, type: TensorType):
        self.name = name
        self.type = type

    def __repr__(self):
        return f"Val(%{self.name}: {self.type})"


def _sym_or_const(arr: np.ndarray, dtype: DType) -> Entry:
    if any(isinstance(v, Dim) for v in arr.reshape(-1)):
        return Sym(arr, dtype)
    return Const(arr.astype(dtype.numpy))


# ----------------------------------------------------------------------------------------------
class OnnxNode:
    """The view of one ONNX node that import rules get."""

    def __init__(self, op_type: str, inputs, outputs, attrs: Mapping[str, Any], name: str = "",
                 domain: str = ""):
        self.op_type = op_type
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attrs = dict(attrs)
        self.name = name
        self.domain = domain

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def input(self, i: int) -> str:
        return self.inputs[i] if i < len(self.inputs) else ""

    def describe(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"{self.op_type} node{label} (outputs {', '.join(o for o in self.outputs if o)})"

    def __repr__(self):
        return f"OnnxNode({self.op_type}, {self.inputs} -> {self.outputs}, {self.attrs})"


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
        from .onnx_subgraph import read_graph

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
        name = _ONNX_TYPE_NAMES.get(t.data_type, str(t.data_type))
        raise OnnxUnsupportedError(f"{where}: tensor {t.name!r} has dtype {name}, which OneModel "
                                   f"does not support")
    try:
        arr = onnx.numpy_helper.to_array(t)
    except Exception as exc:  # noqa: BLE001
        raise OnnxImportError(f"{where}: tensor {t.name!r} cannot be read: {exc}") from exc
    want = ONNX_TO_DTYPE[t.data_type].numpy
    return np.require(np.asarray(arr, dtype=want), requirements="C")


# ----------------------------------------------------------------------------------------------
class ImportContext:
    """What an import rule sees; see the module docstring."""

    def __init__(self, opset: int):
        self.opset = opset
        self.entries: dict[str, Entry] = {}
        self.inputs: list[Value] = []
        self.nodes: list[Node] = []
        self.values: dict[str, Value] = {}
        self.initializers: dict[str, np.ndarray] = {}
        self._counter = 0
        self._const_names: dict[int, tuple] = {}
        self.current: OnnxNode | None = None
        self._symbols: dict[str, Dim] = {}
        self._data_sizes = 0

    # -- errors --------------------------------------------------------------------------------
    def unsupported(self, why: str):
        where = self.current.describe() if self.current is not None else "the graph"
        raise OnnxUnsupportedError(f"{where}: {why}")

    def decline(self, why: str):
        """Leave this node to the next rule claiming its op type (see `OnnxDeclined`)."""
        where = self.current.describe() if self.current is not None else "the graph"
        raise OnnxDeclined(f"{where}: {why}")

    def data_dim(self) -> Dim:
        """A new *data size*: a symbol no graph input binds, for an output size that tensor
        data decides at run time (sessions read it from the result of the node declaring it,
        see onemodel/core/dynamic_plan.py)."""
        used = {s for d in self._symbols.values() for s in d.symbols()} | set(self._symbols)
        while True:
            name = f"data{self._data_sizes}"
            self._data_sizes += 1
            if name not in used:
                return Dim.symbol(name)

    def fail(self, why: str):
        where = self.current.describe() if self.current is not None else "the graph"
        raise OnnxImportError(f"{where}: {why}")

    # -- names ---------------------------------------------------------------------------------
    def fresh(self, hint: str = "") -> str:
        while True:
            name = f"{hint}{self._counter}"
            self._counter += 1
            if name not in self.values:
                return name

    # -- reading entries -----------------------------------------------------------------------
    def entry(self, x) -> Entry | None:
        if x is None or isinstance(x, Entry):
            return x
        if isinstance(x, np.ndarray):
            return Const(x)
        if x == "":
            return None
        try:
            e = self.entries[x]
        except KeyError:
            self.fail(f"input {x!r} is not defined before this node")
        if e is None:
            self.unsupported(f"uses {x!r}, an optional output that OneModel does not produce")
        return e

    def const(self, x) -> np.ndarray | None:
        e = self.entry(x)
        if isinstance(e, Const):
            return e.array
        if isinstance(e, Sym) and not any(isinstance(v, Dim) for v in e.array.reshape(-1)):
            return e.array.astype(e.dtype.numpy)
        return None

    def symbolic(self, x) -> np.ndarray | None:
        e = self.entry(x)
        if isinstance(e, Sym):
            return e.array
        if isinstance(e, Const) and e.array.dtype.kind in "iu" and e.array.ndim <= 1:
            return e.array.astype(object)
        return None

    def shape_param(self, x, what: str = "shape") -> tuple:
        s = self.symbolic(x)
        if s is None:
            e = self.entry(x)
            if isinstance(e, Const):
                self.unsupported(f"{what} must be an integer tensor, got {e.array.dtype}")
            self.unsupported(f"{what} is computed from data at run time; OneModel needs it "
                             f"static or derived from input sizes")
        if s.ndim != 1:
            self.unsupported(f"{what} must be 1-D, got shape {list(s.shape)}")
        return tuple(v if isinstance(v, Dim) else int(v) for v in s)

    def type(self, x) -> TensorType:
        e = self.entry(x)
        if isinstance(e, Val):
            return e.type
        if isinstance(e, Const):
            return TensorType(DType.from_numpy(e.array.dtype), e.array.shape)
        if isinstance(e, Sym):
            return TensorType(e.dtype, e.array.shape)
        self.fail(f"no value for {x!r}")

    def rank(self, x) -> int:
        return len(self.type(x).shape)

    def ints(self, node: OnnxNode, index: int, attr: str) -> list[int] | None:
        name = node.input(index) if index is not None else ""
        if name:
            arr = self.const(name)
            if arr is None:
                self.unsupported(f"input {index} ({attr}) must be a constant")
            return [int(v) for v in np.asarray(arr).reshape(-1)]
        v = node.attr(attr)
        if v is None:
            return None
        return [int(x) for x in (v if isinstance(v, list) else [v])]

    # -- building ------------------------------------------------------------------------------
    def value(self, x) -> str | None:
        """The OneModel value name for ``x`` (constants become initializers)."""
        e = self.entry(x)
        if e is None:
            return None
        if isinstance(e, Val):
            return e.name
        if isinstance(e, Sym):
            arr = self.const(e)
            if arr is None:
                return self.value(self._sizes_as_data(e))
            e = Const(arr)
        key = id(e)
        hit = self._const_names.get(key)
        if hit is not None and hit[0] is e:
            return hit[1]
        hint = e.source if e.source and e.source not in self.values else None
        name = hint or self.fresh("const_")
        arr = e.array
        self.initializers[name] = arr
        self.values[name] = Value(name, TensorType(DType.from_numpy(arr.dtype), arr.shape))
        self._const_names[key] = (e, name)  # keeps e alive, so its id is not reused
        return name

    def _sizes_as_data(self, e: Sym) -> Val:
        """A tensor of sizes computed from input axes, computed at run time: the fixed entries
        as a constant plus, for each symbolic one, ``full(shape, size) * onehot`` (the
        ``__full__``, ``__mul__`` and ``__add__`` protocols, so the core names no op)."""
        cached = getattr(e, "_data", None)
        if cached is not None:
            return cached
        from ..registry import REGISTRY

        methods = REGISTRY.tables().methods
        if not all(m in methods for m in ("__full__", "__mul__", "__add__")):
            self.unsupported("a size computed from symbolic input axes is used as data, and no "
                             "installed plugin provides __full__, __mul__ and __add__")
        full, mul, add = (methods[m][1].name for m in ("__full__", "__mul__", "__add__"))
        arr, np_dtype = e.array, e.dtype.numpy
        static = np.array([0 if isinstance(v, Dim) else int(v) for v in arr.reshape(-1)],
                          dtype=np_dtype).reshape(arr.shape)
        total: Any = Const(static)
        for idx, v in np.ndenumerate(arr):
            if not isinstance(v, Dim):
                continue
            onehot = np.zeros(arr.shape, dtype=np_dtype)
            onehot[idx] = 1
            part = self.emit(full, [], shape=tuple(arr.shape), value=v, dtype=e.dtype)
            total = self.emit(add, [total, self.emit(mul, [part, Const(onehot)])])
        e._data = total
        return total

    def cast(self, x: str, dtype) -> str:
        """``x`` as ``dtype``: a node of the op that provides the ``__cast__`` protocol (always a
        new value, so it also serves as an identity when the dtype already matches)."""
        from ..registry import REGISTRY

        entry = REGISTRY.tables().methods.get("__cast__")
        if entry is None:
            self.unsupported("needs a cast, and no installed plugin provides the __cast__ protocol")
        return self.emit(entry[1].name, [x], dtype=dtype)

    def emit(self, op: str, inputs, **params):
        from ..core.dispatch import _check_param, infer
        from ..registry import REGISTRY
        from ..registry.records import REQUIRED

        rec = REGISTRY.tables().ops.get(op)
        if rec is None:
            self.unsupported(f"needs op {op!r}, which no installed plugin provides")
        entries = [self.entry(i) for i in inputs]
        if not rec.variadic and len(entries) < len(rec.inputs):
            entries += [None] * (len(rec.inputs) - len(entries))
        for pname, p in rec.params.items():
            if pname not in params:
                if p.default is REQUIRED:
                    raise OnnxImportError(f"import rule for {op} forgot param {pname!r}")
                params[pname] = p.default
            elif not contains_symbolic(params[pname]):
                params[pname] = _check_param(rec, pname, p, params[pname])
        unknown = set(params) - set(rec.params)
        if unknown:
            raise OnnxImportError(f"import rule passes unknown params {sorted(unknown)} to {op}")
        types = []
        for e in entries:
            if e is None:
                types.append(None)
            elif isinstance(e, Sym) and self.const(e) is None:
                e = entries[len(types)] = self._sizes_as_data(e)
                types.append(self.type(e))
            else:
                types.append(self.type(e))
        try:
            out_types = infer(rec, types, params)
        except OneModelError as exc:
            self.unsupported(f"{op}: {exc}")
        multi = isinstance(out_types, (tuple, list))
        out_types = list(out_types) if multi else [out_types]
        foldable = (rec.is_pure(params) and all(e is None or self.const(e) is not None for e in entries)
                    and not contains_symbolic(params))
        if foldable:
            # fold only results no bigger than the inputs (or small): a factory or an Expand to
            # a huge shape stays a node, so importing never allocates more than the file holds
            limit = max(FOLD_LIMIT, sum(int(self.const(e).size) for e in entries
                                        if e is not None))
            foldable = all(not contains_symbolic(t.shape) and math.prod(t.shape) <= limit
                           for t in out_types)
        if foldable:
            arrays = [None if e is None else self.const(e) for e in entries]
            try:
                out = rec.kernel(*arrays, **params)
            except Exception as exc:  # noqa: BLE001
                self.fail(f"folding {op} on constants failed: {type(exc).__name__}: {exc}")
            outs = out if isinstance(out, (tuple, list)) else (out,)
            res = [Const(np.asarray(a).astype(t.dtype.numpy, copy=False))
                   for a, t in zip(outs, out_types)]
            return tuple(res) if multi else res[0]
        names = [self.value(e) for e in entries]
        outs = []
        for t in out_types:
            name = self.fresh()
            v = Value(name, t)
            self.values[name] = v
            outs.append(Val(name, t))
        src = None
        if self.current is not None:
            src = f"onnx {self.current.op_type}" + (f" {self.current.name}"
                                                    if self.current.name else "")
        self.nodes.append(Node(op, tuple(names), tuple(o.name for o in outs), params, src))
        return tuple(outs) if multi else outs[0]

    def symbol(self, text: str) -> Dim:
        """The symbolic size for an ONNX ``dim_param`` (made an identifier where needed)."""
        if text in self._symbols:
            return self._symbols[text]
        d = None
        if text.isidentifier() and not keyword.iskeyword(text):
            d = Dim.symbol(text)
        else:
            try:
                parsed = Dim.parse(text)
                if isinstance(parsed, Dim):
                    d = parsed
            except SymbolicError:
                pass
            if d is None:
                name = re.sub(r"\W", "_", text)
                if not name or name[0].isdigit():
                    name = "d_" + name
                d = Dim.symbol(name)
        self._symbols[text] = d
        return d


# ----------------------------------------------------------------------------------------------
# built-in rules (not about any one op)
# ----------------------------------------------------------------------------------------------
def _rule_constant(ctx: ImportContext, node: OnnxNode):
    a = node.attrs
    if "value" in a:
        return [Const(a["value"], node.outputs[0])]
    if "value_float" in a:
        return [Const(np.array(a["value_float"], dtype=np.float32), node.outputs[0])]
    if "value_floats" in a:
        return [Const(np.array(a["value_floats"], dtype=np.float32), node.outputs[0])]
    if "value_int" in a:
        return [Const(np.array(a["value_int"], dtype=np.int64), node.outputs[0])]
    if "value_ints" in a:
        return [Const(np.array(a["value_ints"], dtype=np.int64), node.outputs[0])]
    ctx.unsupported(f"Constant with attribute(s) {sorted(a)} (strings and sparse tensors are "
                    f"not supported)")


def _rule_shape(ctx: ImportContext, node: OnnxNode):
    shape = list(ctx.type(node.inputs[0]).shape)
    n = len(shape)
    start = node.attr("start", 0)
    end = node.attr("end", n)
    start = max(0, min(n, start + n if start < 0 else start))
    end = max(0, min(n, end + n if end < 0 else end))
    arr = np.empty(max(0, end - start), dtype=object)
    for i, d in enumerate(shape[start:end]):
        arr[i] = d
    return [_sym_or_const(arr, DType.I64)]


def _rule_size(ctx: ImportContext, node: OnnxNode):
    n: Any = 1
    for d in ctx.type(node.inputs[0]).shape:
        n = n * d
    arr = np.empty((), dtype=object)
    arr[()] = n
    return [_sym_or_const(arr, DType.I64)]


def _rule_identity(ctx: ImportContext, node: OnnxNode):
    return [ctx.entry(node.inputs[0])]


BUILTIN_RULES: dict[str, Callable] = {
    "Constant": _rule_constant,
    "Shape": _rule_shape,
    "Size": _rule_size,
    "Identity": _rule_identity,
}


# -- symbolic evaluation of shape arithmetic ------------------------------------------------------
def _norm_axis(axis: int, n: int) -> int:
    return axis + n if axis < 0 else axis


def _sym_gather(ctx, node, x, idx):
    axis = _norm_axis(node.attr("axis", 0), x.ndim)
    idx = np.asarray(idx).astype(np.int64)
    idx = np.where(idx < 0, idx + x.shape[axis], idx)
    return np.take(x, idx, axis=axis)


def _sym_concat(ctx, node, *xs):
    return np.concatenate([x.reshape(-1) if x.ndim == 0 else x for x in xs],
                          axis=node.attr("axis", 0))


def _sym_unsqueeze(ctx, node, x, axes=None):
    axes = ctx.ints(node, 1, "axes")
    out_rank = x.ndim + len(axes)
    for a in sorted(_norm_axis(a, out_rank) for a in axes):
        x = np.expand_dims(x, a)
    return x


def _sym_squeeze(ctx, node, x, axes=None):
    axes = ctx.ints(node, 1, "axes")
    if axes is None:
        return x.reshape([d for d in x.shape if d != 1])
    return np.squeeze(x, tuple(_norm_axis(a, x.ndim) for a in axes))


def _sym_slice(ctx, node, x, starts=None, ends=None, axes=None, steps=None):
    if any(node.input(i) and ctx.const(node.input(i)) is None for i in range(1, 5)):
        return None  # bounds from run-time sizes: the Slice rule keeps them symbolic params
    starts = ctx.ints(node, 1, "starts")
    ends = ctx.ints(node, 2, "ends")
    axes = ctx.ints(node, 3, "axes") or list(range(len(starts)))
    steps = ctx.ints(node, 4, "steps") or [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        n = x.shape[_norm_axis(a, x.ndim)]
        s = max(min(s, n), -n - 1)
        e = max(min(e, n), -n - 1)
        index[_norm_axis(a, x.ndim)] = slice(s, e, st)
    return x[tuple(index)]


def _sym_reshape(ctx, node, x, shape):
    shape = [int(v) for v in np.asarray(shape).reshape(-1)]
    shape = [x.shape[i] if v == 0 and not node.attr("allowzero", 0) else v
             for i, v in enumerate(shape)]
    return x.reshape(shape)


def _sym_cast(ctx, node, x):
    to = ONNX_TO_DTYPE.get(node.attr("to"))
    if to is None or not to.is_int:
        return None
    return x


def _binary(fn):
    def run(ctx, node, a, b):
        return np.frompyfunc(fn, 2, 1)(a, b)
    return run


def _floordiv(a, b):
    return a // b


def _sym_equal(ctx, node, a, b):
    from ..core.types import same_dim

    # a symbolic size equals only the same expression (it is never a given number, such as the
    # -1 torch.onnx compares shapes with)
    return np.frompyfunc(lambda x, y: bool(same_dim(x, y)), 2, 1)(a, b).astype(bool)


def _sym_where(ctx, node, cond, a, b):
    return np.where(np.asarray(cond).astype(bool), a, b)


SYMBOLIC_OPS: dict[str, Callable] = {
    "Equal": _sym_equal, "Where": _sym_where,
    "Gather": _sym_gather, "Concat": _sym_concat, "Unsqueeze": _sym_unsqueeze,
    "Squeeze": _sym_squeeze, "Slice": _sym_slice, "Reshape": _sym_reshape, "Cast": _sym_cast,
    "Identity": lambda ctx, node, x: x,
    "Add": _binary(lambda a, b: a + b), "Sub": _binary(lambda a, b: a - b),
    "Mul": _binary(lambda a, b: a * b), "Div": _binary(_floordiv),
    "Mod": _binary(lambda a, b: a % b),
    "Neg": lambda ctx, node, x: np.frompyfunc(lambda a: -a, 1, 1)(x),
}


def _try_symbolic(ctx: ImportContext, node: OnnxNode):
    """Evaluate a shape-arithmetic node with at least one symbolic input, or return None."""
    fn = SYMBOLIC_OPS.get(node.op_type)
    if fn is None:
        return None
    entries = [ctx.entries.get(i) if i else None for i in node.inputs]
    if not any(isinstance(e, Sym) for e in entries):
        return None
    arrays = []
    for _i, e in zip(node.inputs, entries):
        if e is None:
            arrays.append(None)
            continue
        if isinstance(e, Sym):
            arrays.append(e.array)
        elif isinstance(e, Const):
            arrays.append(e.array.astype(object))
        else:
            return None  # a run-time tensor: not shape arithmetic
    try:
        out = fn(ctx, node, *arrays)
    except OnnxImportError:
        raise
    except (SymbolicError, TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError,
            KeyError, OverflowError):
        return None  # not shape arithmetic OneModel follows: the op's import rule decides
    if out is None:
        return None
    if node.op_type == "Equal":
        return [Const(np.asarray(out, dtype=bool))]
    out = np.asarray(out, dtype=object)
    dtype = next((e.dtype for e in entries if isinstance(e, Sym)), DType.I64)
    if node.op_type == "Cast":
        dtype = ONNX_TO_DTYPE[node.attr("to")]
    return [_sym_or_const(out, dtype)]


# ----------------------------------------------------------------------------------------------
def claimed_rules() -> dict[str, list[tuple[str, Callable]]]:
    """ONNX op type -> [(op name, rule)] from every installed op record."""
    from ..registry import REGISTRY

    table: dict[str, list[tuple[str, Callable]]] = {}
    for name, op in sorted(REGISTRY.tables().ops.items()):
        if op.onnx is None:
            continue
        for op_type, rule in op.onnx.imports.items():
            table.setdefault(op_type, []).append((name, rule))
    return table


def claimed_op_types() -> set[str]:
    """Every ONNX op type the import handles (built-in rules and op records)."""
    return set(BUILTIN_RULES) | set(claimed_rules())


def _check_external(onnx, model, base_dir: str) -> None:
    base = os.path.realpath(base_dir)
    tensors = list(onnx.external_data_helper._get_all_tensors(model))
    for t in tensors:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        what = f"tensor {t.name!r}: external data"
        info = {_text(e.key, what): _text(e.value, what) for e in t.external_data}
        loc = info.get("location", "")
        if "\x00" in loc:
            raise OnnxImportError(f"tensor {t.name!r}: external data location {loc!r} contains a "
                                  f"NUL byte")
        if (not loc or os.path.isabs(loc) or loc.startswith(("/", "\\"))
                or re.match(r"[A-Za-z]:", loc)):
            raise OnnxImportError(f"tensor {t.name!r}: external data location {loc!r} must be a "
                                  f"relative path inside the model's folder")
        full = os.path.realpath(os.path.join(base, loc))
        if os.path.commonpath([full, base]) != base:
            raise OnnxImportError(f"tensor {t.name!r}: external data {loc!r} points outside the "
                                  f"model's folder {base_dir!r}; refused")
        if not os.path.isfile(full):
            raise OnnxImportError(f"tensor {t.name!r}: external data file {loc!r} not found")
        size = os.path.getsize(full)
        try:
            offset = int(info.get("offset", 0) or 0)
            length = None if info.get("length") is None else int(info["length"])
        except ValueError:
            raise OnnxImportError(f"{what} offset {info.get('offset')!r:.40} or length "
                                  f"{info.get('length')!r:.40} is not an integer") from None
        if (offset < 0 or offset > size or (length is not None
                                            and (length < 0 or offset + length > size))):
            raise OnnxImportError(f"tensor {t.name!r}: external data range (offset {offset}, "
                                  f"length {length}) exceeds the file {loc!r} ({size} bytes)")


def _check_arity(onnx, n, opset: int, where: str) -> None:
    """Input and output counts against the ONNX schema (import rules index ``node.inputs``)."""
    if n.domain not in ("", "ai.onnx"):
        return
    try:
        schema = onnx.defs.get_schema(n.op_type, opset, "")
    except Exception:  # noqa: BLE001 - SchemaError: unknown here, reported as unsupported later
        return
    for what, names, lo, hi, formal in (("inputs", n.input, schema.min_input, schema.max_input,
                                         schema.inputs),
                                        ("outputs", n.output, schema.min_output,
                                         schema.max_output, schema.outputs)):
        if not lo <= len(names) <= hi:
            bound = f"{lo}" if lo == hi else f"{lo} to {hi}"
            raise OnnxImportError(f"{where}: has {len(names)} {what}; {n.op_type}-{opset} takes "
                                  f"{bound}")
        single = onnx.defs.OpSchema.FormalParameterOption.Single
        for i, (name, p) in enumerate(zip(names, formal)):
            if not name and p.option == single and what == "inputs":
                raise OnnxImportError(f"{where}: required input {i} ({p.name}) is empty")


def load_onnx(path: str | os.PathLike) -> Graph:
    """Read an ONNX file into a OneModel Graph (verified)."""
    from ._atomic import check_path

    onnx = _onnx()
    path = check_path(path, "load_onnx")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path!r}")
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf raises many things
        raise OnnxImportError(f"{path}: not a readable ONNX model: {exc}") from None
    base = os.path.dirname(os.path.abspath(path))
    if any(t.data_location == onnx.TensorProto.EXTERNAL
           for t in onnx.external_data_helper._get_all_tensors(model)):
        _check_external(onnx, model, base)
        try:
            onnx.external_data_helper.load_external_data_for_model(model, base)
        except Exception as exc:  # noqa: BLE001 - a malformed reference, an unreadable file
            raise OnnxImportError(f"{path}: external data cannot be read: "
                                  f"{type(exc).__name__}: {exc}") from None
    return from_onnx(model, label=path)


def _guards_of(model, label: str) -> tuple:
    """The size conditions a OneModel export stored in ``metadata_props`` (see core/guards.py);
    ONNX itself has no way to state them, so other runtimes do not check them."""
    import json

    from ..core.guards import Guard

    for prop in model.metadata_props:
        if prop.key == GUARDS_KEY:
            try:
                items = json.loads(prop.value)
                if not isinstance(items, list) or len(items) > 10_000:
                    raise ValueError("expected a list of at most 10000 guards")
                return tuple(Guard.from_json(x) for x in items)
            except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
                raise OnnxImportError(f"{label}: metadata {GUARDS_KEY!r} is malformed: "
                                      f"{exc}") from None
    return ()


GUARDS_KEY = "onemodel.guards"


def from_onnx(model, label: str = "<model>") -> Graph:
    """Convert an `onnx.ModelProto` into a verified OneModel Graph. Size conditions the ops'
    inference states while converting (a slice of a fixed axis up to a symbolic size) become
    the graph's guards, with those the file carries (see onemodel/core/guards.py)."""
    from ..core import guards as size_guards

    stated: list = []
    previous = size_guards.start(stated)
    try:
        graph = _convert(model, label)
    finally:
        size_guards.stop(previous)
    found = size_guards.merge(graph.guards, stated)
    return evolve(graph, guards=found) if found != tuple(graph.guards) else graph


def _convert(model, label: str) -> Graph:
    onnx = _onnx()
    check_model(onnx, model, label)
    g = model.graph
    opset = None
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            opset = o.version
    if opset is None:
        raise OnnxImportError(f"{label}: the model imports no version of the default ONNX domain")
    ctx = ImportContext(opset)
    ctx.label = label

    def where(what):
        return f"{label}: {what}"

    # initializers and constants
    consts: dict[str, np.ndarray] = {}
    for t in g.initializer:
        consts[t.name] = _tensor_array(onnx, t, where(f"initializer {t.name!r:.80}"))
    if len(g.sparse_initializer):
        raise OnnxUnsupportedError(where("sparse initializers are not supported"))
    for name, arr in consts.items():
        ctx.entries[name] = Const(arr, name)

    # inputs
    for vi in list(g.input) + list(g.output):
        _text(vi.name, where("graph input/output name"))
    for vi in g.input:
        if vi.name in consts:
            continue
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None:
            raise OnnxUnsupportedError(where(f"input {vi.name!r} is not a tensor"))
        if tt.elem_type not in ONNX_TO_DTYPE:
            name = _ONNX_TYPE_NAMES.get(tt.elem_type, str(tt.elem_type))
            raise OnnxUnsupportedError(where(f"input {vi.name!r} has dtype {name}, which "
                                             f"OneModel does not support"))
        if not tt.HasField("shape"):
            raise OnnxUnsupportedError(where(f"input {vi.name!r} has no shape (rank unknown)"))
        shape = []
        for axis, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value >= 0:  # negative: unknown
                shape.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param:
                shape.append(ctx.symbol(_text(d.dim_param, where(f"input {vi.name!r} axis "
                                                                 f"{axis}: dim_param"))))
            else:
                shape.append(ctx.symbol(f"{vi.name}_dim{axis}"))
        t = TensorType(ONNX_TO_DTYPE[tt.elem_type], tuple(shape))
        v = Value(vi.name, t)
        if vi.name in ctx.values:
            raise OnnxImportError(where(f"input {vi.name!r} is declared twice"))
        ctx.values[vi.name] = v
        ctx.inputs.append(v)
        ctx.entries[vi.name] = Val(vi.name, t)
    ctx._counter = 0

    # nodes
    import_nodes(onnx, ctx, g.node, set(consts), where)

    # outputs
    outputs = []
    rename: dict[str, str] = {}
    for vi in g.output:
        e = ctx.entries.get(vi.name)
        if e is None:
            raise OnnxUnsupportedError(where(f"output {vi.name!r} is not produced"))
        v = ctx.value(e)
        outputs.append((vi.name, v))
    # readable value names: a node output takes the ONNX name of the value it became
    taken = set(ctx.values)
    for onnx_name, e in ctx.entries.items():
        if isinstance(e, Val) and e.name.isdigit() and e.name not in rename:
            target = onnx_name
            if target not in taken and target not in rename.values():
                rename[e.name] = target
                taken.add(target)
    graph = _finish(ctx, outputs, rename, label)
    guards = _guards_of(model, label)
    return evolve(graph, guards=guards) if guards else graph


def import_nodes(onnx, ctx: ImportContext, protos, consts: set, where) -> None:
    """Convert ONNX node protos in order into ``ctx`` (the top graph, a subgraph, or an
    inlined branch): every op type, nested subgraphs' included, must be claimed or folded."""
    from .onnx_subgraph import nested_nodes

    nodes = []
    for k, n in enumerate(protos):
        label_n = f"node {k}"
        for text in (n.op_type, n.domain, n.name, *n.input, *n.output):
            _text(text, where(label_n))
        label_n = f"node {k} ({n.op_type}{' ' + repr(n.name) if n.name else ''})"
        _check_arity(onnx, n, ctx.opset, where(label_n))
        attrs = {a.name: _attr_value(onnx, a, where(label_n)) for a in n.attribute}
        nodes.append(OnnxNode(n.op_type, list(n.input), list(n.output), attrs, n.name,
                              n.domain))

    rules = claimed_rules()
    foldable = statically_constant(nodes, consts)
    unsupported: dict[str, int] = {}
    for n in nested_nodes(nodes, foldable):
        key = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
        if n.domain not in ("", "ai.onnx") or (n.op_type not in BUILTIN_RULES
                                               and n.op_type not in rules
                                               and n.op_type not in SYMBOLIC_OPS):
            unsupported[key] = unsupported.get(key, 0) + 1
    if unsupported:
        listed = ", ".join(f"{k} ({v} node{'s' if v != 1 else ''})"
                           for k, v in sorted(unsupported.items()))
        raise OnnxUnsupportedError(where(f"unsupported ONNX op type(s): {listed}"))

    for n in nodes:
        ctx.current = n
        results = _try_symbolic(ctx, n)
        cands = ([("builtin", BUILTIN_RULES[n.op_type])] if n.op_type in BUILTIN_RULES
                 else rules.get(n.op_type, []))
        if results is None and not cands and id(n) in foldable:
            results = _fold_constant(onnx, ctx, n, where)
        if results is None:
            if not cands:
                raise OnnxUnsupportedError(where(f"{n.describe()}: {n.op_type} is only "
                                                 f"supported on sizes computed from input "
                                                 f"shapes, not on tensor data"))
            err = None
            for opname, rule in cands:
                try:
                    results = rule(ctx, n)
                    break
                except OnnxUnsupportedError as exc:
                    if err is None or not isinstance(exc, OnnxDeclined):
                        err = exc
                except FormatError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a malformed node trips up a rule
                    raise OnnxImportError(where(
                        f"{n.describe()}: malformed node (the {opname} import rule failed: "
                        f"{type(exc).__name__}: {exc})")) from exc
            if results is None and id(n) in foldable:
                results = _fold_constant(onnx, ctx, n, where, err)
            if results is None:
                raise OnnxUnsupportedError(where(str(err)))
        if not isinstance(results, (list, tuple)):
            results = [results]
        results = list(results) + [None] * (len(n.outputs) - len(results))
        for out, r in zip(n.outputs, results):
            if not out:
                continue
            if isinstance(r, np.ndarray):
                r = Const(r, out)
            elif isinstance(r, Const) and r.source is None:
                r.source = out
            ctx.entries[out] = r
    ctx.current = None


def _fold_constant(onnx, ctx: ImportContext, n: OnnxNode, where, err=None) -> list:
    """Compute an all-constant node with onnx's reference implementation (any op type)."""
    from .onnx_subgraph import graphs_of

    arrays = [ctx.const(i) if i else None for i in n.inputs]
    if graphs_of(n) and err is not None:  # If/Loop/Scan fold through their own rules only:
        raise OnnxUnsupportedError(where(str(err)))  # onnx.reference misreads one-node loops
    if any(a is None for a, i in zip(arrays, n.inputs) if i):
        raise OnnxUnsupportedError(where(str(err) if err is not None else
                                         f"{n.describe()}: {n.op_type} is only supported on "
                                         f"constants, not on tensor data"))
    limit = max([FOLD_LIMIT] + [int(a.size) for a in arrays if a is not None])
    try:
        outs = fold(onnx, n, arrays, ctx.opset, limit)
    except ValueError as exc:
        raise OnnxUnsupportedError(where(f"{n.describe()}: folding {n.op_type} on constants "
                                         f"failed: {exc}")) from None
    res = []
    for arr in outs:
        try:
            DType.from_numpy(arr.dtype)
        except Exception:  # noqa: BLE001 - a dtype OneModel does not have
            raise OnnxUnsupportedError(where(f"{n.describe()}: folding gives a {arr.dtype} "
                                             f"constant, which OneModel does not support")) \
                from None
        res.append(Const(np.require(arr, requirements="C")))
    return res


def _finish(ctx: ImportContext, outputs, rename: dict[str, str], label: str) -> Graph:
    def r(name):
        return rename.get(name, name) if name is not None else None

    nodes = [Node(n.op, tuple(r(i) for i in n.inputs), tuple(r(o) for o in n.outputs), n.params,
                  n.source) for n in ctx.nodes]
    outputs = [(o, r(v)) for o, v in outputs]
    used = {i for n in nodes for i in n.inputs if i is not None} | {v for _, v in outputs}
    # drop nodes whose outputs nobody uses (dead shape arithmetic, folded branches)
    keep = []
    for n in reversed(nodes):
        if any(o in used for o in n.outputs):
            keep.append(n)
            used |= {i for i in n.inputs if i is not None}
    nodes = list(reversed(keep))
    values = {}
    for name, v in ctx.values.items():
        values[r(name)] = Value(r(name), v.type)
    inits = {r(k): a for k, a in ctx.initializers.items() if r(k) in used}
    keep_names = {v.name for v in ctx.inputs} | set(inits) | {o for n in nodes for o in n.outputs}
    values = {k: v for k, v in values.items() if k in keep_names}
    graph = Graph(inputs=tuple(ctx.inputs), nodes=tuple(nodes), outputs=tuple(outputs),
                  values=values, initializers=inits)
    try:
        graph.verify()
    except GraphError as exc:
        raise OnnxImportError(f"{label}: the imported graph is invalid: {exc}") from exc
    return recognise(graph)


def recognise(graph: Graph) -> Graph:
    """The graph after the passes that recognise decomposed patterns (``PassDef.on_load``:
    GELU, layer norm, MatMul + Add...), so an imported file reads as the ops it spells out."""
    return optimize_on_load(graph)


__all__ = ["load_onnx", "from_onnx", "ImportContext", "OnnxNode", "OnnxImportError",
           "OnnxUnsupportedError", "OnnxDeclined", "claimed_op_types", "claimed_rules", "Const", "Sym", "Val",
           "BUILTIN_RULES", "SYMBOLIC_OPS", "ONNX_TO_DTYPE"]
