"""ONNX subgraphs at import: the ``GRAPH`` attributes of ``If``, ``Loop`` and ``Scan``.

A subgraph attribute is read into an `OnnxGraph` (its proto, formal inputs, outputs,
initializers, and the *free* names it reads from enclosing scopes). Import rules then either

* `inline` it: a branch whose condition is known at import is converted into the enclosing
  context itself, its outer names resolved there, so the ``If`` disappears; or
* `import_subgraph` it: it becomes a closed OneModel `Graph` for a node param. Every outer value
  it reads becomes one of its inputs (returned as ``captured``, which the rule feeds as the
  node's last inputs); outer constants and sizes computed from input axes are used directly
  (constants become the subgraph's own initializers), so they stay foldable and symbolic inside.

The ops holding the graphs are plugin records (``cond``, ``loop``, ``scan`` in
onemodel-ops-basic); this module knows none of them.
"""
from __future__ import annotations

from typing import Iterable

from ..core.graph import Graph, Value
from ..core.symbolic import Dim
from ..core.types import TensorType
from .onemodel_file import MAX_DIM


class OnnxGraph:
    """One ``GRAPH`` attribute, read but not converted (conversion needs its enclosing scope)."""

    def __init__(self, proto, inputs, outputs, initializers, free, nodes, where: str):
        self.proto = proto
        self.inputs = inputs  # [(name, ValueInfoProto)]
        self.outputs = outputs  # [name]
        self.initializers = initializers  # {name: ndarray}
        self.free = free  # names read from enclosing scopes, in order of first use
        self.nodes = nodes  # parsed OnnxNodes (for listing op types before conversion)
        self.where = where

    def __repr__(self):
        return f"OnnxGraph({self.proto.name!r}, {len(self.nodes)} nodes)"


def read_graph(onnx, proto, where: str) -> OnnxGraph:
    """An `OnnxGraph` for a GraphProto: names checked, sizes in range, one definition per name."""
    from .onnx_import.decode import _attr_value, _tensor_array, _text
    from .onnx_import.errors import OnnxImportError, OnnxUnsupportedError
    from .onnx_import.node import OnnxNode

    where = f"{where}: subgraph {_text(proto.name, where)!r:.60}"
    defined: set[str] = set()

    def define(name: str, what: str) -> None:
        if name in defined:
            raise OnnxImportError(f"{where}: {what} {name!r:.80} is defined twice (single static "
                                  f"assignment)")
        defined.add(name)

    inits = {}
    for t in proto.initializer:
        name = _text(t.name, where)
        for axis, d in enumerate(t.dims):
            if not 0 <= d <= MAX_DIM:
                raise OnnxImportError(f"{where}: initializer {name!r:.80} axis {axis} has size "
                                      f"{d}; sizes run from 0 to {MAX_DIM}")
        inits[name] = _tensor_array(onnx, t, f"{where}: initializer {name!r:.80}")
        define(name, "initializer")
    if len(proto.sparse_initializer):
        raise OnnxUnsupportedError(f"{where}: sparse initializers are not supported")
    inputs = []
    for vi in proto.input:
        name = _text(vi.name, where)
        if name not in inits:
            define(name, "input")
        inputs.append((name, vi))
    free: list[str] = []
    nodes = []
    for k, n in enumerate(proto.node):
        label = f"{where}: node {k} ({_text(n.op_type, where)})"
        for i in n.input:
            i = _text(i, label)
            if i and i not in defined and i not in free:
                free.append(i)
        attrs = {a.name: _attr_value(onnx, a, label) for a in n.attribute}
        for v in attrs.values():
            if isinstance(v, OnnxGraph):
                free.extend(x for x in v.free if x not in defined and x not in free)
        for o in n.output:
            if _text(o, label):
                define(o, "value")
        nodes.append(OnnxNode(n.op_type, list(n.input), list(n.output), attrs, n.name,
                              n.domain))
    outputs = [_text(vi.name, where) for vi in proto.output]
    for o in outputs:
        if o not in defined and o not in free:
            free.append(o)  # an outer value returned as is
    return OnnxGraph(proto, inputs, outputs, inits, free, nodes, where)


def graphs_of(node) -> list[OnnxGraph]:
    return [v for v in node.attrs.values() if isinstance(v, OnnxGraph)]


def free_names(node) -> list[str]:
    """The outer names a node's subgraphs read (its hidden inputs)."""
    return [x for g in graphs_of(node) for x in g.free]


def nested_nodes(nodes: Iterable, skip: set) -> Iterable:
    """The nodes (ids in ``skip`` left out: folded at import) and, recursively, their subgraphs'
    nodes, whose op types must be claimed too."""
    from .onnx_fold import statically_constant

    for n in nodes:
        if id(n) in skip:
            continue
        yield n
        for g in graphs_of(n):
            yield from nested_nodes(g.nodes, statically_constant(g.nodes, set(g.initializers)))


