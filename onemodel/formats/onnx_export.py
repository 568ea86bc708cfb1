"""ONNX export: ``save_onnx(graph, path, opset=None)`` / ``to_onnx(graph, opset=None)``.

Every OneModel node is lowered by its op record's ``onnx.export(ctx, node)`` (the tables live in
each plugin's ``onnx_mapping.py``; a fused op's lowering sits on its own record, beside the op).
A lowering reads the node (``node.op``, ``node.params``) and emits ONNX nodes through the
`ExportContext` ``ctx``:

``ctx.opset``
    The target opset of the default domain (17 .. `MAX_OPSET`); lowerings pick ops by it
    (``Gelu`` only at 20+, ``ReduceMean`` axes as an input at 18+...).
``ctx.inputs(node)`` / ``ctx.outputs(node)``
    The ONNX value names of the node's inputs ("" for an absent optional input) and outputs.
    A lowering must define every output name, exactly once.
``ctx.input_types(node)`` / ``ctx.output_types(node)``
    The OneModel `TensorType`s (dtype, shape with ints and symbolic `Dim`s).
``ctx.make_node(op_type, inputs, outputs=None, *, name=None, domain="", n_outputs=1, **attrs)``
    Emit one ONNX node; attributes as Python values (``onnx.helper.make_attribute``). Without
    ``outputs``, fresh names are made (from ``name`` or the op type). Returns the output name, or
    the list of names when ``n_outputs != 1`` or ``outputs`` has several entries.
``ctx.fresh(hint)``
    A new unique value name based on ``hint``.
``ctx.add_initializer(array, hint)``
    A new initializer holding ``array`` (numpy); returns its name. One that no node reads in
    the end is left out of the file (ONNX Runtime would warn about it on every session).
``ctx.const(value, dtype=None, hint="const")``
    A small constant (deduplicated): ``dtype`` a `DType`, a numpy dtype or None (numpy's).
``ctx.ints(values, hint="ints")``
    A 1-D int64 constant (axes, pads, starts...). Entries must be plain ints.
``ctx.dim(expr)``
    A 1-D int64 tensor of shape [1] holding the size ``expr`` (an int or a symbolic `Dim`).
    For a `Dim` the value is COMPUTED from the graph inputs (``Shape`` of the input axis that
    carries each symbol, then ``Mul``/``Add``/``Div``/``Mod`` for the expression), never a
    constant, so the file works at every size. ``ctx.scalar_dim(expr)`` is the same as a 0-d
    tensor (``Range`` wants scalars).
``ctx.shape(dims)``
    A 1-D int64 tensor for a shape made of ints and `Dim`s (ints grouped into constants, the
    rest from `dim`, joined by ``Concat``). ``ctx.reshape_target(dims)`` is the same but turns
    one symbolic entry into ``-1`` (fewer nodes for ``Reshape``).
``ctx.cast(name, from_dtype, to_dtype)``
    ``name`` itself when the dtypes agree, else the output of a ``Cast`` node.
``ctx.onnx_dtype(dtype)``
    The ``onnx.TensorProto`` element type of a `DType`.
``ctx.initializer_value(name)``
    The numpy array when the ONNX value ``name`` is an initializer or constant, else None.
``ctx.lower(op, inputs, input_types, params=None, outputs=None)``
    Lower another op record on ONNX values (a composite or fused op reuses its parts'
    lowerings); returns the output names. ``ctx.lowered_types`` holds their TensorTypes.
``ctx.decompose(node)``
    Lower the node through its op's ``decomposition`` (`OpDef.decomposition`): each part is
    lowered by its own record. An op without ``onnx.export`` is lowered this way automatically;
    a lowering calls it for the cases it has no direct ONNX op for (an older opset).
``ctx.unsupported(node, why)``
    Raise `OnnxExportError` naming the node, its source line and the reason.

A lowering must cast inputs itself where ONNX needs equal types (OneModel promotes like PyTorch:
``i64 + f32 -> f32``); `onemodel.formats.onnx_lowering` has helpers for the common shapes of
lowering (one elementwise node, a chain of unary nodes).

Symbolic axes of the graph inputs and outputs become ``dim_param``s spelled as the user named
them (an expression such as ``batch*2`` on an output keeps its printed form). After building, the
model is checked with ``onnx.checker.check_model(full_check=True)``, and shape inference is run
to assert that no symbolic input or output axis became a fixed number.
"""
from __future__ import annotations

