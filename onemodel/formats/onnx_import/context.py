"""`ImportContext`: what an import rule sees and calls (the API is in the package docstring).

It holds the values converted so far and emits OneModel nodes through the op records' inference,
folding all-constant nodes through their kernels.
"""
from __future__ import annotations

import keyword
import re
from typing import Any

import numpy as np

from ...core.dtype import DType
from ...core.graph import Node, Value
from ...core.kernel_call import check_outputs, fold_fits
from ...core.symbolic import Dim, SymbolicError, contains_symbolic
from ...core.types import TensorType
from ...errors import OneModelError
from .entries import Const, Entry, Sym, Val
from .errors import OnnxDeclined, OnnxImportError, OnnxUnsupportedError
from .node import OnnxNode

#: constant results up to this many elements (or as many as their inputs hold) are folded


class ImportContext:
    """What an import rule sees; see the module docstring."""

    def __init__(self, opset: int, opsets: dict[str, int] | None = None):
        self.opset = opset
        self.opsets = {"": opset, **(opsets or {})}
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

    def opset_of(self, domain: str) -> int | None:
        """The version of ``domain`` the model imports (None if it imports none)."""
        return self.opsets.get("" if domain == "ai.onnx" else domain)

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

    def dtype(self, code, what: str = "dtype") -> DType:
        """The OneModel dtype of an ONNX element type code (``Cast``'s ``to``, an
        ``output_dtype``), refusing the node for a type OneModel does not represent."""
        from ..onnx_dtypes import ONNX_TO_DTYPE, onnx_type_name

        dt = ONNX_TO_DTYPE.get(code) if isinstance(code, int) else None
        if dt is None:
            self.unsupported(f"{what}: ONNX element type {code!r} ({onnx_type_name(code)}) has "
                             f"no OneModel dtype")
        return dt

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
        from ...registry import REGISTRY

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
        from ...registry import REGISTRY

        entry = REGISTRY.tables().methods.get("__cast__")
        if entry is None:
            self.unsupported("needs a cast, and no installed plugin provides the __cast__ protocol")
        return self.emit(entry[1].name, [x], dtype=dtype)

    def emit(self, op: str, inputs, **params):
        from ...core.dispatch import _check_param, infer
        from ...registry import REGISTRY
        from ...registry.records import REQUIRED

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
        foldable = (rec.is_pure(params)
                    and all(e is None or self.const(e) is not None for e in entries)
                    and not contains_symbolic(params))
        if foldable:
            # fold only results no bigger than the inputs (or small): a factory or an Expand to
            # a huge shape stays a node, so importing never allocates more than the file holds
            foldable = fold_fits(out_types, held=sum(int(self.const(e).nbytes) for e in entries
                                                     if e is not None))
        if foldable:
            arrays = [None if e is None else self.const(e) for e in entries]
            try:
                outs = check_outputs(rec.kernel(*arrays, **params), out_types, rec.name,
                                     rec.provider)
            except Exception as exc:  # noqa: BLE001
                self.fail(f"folding {op} on constants failed: {type(exc).__name__}: {exc}")
            res = [Const(a) for a in outs]
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