def sequence_input(og: OnnxGraph) -> str | None:
    """The name of a formal input that is not a tensor (a sequence, an optional), or None."""
    for name, vi in og.inputs:
        if vi.type.WhichOneof("value") not in (None, "tensor_type"):
            return f"{name!r} ({vi.type.WhichOneof('value')})"
    return None


# ----------------------------------------------------------------------------------------------
def inline(ctx, og: OnnxGraph) -> list:
    """Convert a branch into ``ctx`` itself (its condition is known at import); the entries of
    its outputs."""
    from .onnx_import.convert import import_nodes
    from .onnx_import.entries import Const
    from .onnx_import.errors import _onnx

    clash = [n for n in list(og.initializers) + [o for node in og.nodes for o in node.outputs]
             if n and n in ctx.entries]
    if clash:
        ctx.fail(f"subgraph {og.proto.name!r} redefines {clash[0]!r}, a name of the enclosing "
                 f"graph")
    for name, arr in og.initializers.items():
        ctx.entries[name] = Const(arr, name)
    consts = {k for k, e in ctx.entries.items() if isinstance(e, Const)}
    import_nodes(_onnx(), ctx, og.proto.node, consts, _where(ctx))
    return [ctx.entry(o) for o in og.outputs]


def inline_call(ctx, og: OnnxGraph, args: list, what: str) -> list:
    """Convert ``og`` into ``ctx`` as a function called on ``args`` (entries bound to its formal
    inputs, in order): the entries of its outputs. Its own names (inputs, initializers, node
    outputs) are renamed to fresh ones, so a modifier graph (FlexAttention's ``score_mod``) may
    reuse any name of the enclosing graph; the outer names it reads stay as they are."""
    from .onnx_import.convert import import_nodes
    from .onnx_import.entries import Const
    from .onnx_import.errors import OnnxUnsupportedError, _onnx

    if len(args) != len(og.inputs):
        ctx.unsupported(f"{what} declares {len(og.inputs)} inputs; {ctx.current.op_type} gives "
                        f"it {len(args)}")
    nested = [n for n in og.nodes if graphs_of(n)]
    if nested:
        ctx.unsupported(f"{what} holds a {nested[0].op_type} node with a subgraph; nested "
                        f"subgraphs are not supported there")
    own = [name for name, _ in og.inputs] + list(og.initializers) + [
        o for n in og.nodes for o in n.outputs if o]
    k = 0
    while True:
        prefix = f"{what}{k}/"
        k += 1
        if not any(prefix + name in ctx.entries or prefix + name in ctx.values for name in own):
            break
    rename = {name: prefix + name for name in own}
    onnx = _onnx()
    protos = []
    for p in og.proto.node:
        q = onnx.NodeProto()
        q.CopyFrom(p)
        q.ClearField("input")
        q.ClearField("output")
        q.input.extend(rename.get(i, i) if i else i for i in p.input)
        q.output.extend(rename.get(o, o) if o else o for o in p.output)
        protos.append(q)
    for name, arr in og.initializers.items():
        ctx.entries[rename[name]] = Const(arr, rename[name])
    for (name, _), arg in zip(og.inputs, args):
        ctx.entries[rename[name]] = ctx.entry(arg)
    consts = {k for k, e in ctx.entries.items() if isinstance(e, Const)}
    saved = ctx.current
    try:  # a refusal inside names the node holding the subgraph, then the node inside
        import_nodes(onnx, ctx, protos, consts, lambda w: w)
    except OnnxUnsupportedError as exc:
        ctx.current = saved
        ctx.unsupported(f"{what}: {exc}")
    finally:
        ctx.current = saved
    return [ctx.entry(rename.get(o, o)) for o in og.outputs]


def _where(ctx):
    label = getattr(ctx, "label", "<model>")
    return lambda what: f"{label}: {what}"


