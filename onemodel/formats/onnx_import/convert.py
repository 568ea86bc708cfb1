"""The conversion driver: a checked ModelProto to a verified OneModel Graph, node by node."""
from __future__ import annotations

import numpy as np
from attrs import evolve

from ...core.dtype import DType
from ...core.graph import Graph, Node, Value
from ...core.kernel_call import FOLD_MAX_BYTES
from ...core.types import TensorType
from ...errors import GraphError
from ...passes import optimize_on_load
from ..onnx_fold import fold, statically_constant
from .checks import _check_arity, check_model
from .context import ImportContext
from ..onnx_dtypes import ONNX_TO_DTYPE, onnx_type_name
from .decode import _attr_value, _tensor_array, _text
from .entries import Const, Val
from .errors import OnnxImportError, OnnxUnsupportedError, _onnx
from .node import OnnxNode
from .rules import apply_rules, candidates, claimed_rules, handled, op_key
from .sizes import _try_symbolic


def _guards_of(model, label: str) -> tuple:
    """The size conditions a OneModel export stored in ``metadata_props`` (see core/guards.py);
    ONNX itself has no way to state them, so other runtimes do not check them."""
    import json

    from ...core.guards import Guard

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


def _convert(model, label: str) -> Graph:
    """The steps of a conversion, in order; each raises naming what in the file is wrong."""
    onnx = _onnx()
    check_model(onnx, model, label)
    g = model.graph
    ctx = ImportContext(_default_opset(model, label), _opsets(model))
    ctx.label = label

    def where(what):
        return f"{label}: {what}"

    consts = _read_initializers(onnx, ctx, g, where)
    _read_inputs(ctx, g, consts, where)
    import_nodes(onnx, ctx, g.node, set(consts), where)
    outputs = _graph_outputs(ctx, g, where)
    graph = _finish(ctx, outputs, _readable_names(ctx), label)
    guards = _guards_of(model, label)
    return evolve(graph, guards=guards) if guards else graph


def _default_opset(model, label: str) -> int:
    """The opset of the default ONNX domain (the last one listed wins, as before)."""
    opset = None
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            opset = o.version
    if opset is None:
        raise OnnxImportError(f"{label}: the model imports no version of the default ONNX domain")
    return opset


def _opsets(model) -> dict[str, int]:
    """The version the model imports of each domain (the default one under ``""``), for rules of
    other domains (``ctx.opset_of(domain)``)."""
    return {("" if o.domain == "ai.onnx" else o.domain): int(o.version)
            for o in model.opset_import}


def _read_initializers(onnx, ctx: ImportContext, g, where) -> dict[str, np.ndarray]:
    """The initializers as constants of ``ctx``; sparse ones are refused."""
    consts: dict[str, np.ndarray] = {}
    for t in g.initializer:
        consts[t.name] = _tensor_array(onnx, t, where(f"initializer {t.name!r:.80}"))
    if len(g.sparse_initializer):
        raise OnnxUnsupportedError(where("sparse initializers are not supported"))
    for name, arr in consts.items():
        ctx.entries[name] = Const(arr, name)
    return consts


def _read_inputs(ctx: ImportContext, g, consts: dict, where) -> None:
    """The graph inputs (those that are not initializers) as values of ``ctx``: dtype, and a
    shape whose ``dim_param`` and unknown axes become symbolic sizes."""
    for vi in list(g.input) + list(g.output):
        _text(vi.name, where("graph input/output name"))
    for vi in g.input:
        if vi.name in consts:
            continue
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None:
            raise OnnxUnsupportedError(where(f"input {vi.name!r} is not a tensor"))
        if tt.elem_type not in ONNX_TO_DTYPE:
            name = onnx_type_name(tt.elem_type)
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


def _graph_outputs(ctx: ImportContext, g, where) -> list[tuple[str, str]]:
    """(ONNX output name, OneModel value name) for each graph output."""
    outputs = []
    for vi in g.output:
        e = ctx.entries.get(vi.name)
        if e is None:
            raise OnnxUnsupportedError(where(f"output {vi.name!r} is not produced"))
        outputs.append((vi.name, ctx.value(e)))
    return outputs