from .._version import __version__

import os
import re
from typing import Any, Iterable

import numpy as np

from ..core.dtype import DType
from ..core.graph import Graph, Node, as_graph
from ..core.symbolic import _ATOMS, Dim
from ..core.types import TensorType
from ._atomic import atomic_write
from .onnx_dtypes import ONNX_TO_DTYPE, onnx_dtype  # noqa: F401 - ONNX_TO_DTYPE: an old name
from .onnx_errors import OnnxExportError

MIN_OPSET = 17
#: the newest opset onnxruntime 1.32 runs for everything we emit (checked by the tests)
DEFAULT_OPSET = 21


def _onnx():
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover - onnx is a core dependency
        raise OnnxExportError("ONNX export needs the 'onnx' package (pip install onnx)") from exc
    return onnx


def max_opset() -> int:
    return _onnx().defs.onnx_opset_version()


def _readable(name: str) -> str:
    s = re.sub(r"[^0-9A-Za-z_.:/\-]", "_", name)
    return s or "v"


class ExportContext:
    """What a lowering sees; see the module docstring for the API."""

    def __init__(self, graph: Graph, opset: int):
        self.graph = graph
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self._init_values: dict[str, np.ndarray] = {}
        self._used: set[str] = set()
        self._names: dict[str, str] = {}  # OneModel value name -> ONNX name
        self._const_cache: dict[tuple, str] = {}
        self._dim_cache: dict[str, str] = {}
        self._symbol_src: dict[str, tuple[str, int]] = {}
        self._producer = {o: n for n in graph.nodes for o in n.outputs}
        self._node_counter: dict[str, int] = {}
        self.current: Node | None = None
        self._extra_types: dict[str, TensorType] = {}
        self._synthetic = 0
        self._assign_names()

    # -- naming --------------------------------------------------------------------------------
    def _claim(self, name: str) -> str:
        base = name
        k = 1
        while name in self._used:
            name = f"{base}_{k}"
            k += 1
        self._used.add(name)
        return name

    def fresh(self, hint: str = "t") -> str:
        hint = _readable(hint)
        return self._claim(hint)

    def _assign_names(self) -> None:
        g = self.graph
        for v in g.inputs:
            self._names[v.name] = self._claim(v.name)
        out_for: dict[str, str] = {}
        inputs = {v.name for v in g.inputs}
        for o, v in g.outputs:
            self._used.add(o)  # reserve output names
            if v not in out_for and v not in inputs and v not in g.initializers:
                out_for[v] = o
        self._alias_outputs = out_for
        for name in sorted(g.initializers):
            if name in out_for:
                continue
            self._names[name] = self._claim(f"const_{name}" if name.isdigit()
                                            else _readable(name))
        for n in g.nodes:
            for o in n.outputs:
                if o in out_for:
                    self._names[o] = out_for[o]
                elif o.isdigit() or not o:
                    self._names[o] = self._claim(f"{n.op}_{o}")
                else:
                    self._names[o] = self._claim(_readable(o))

    def name_of(self, value: str | None) -> str:
        if value is None:
            return ""
        return self._names[value]

    # -- node access ---------------------------------------------------------------------------
    def inputs(self, node: Node) -> list[str]:
        return [self.name_of(i) for i in node.inputs]

    def outputs(self, node: Node) -> list[str]:
        return [self.name_of(o) for o in node.outputs]

    def _type(self, value: str) -> TensorType:
        t = self._extra_types.get(value)
        return t if t is not None else self.graph.values[value].type

    def input_types(self, node: Node) -> list[TensorType | None]:
        return [self._type(i) if i is not None else None for i in node.inputs]

    def output_types(self, node: Node) -> list[TensorType]:
        return [self._type(o) for o in node.outputs]

    def lower(self, op: str, inputs, input_types, params=None, outputs=None, **kw_params):
        """Lower another op record on ONNX values (composite lowerings: a fused op lowers its
        parts). ``inputs`` are ONNX names ("" for absent), ``input_types`` their TensorTypes;
        returns the list of ONNX output names (``outputs`` when given)."""
        from ..core.dispatch import infer
        from ..registry import REGISTRY

        rec = REGISTRY.tables().ops.get(op)
        if not exportable(rec):
            raise OnnxExportError(f"no ONNX lowering for op {op!r} (needed by "
                                  f"{self.current.op if self.current else 'a lowering'})")
        params = dict(params or {}, **kw_params)
        for pname, p in rec.params.items():
            if pname not in params and not p.required:
                params[pname] = p.default
        out_t = infer(rec, list(input_types), params)
        out_t = list(out_t) if isinstance(out_t, (tuple, list)) else [out_t]
        self.lowered_types = out_t
        in_names: list[Any] = []
        for name, t in zip(inputs, input_types):
            if not name:
                in_names.append(None)
                continue
            key = f"\x00{self._synthetic}"
            self._synthetic += 1
            self._extra_types[key] = t
            self._names[key] = name
            in_names.append(key)
        if outputs is None:
            outputs = [self.fresh(op) for _ in out_t]
        elif isinstance(outputs, str):
            outputs = [outputs]
        out_names = []
        for name, t in zip(outputs, out_t):
            key = f"\x00{self._synthetic}"
            self._synthetic += 1
            self._extra_types[key] = t
            self._names[key] = name
            out_names.append(key)
        saved = self.current
        sub = Node(op, tuple(in_names), tuple(out_names), params,
                   saved.source if saved is not None else None)
        export_node(self, rec, sub)
        self.current = saved
        return list(outputs)

    def decompose(self, node: Node) -> None:
        """Lower ``node`` as its op's decomposition: the parts' graph is built on the node's
        input types (symbolic sizes kept) and each part lowered by its own record."""
        from ..core.decompose import build
        from ..errors import OneModelError
        from ..registry import REGISTRY

        rec = REGISTRY.tables().ops.get(node.op)
        present = self.input_types(node)  # None for an absent optional input
        try:
            sub = build(rec, present, node.params)
        except OneModelError as exc:
            self.unsupported(node, f"its decomposition failed: {exc}")
        names: dict[str, str] = {}
        onnx_inputs = self.inputs(node)
        for i, v in enumerate(present):
            if v is not None:
                names[f"in{i}"] = onnx_inputs[i]
        for k, arr in sub.initializers.items():
            names[k] = self.const(np.asarray(arr), DType.from_numpy(np.asarray(arr).dtype),
                                  hint=f"{node.op}_c")
        final = dict(zip((v for _, v in sub.outputs), self.outputs(node)))
        for part in sub.nodes:
            ins = ["" if i is None else names[i] for i in part.inputs]
            types = [None if i is None else sub.values[i].type for i in part.inputs]
            outs = [final.pop(o) if o in final else self.fresh(part.op) for o in part.outputs]
            self.lower(part.op, ins, types, dict(part.params), outputs=outs)
            names.update(zip(part.outputs, outs))
        for v, out in final.items():  # an output that is an input or a constant of the parts
            self.make_node("Identity", [names[v]], [out])

    def unsupported(self, node: Node, why: str):
        where = f" (recorded at {node.source})" if node.source else ""
        raise OnnxExportError(f"cannot export node {node.op} -> %{', %'.join(node.outputs)}"
                              f"{where} to ONNX opset {self.opset}: {why}")

    # -- emitting ------------------------------------------------------------------------------
    def make_node(self, op_type: str, inputs: Iterable[str], outputs=None, *, name=None,
                  domain: str = "", n_outputs: int = 1, **attrs):
        onnx = _onnx()
        if outputs is None:
            base = name or op_type.lower()
            outputs = [self.fresh(base) for _ in range(n_outputs)]
        elif isinstance(outputs, str):
            outputs = [outputs]
        outputs = list(outputs)
        k = self._node_counter.get(op_type, 0)
        self._node_counter[op_type] = k + 1
        node_name = f"{op_type}_{k}"
        if self.current is not None:
            node_name = f"{self.current.op}/{node_name}"
        attrs = {a: v for a, v in attrs.items() if v is not None}
        self.nodes.append(onnx.helper.make_node(op_type, list(inputs), outputs, name=node_name,
                                                domain=domain or None, **attrs))
        return outputs[0] if len(outputs) == 1 and n_outputs == 1 else outputs

    def add_initializer(self, array, hint: str = "const") -> str:
        onnx = _onnx()
        arr = np.asarray(array)
        name = self.fresh(hint)
        DType.from_numpy(arr.dtype)  # refuses dtypes we do not support
        tensor = onnx.numpy_helper.from_array(np.require(arr, requirements="C"), name)
        self.initializers.append(tensor)
        self._init_values[name] = arr
        return name

    def const(self, value, dtype=None, hint: str = "const") -> str:
        if isinstance(dtype, DType):
            dtype = dtype.numpy
        arr = np.asarray(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if arr.nbytes <= 4096 and key in self._const_cache:
            return self._const_cache[key]
        name = self.add_initializer(arr, hint)
        if arr.nbytes <= 4096:
            self._const_cache[key] = name
        return name

    def ints(self, values, hint: str = "ints") -> str:
        vals = [int(v) for v in values]
        return self.const(np.array(vals, dtype=np.int64), hint=hint)

    def initializer_value(self, name: str):
        return self._init_values.get(name)

    def onnx_dtype(self, dtype) -> int:
        return onnx_dtype(dtype)

    def cast(self, name: str, from_dtype, to_dtype) -> str:
        if name == "" or DType.parse(from_dtype) == DType.parse(to_dtype):
            return name
        return self.make_node("Cast", [name], name="cast", to=onnx_dtype(to_dtype))

    # -- symbolic sizes ------------------------------------------------------------------------
    def _symbol(self, sym: str) -> str:
        if sym in self._dim_cache:
            return self._dim_cache[sym]
        target = Dim.symbol(sym)
        for v in self.graph.inputs:
            for axis, d in enumerate(v.shape):
                if isinstance(d, Dim) and d == target:
                    out = self.make_node("Shape", [self.name_of(v.name)], name=f"{sym}_size",
                                         start=axis, end=axis + 1)
                    self._dim_cache[sym] = out
                    return out
        # a data size (decided by tensor data at run time): the Shape of a value it sizes
        for name, v in self.graph.values.items():
            if name in self._names and any(isinstance(d, Dim) and d == target for d in v.shape):
                axis = next(k for k, d in enumerate(v.shape) if isinstance(d, Dim) and d == target)
                out = self.make_node("Shape", [self.name_of(name)], name=f"{sym}_size",
                                     start=axis, end=axis + 1)
                self._dim_cache[sym] = out
                return out
        raise OnnxExportError(f"symbolic size {sym!r} is not the size of any graph input axis, so "
                              f"ONNX cannot compute it at run time")

    def dim(self, expr) -> str:
        """A [1] int64 tensor holding ``expr``, computed from the inputs' shapes when symbolic."""
        if not isinstance(expr, Dim):
            return self.ints([int(expr)], hint="size")
        key = str(expr)
        if key in self._dim_cache:
            return self._dim_cache[key]
        total = None
        for monomial, coeff in sorted(expr.terms, key=lambda t: (t[0] == (), t[0])):
            if monomial == ():
                term = self.ints([coeff], hint="size")
            else:
                term = None
                for atom_key in monomial:
                    factor = self._atom(atom_key)
                    term = factor if term is None else self.make_node("Mul", [term, factor],
                                                                      name="size")
                if coeff != 1:
                    term = self.make_node("Mul", [term, self.ints([coeff], hint="size")],
                                          name="size")
            total = term if total is None else self.make_node("Add", [total, term], name="size")
        self._dim_cache[key] = total
        return total

    def _atom(self, key: str) -> str:
        atom = _ATOMS[key]
        if atom.op is None:
            return self._symbol(key)
        if key in self._dim_cache:
            return self._dim_cache[key]
        a, b = self.dim(atom.a), self.dim(atom.b)
        if atom.op == "//":
            out = self.make_node("Div", [a, b], name="size")  # sizes are >= 0: trunc == floor
        elif atom.op in ("min", "max"):
            out = self.make_node(atom.op.capitalize(), [a, b], name="size")
        else:
            out = self.make_node("Mod", [a, b], name="size", fmod=0)
        self._dim_cache[key] = out
        return out

    def scalar_dim(self, expr) -> str:
        if not isinstance(expr, Dim):
            return self.const(np.array(int(expr), dtype=np.int64), hint="size")
        return self.make_node("Squeeze", [self.dim(expr), self.ints([0], hint="axes")],
                              name="size")

    def shape(self, dims) -> str:
        """A 1-D int64 tensor for ``dims`` (ints and Dims)."""
        dims = list(dims)
        if not any(isinstance(d, Dim) for d in dims):
            return self.ints(dims, hint="shape")
        parts: list[str] = []
        run: list[int] = []
        for d in dims:
            if isinstance(d, Dim):
                if run:
                    parts.append(self.ints(run, hint="shape"))
                    run = []
                parts.append(self.dim(d))
            else:
                run.append(int(d))
        if run:
            parts.append(self.ints(run, hint="shape"))
        if len(parts) == 1:
            return parts[0]
        return self.make_node("Concat", parts, name="shape", axis=0)

    def reshape_target(self, dims) -> str:
        """Like `shape`, with the most complex symbolic entry turned into -1 (Reshape infers it)."""
        dims = list(dims)
        sym = [i for i, d in enumerate(dims) if isinstance(d, Dim)]
        if sym and not any((not isinstance(d, Dim)) and d == -1 for d in dims):
            i = max(sym, key=lambda j: (len(str(dims[j])), j))
            dims[i] = -1
        return self.shape(dims)


# ----------------------------------------------------------------------------------------------
def _value_info(onnx, name: str, t: TensorType):
    shape = [str(d) if isinstance(d, Dim) else int(d) for d in t.shape]
    return onnx.helper.make_tensor_value_info(name, onnx_dtype(t.dtype), shape)


def _read_names(nodes) -> set[str]:
    """Every value name the nodes (and their subgraphs) read. An initializer outside it is
    dropped: a lowering may leave a constant behind (a folded one's source, a spare zero), and
    ONNX Runtime warns about each unused initializer on every session."""
    names: set[str] = set()
    for n in nodes:
        names.update(n.input)
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                names |= _read_names(g.node)
    return names


def _check_opset(opset) -> int:
    top = max_opset()
    if opset is None:
        return min(DEFAULT_OPSET, top)
    if isinstance(opset, bool) or not isinstance(opset, int):
        raise OnnxExportError(f"opset must be an int, got {opset!r}")
    if not MIN_OPSET <= opset <= top:
        raise OnnxExportError(f"opset {opset} is not supported: OneModel exports opsets "
                              f"{MIN_OPSET}..{top} (the installed onnx {_onnx().__version__} "
                              f"knows up to {top})")
    return opset


def exportable(rec) -> bool:
    """The op has an ONNX lowering of its own or a decomposition to lower instead."""
    return rec is not None and ((rec.onnx is not None and rec.onnx.export is not None)
                                or rec.decomposition is not None)


def export_node(ctx: ExportContext, rec, node: Node) -> None:
    if rec.onnx is not None and rec.onnx.export is not None:
        rec.onnx.export(ctx, node)
    else:
        ctx.decompose(node)


def to_onnx(graph_or_traced, opset: int | None = None, *, check: bool = True,
            fold: bool = True, graph_name: str = "onemodel"):
    """The `onnx.ModelProto` for a graph (checked unless ``check=False``). ``fold`` first
    computes nodes whose inputs are all constants (slices of weights, static factories), so the
    file holds their results instead."""
    from ..registry import REGISTRY

    onnx = _onnx()
    graph = as_graph(graph_or_traced, "save_onnx")
    opset = _check_opset(opset)
    if fold:
        from ..passes.constant_folding import fold_constants

        graph = fold_constants(graph)
    ops = REGISTRY.tables().ops
    missing: dict[str, int] = {}
    for n in graph.nodes:
        if not exportable(ops.get(n.op)):
            missing[n.op] = missing.get(n.op, 0) + 1
    if missing:
        listed = ", ".join(f"{k} ({v} node{'s' if v != 1 else ''})" for k, v in
                           sorted(missing.items()))
        raise OnnxExportError(f"no ONNX lowering for op(s): {listed}")

    ctx = ExportContext(graph, opset)
    for n in graph.nodes:
        ctx.current = n
        before = len(ctx.nodes)
        export_node(ctx, ops[n.op], n)
        produced = {o for node in ctx.nodes[before:] for o in node.output}
        for o in ctx.outputs(n):
            if o not in produced:
                ctx.unsupported(n, f"the lowering of {n.op!r} did not define output {o!r}")
    ctx.current = None

    # outputs that are inputs, initializers or repeated values go through Identity
    for o, v in graph.outputs:
        if ctx._alias_outputs.get(v) != o:
            ctx.make_node("Identity", [ctx.name_of(v)], [o])

    inputs = [_value_info(onnx, ctx.name_of(v.name), v.type) for v in graph.inputs]
    outputs = [_value_info(onnx, o, graph.values[v].type) for o, v in graph.outputs]
    out_names = {o for o, _ in graph.outputs}
    value_info = []
    for n in graph.nodes:
        for o in n.outputs:
            name = ctx.name_of(o)
            if name not in out_names:
                value_info.append(_value_info(onnx, name, graph.values[o].type))
    for name in sorted(graph.initializers):
        arr = np.asarray(graph.initializers[name])
        ctx.initializers.append(onnx.numpy_helper.from_array(np.require(arr, requirements="C"),
                                                             ctx.name_of(name)))
    read = _read_names(ctx.nodes) | out_names
    ctx.initializers = [t for t in ctx.initializers if t.name in read]
    total = sum(t.ByteSize() for t in ctx.initializers)
    if total > 2 ** 31 - 2 ** 24:
        raise OnnxExportError(f"the model's {total} bytes of weights exceed the 2 GiB limit of a "
                              f"single ONNX file (external data is not supported yet)")
    g = onnx.helper.make_graph(ctx.nodes, graph_name, inputs, outputs,
                               initializer=ctx.initializers, value_info=value_info)
    opset_ids = [onnx.helper.make_opsetid("", opset)]
    model = onnx.helper.make_model(g, opset_imports=opset_ids, producer_name="onemodel",
                                   producer_version=__version__)
    model.ir_version = onnx.helper.find_min_ir_version_for(opset_ids)
    if graph.guards:  # ONNX cannot state them; OneModel's importer restores them
        import json

        onnx.helper.set_model_props(model, {"onemodel.guards": json.dumps(
            [g.to_json() for g in graph.guards])})
    if check:
        check_model(model, graph)
    return model


def check_model(model, graph: Graph | None = None) -> None:
    """``check_model(full_check=True)``, then: no symbolic input/output axis became a number."""
    onnx = _onnx()
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise OnnxExportError(f"the exported model fails onnx.checker: {exc}") from exc
    if graph is None:
        return
    inferred = onnx.shape_inference.infer_shapes(model)
    declared = {v.name: v.type for v in graph.inputs}
    declared.update({o: graph.values[v].type for o, v in graph.outputs})
    for vi in list(inferred.graph.input) + list(inferred.graph.output):
        t = declared.get(vi.name)
        if t is None:
            continue
        dims = vi.type.tensor_type.shape.dim
        if len(dims) != len(t.shape):
            raise OnnxExportError(f"ONNX value {vi.name!r} has rank {len(dims)}, the graph says "
                                  f"{t}")
        for axis, (d, want) in enumerate(zip(dims, t.shape)):
            if isinstance(want, Dim) and d.HasField("dim_value"):
                raise OnnxExportError(f"symbolic axis {axis} ({want}) of {vi.name!r} became the "
                                      f"fixed size {d.dim_value} in the exported model")


def save_onnx(graph_or_traced, path: str | os.PathLike, opset: int | None = None) -> None:
    """Export to an ONNX file (written atomically)."""
    model = to_onnx(graph_or_traced, opset)
    data = model.SerializeToString()
    atomic_write(path, lambda f: f.write(data))


__all__ = ["save_onnx", "to_onnx", "check_model", "ExportContext", "OnnxExportError",
           "DEFAULT_OPSET", "MIN_OPSET", "max_opset", "onnx_dtype", "ONNX_TO_DTYPE"]