def import_subgraph(ctx, og: OnnxGraph, formal: list[TensorType], what: str):
    """A closed `Graph` for ``og``, its formal inputs typed ``formal`` (in order), plus the
    outer ONNX names it captures (its inputs after the formal ones, in order)."""
    from .onnx_import.context import ImportContext
    from .onnx_import.convert import _finish, import_nodes
    from .onnx_import.entries import Const, Sym, Val
    from .onnx_import.errors import _onnx

    if len(formal) != len(og.inputs):
        ctx.unsupported(f"{what} declares {len(og.inputs)} inputs; {ctx.current.op_type} gives "
                        f"it {len(formal)}")
    child = ImportContext(ctx.opset, ctx.opsets)
    child.label = getattr(ctx, "label", "<model>")
    child._symbols = ctx._symbols
    child.data_dim = ctx.data_dim  # data sizes are numbered across the whole model
    for (name, _), t in zip(og.inputs, formal):
        v = Value(name, t)
        child.values[name] = v
        child.inputs.append(v)
        child.entries[name] = Val(name, t)
    for name, arr in og.initializers.items():
        child.entries[name] = Const(arr, name)
    captured: list[str] = []
    for name in og.free:
        if name in child.entries:
            continue
        e = ctx.entry(name)
        if isinstance(e, Const):
            child.entries[name] = e
        elif isinstance(e, Sym):
            child.entries[name] = Sym(e.array, e.dtype)  # its run-time form is the child's own
        else:
            v = Value(name, e.type)
            child.values[name] = v
            child.inputs.append(v)
            child.entries[name] = Val(name, e.type)
            captured.append(name)
    consts = {k for k, e in child.entries.items() if isinstance(e, Const)}
    from .onnx_import.errors import OnnxUnsupportedError

    saved = ctx.current
    try:  # a refusal inside names the node holding the subgraph, then the node inside
        import_nodes(_onnx(), child, og.proto.node, consts, lambda w: w)
    except OnnxUnsupportedError as exc:
        ctx.current = saved
        ctx.unsupported(f"{what}: {exc}")
    finally:
        ctx.current = saved
    outputs = [(f"out{k}", child.value(child.entry(o))) for k, o in enumerate(og.outputs)]
    graph = _finish(child, outputs, {}, f"{child.label}: {what}")
    # captures only dead nodes read are dropped (the formal inputs stay, used or not)
    used = {i for n in graph.nodes for i in n.inputs if i is not None} | {
        v for _, v in graph.outputs}
    keep = set(og_name for og_name, _ in og.inputs) | (set(captured) & used)
    captured = [c for c in captured if c in keep]
    inputs = tuple(v for v in graph.inputs if v.name in keep)
    graph = Graph(inputs=inputs, nodes=graph.nodes, outputs=graph.outputs,
                  values={k: v for k, v in graph.values.items()
                          if k in keep or k not in {x.name for x in graph.inputs}},
                  initializers=graph.initializers, guards=graph.guards)
    return _bind_sizes(ctx, graph, captured)


def _bind_sizes(ctx, graph: Graph, captured: list[str]):
    """A size of the enclosing graph that the subgraph uses (a ``Shape`` taken outside, used as
    data inside) but none of its inputs carries is bound by capturing an outer value that has
    it as an axis: a subgraph binds its sizes from its own inputs when it runs."""
    from ..core.dynamic_plan import data_symbols

    missing = data_symbols(graph)
    extra = []
    for sym in sorted(missing):
        target = Dim.symbol(sym)
        for v in ctx.inputs:
            if v.name not in captured and v.name not in graph.values and any(
                    isinstance(d, Dim) and d == target for d in v.shape):
                extra.append(v)
                break
    if not extra:
        return graph, captured
    values = dict(graph.values)
    values.update({v.name: v for v in extra})
    graph = Graph(inputs=graph.inputs + tuple(extra), nodes=graph.nodes, outputs=graph.outputs,
                  values=values, initializers=graph.initializers, guards=graph.guards)
    return graph, captured + [v.name for v in extra]


def with_inputs(graph: Graph, names: list[str], types: list[TensorType], n_formal: int) -> Graph:
    """``graph`` with its captured inputs (after the ``n_formal`` formal ones) made exactly
    ``names`` in order: one it does not read is added, unused (branches share one input list)."""
    have = {v.name: v for v in graph.inputs[n_formal:]}
    values = dict(graph.values)
    extra = []
    for name, t in zip(names, types):
        v = have.get(name) or Value(name, t)
        values[name] = v
        extra.append(v)
    return Graph(inputs=tuple(graph.inputs[:n_formal]) + tuple(extra), nodes=graph.nodes,
                 outputs=graph.outputs, values=values, initializers=graph.initializers,
                 guards=graph.guards)


def output_types(graph: Graph) -> list[TensorType]:
    return [graph.values[v].type for _, v in graph.outputs]


def outer_shape(ctx, graph: Graph, shape) -> tuple:
    """A subgraph's output shape as sizes of the enclosing graph: a size naming a symbol none of
    the subgraph's inputs carries (a data size decided inside) is a new data size outside."""
    known = {s for v in graph.inputs for d in v.shape if isinstance(d, Dim) for s in d.symbols()}
    return tuple(d if not isinstance(d, Dim) or d.symbols() <= known else ctx.data_dim()
                 for d in shape)


__all__ = ["OnnxGraph", "read_graph", "inline", "inline_call", "import_subgraph", "with_inputs",
           "output_types", "outer_shape", "nested_nodes", "free_names", "sequence_input"]