def _readable_names(ctx: ImportContext) -> dict[str, str]:
    """Renames for readable value names: a node output takes the ONNX name of the value it
    became, where that name is free."""
    rename: dict[str, str] = {}
    taken = set(ctx.values)
    for onnx_name, e in ctx.entries.items():
        if isinstance(e, Val) and e.name.isdigit() and e.name not in rename:
            target = onnx_name
            if target not in taken and target not in rename.values():
                rename[e.name] = target
                taken.add(target)
    return rename


def import_nodes(onnx, ctx: ImportContext, protos, consts: set, where) -> None:
    """Convert ONNX node protos in order into ``ctx`` (the top graph, a subgraph, or an
    inlined branch): every op type, nested subgraphs' included, must be claimed or folded."""
    nodes = decode_nodes(onnx, ctx, protos, where)
    rules = claimed_rules()
    foldable = statically_constant(nodes, consts)
    _refuse_unclaimed(nodes, foldable, rules, where)
    for n in nodes:
        ctx.current = n
        _record_results(ctx, n, _convert_node(onnx, ctx, n, rules, foldable, where))
    ctx.current = None


def decode_nodes(onnx, ctx: ImportContext, protos, where) -> list[OnnxNode]:
    """`OnnxNode`s for node protos: text fields checked, arity against the schema, attributes
    decoded (subgraphs read, not converted)."""
    nodes = []
    for k, n in enumerate(protos):
        label_n = f"node {k}"
        for text in (n.op_type, n.domain, n.name, *n.input, *n.output):
            _text(text, where(label_n))
        label_n = f"node {k} ({n.op_type}{' ' + repr(n.name) if n.name else ''})"
        _check_arity(onnx, n, ctx.opset_of(n.domain), where(label_n))
        attrs = {a.name: _attr_value(onnx, a, where(label_n)) for a in n.attribute}
        nodes.append(OnnxNode(n.op_type, list(n.input), list(n.output), attrs, n.name,
                              n.domain))
    return nodes


def _refuse_unclaimed(nodes, foldable: set, rules, where) -> None:
    """One refusal listing every op type no rule claims (nested subgraphs' included, folded
    nodes left out), with counts, before anything is converted."""
    from ..onnx_subgraph import nested_nodes

    unsupported: dict[str, int] = {}
    for n in nested_nodes(nodes, foldable):
        if not handled(n, rules):
            key = op_key(n.domain, n.op_type)
            unsupported[key] = unsupported.get(key, 0) + 1
    if unsupported:
        listed = ", ".join(f"{k} ({v} node{'s' if v != 1 else ''})"
                           for k, v in sorted(unsupported.items()))
        raise OnnxUnsupportedError(where(f"unsupported ONNX op type(s): {listed}"))


def _convert_node(onnx, ctx: ImportContext, n: OnnxNode, rules, foldable: set, where):
    """One node's results: the size evaluator, else its rules, else folding on constants."""
    results = _try_symbolic(ctx, n)
    if results is not None:
        return results
    cands = candidates(n, rules)
    if not cands:
        if id(n) in foldable:
            return _fold_constant(onnx, ctx, n, where)
        raise OnnxUnsupportedError(where(f"{n.describe()}: {n.op_type} is only supported on "
                                         f"sizes computed from input shapes, not on tensor "
                                         f"data"))
    results, err = apply_rules(ctx, n, cands, where)
    if results is None and id(n) in foldable:
        results = _fold_constant(onnx, ctx, n, where, err)
    if results is None:
        raise OnnxUnsupportedError(where(str(err)))
    return results


def _record_results(ctx: ImportContext, n: OnnxNode, results) -> None:
    """Bind a node's results to its ONNX output names (arrays become named constants; missing
    trailing results are optional outputs nobody uses)."""
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


def _fold_constant(onnx, ctx: ImportContext, n: OnnxNode, where, err=None) -> list:
    """Compute an all-constant node with onnx's reference implementation (any op type)."""
    from ..onnx_subgraph import graphs_of

    arrays = [ctx.const(i) if i else None for i in n.inputs]
    if graphs_of(n) and err is not None:  # If/Loop/Scan fold through their own rules only:
        raise OnnxUnsupportedError(where(str(err)))  # onnx.reference misreads one-node loops
    if any(a is None for a, i in zip(arrays, n.inputs) if i):
        raise OnnxUnsupportedError(where(str(err) if err is not None else
                                         f"{n.describe()}: {n.op_type} is only supported on "
                                         f"constants, not on tensor data"))
    limit = max([FOLD_MAX_BYTES] + [int(a.nbytes) for a in arrays if a is not None])
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
