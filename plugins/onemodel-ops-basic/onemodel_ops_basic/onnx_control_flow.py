"""ONNX mapping of ``cond``, ``loop`` and ``scan`` (control_flow.py): ``If``, ``Loop``, ``Scan``.

The subgraphs are read and converted by onemodel/formats/onnx_subgraph.py; the rules here
decide what ONNX's semantics say about them: an ``If`` on a condition known at import is its
branch, inlined; the output sizes a loop gives (its trip count) are known where the trip count
is a constant or a size of an input axis and the condition cannot stop it early, else a data
size bound at run time. Export writes each op back as its ONNX node, the subgraphs rebuilt by
onemodel/formats/onnx_subgraph_export.py.
"""
from __future__ import annotations

from onemodel.core import DType, Dim
from onemodel.core.types import TensorType, same_dim
from onemodel.registry import OnnxSpec

I64, BOOL = TensorType(DType.I64, ()), TensorType(DType.BOOL, ())


def _sub():
    from onemodel.formats import onnx_subgraph

    return onnx_subgraph


def _no_sequences(ctx, og, what):
    bad = _sub().sequence_input(og)
    if bad:
        ctx.unsupported(f"{what} input {bad} is not a tensor; OneModel loops carry tensors only "
                        f"(sequence and optional values are not represented)")


def _branch_dims(ctx, graphs) -> tuple:
    """One shape per output: a size both branches agree on, else a data size."""
    sub = _sub()
    per = [sub.output_types(g) for g in graphs]
    dims = []
    for k, ts in enumerate(zip(*per)):
        ranks = {len(t.shape) for t in ts}
        if len(ranks) != 1:
            ctx.unsupported(f"output {k} has rank {len(ts[0].shape)} in then_branch and "
                            f"{len(ts[1].shape)} in else_branch; OneModel needs one rank")
        shapes = [sub.outer_shape(ctx, g, t.shape) for g, t in zip(graphs, ts)]
        dims.append(tuple(a if all(same_dim(a, s[i]) for s in shapes[1:]) else ctx.data_dim()
                          for i, a in enumerate(shapes[0])))
    return tuple(dims)


def _import_if(ctx, node):
    sub = _sub()
    then_g, else_g = node.attr("then_branch"), node.attr("else_branch")
    if then_g is None or else_g is None:
        ctx.unsupported("If needs both then_branch and else_branch")
    c = ctx.const(node.inputs[0])
    if c is not None:  # known at import: the taken branch is the If
        if c.size != 1:
            ctx.unsupported(f"the condition has {c.size} values; If takes one")
        return sub.inline(ctx, then_g if bool(c.reshape(-1)[0]) else else_g)
    graphs, names = [], []
    for og, what in ((then_g, "then_branch"), (else_g, "else_branch")):
        g, cap = sub.import_subgraph(ctx, og, [], what)
        graphs.append(g)
        names += [c for c in cap if c not in names]
    types = [ctx.type(n) for n in names]
    graphs = [sub.with_inputs(g, names, types, 0) for g in graphs]
    if len(graphs[0].outputs) != len(graphs[1].outputs):
        ctx.unsupported(f"then_branch gives {len(graphs[0].outputs)} outputs, else_branch "
                        f"{len(graphs[1].outputs)}")
    out = ctx.emit("cond", [node.inputs[0], *names], then_branch=graphs[0],
                   else_branch=graphs[1], dims=_branch_dims(ctx, graphs))
    return list(out)


def _trip_dim(ctx, node, body, cond_known):
    """The iteration count as a size when the import can prove it, else None."""
    m = node.input(0)
    if cond_known is False:
        return 0
    if not m:
        return None
    sym = ctx.symbolic(m)
    if sym is None or sym.size != 1:
        return None
    trip = sym.reshape(-1)[0]
    if not isinstance(trip, Dim):
        trip = max(int(trip), 0)
        if trip > (1 << 40):
            return None  # "no limit" (tf2onnx writes INT64_MAX beside a condition)
    # the condition never stops it: absent or true at entry, and the body passes it through
    # unchanged or returns a constant true
    if cond_known is None and node.input(1):
        return None
    _, first = body.outputs[0]
    if first == body.inputs[1].name:
        return trip
    arr = body.initializers.get(first)
    if arr is not None and arr.size == 1 and bool(arr.reshape(-1)[0]):
        return trip
    return None


def _import_carrying(ctx, body, head, carried, first_out, what, tail=()):
    """Import a body whose inputs are ``head``, the ``carried`` values' types and ``tail``, and
    whose outputs from ``first_out`` on give the carried values back. A carried axis whose size
    the body changes (a slice to a bound read from data) is made a data size and the body
    imported again, so the value may change that size from one iteration to the next; the
    dtype and rank must stay. Returns the body, its captures and the carried values' types."""
    sub = _sub()
    types = [ctx.type(v) for v in carried]
    for attempt in range(2):
        g, cap = sub.import_subgraph(ctx, body, [*head, *types, *tail], "the body")
        outs = sub.output_types(g)
        if len(outs) < first_out + len(carried):
            ctx.unsupported(f"the body gives {len(outs)} outputs, fewer than its "
                            f"{first_out + len(carried)} (condition and) {what}s")
        changed = False
        for k, (v, want, t) in enumerate(zip(carried, types, outs[first_out:])):
            if t.dtype != want.dtype or len(t.shape) != len(want.shape):
                ctx.unsupported(f"{what} {k} ({v!r}) enters as {want} and leaves the body as "
                                f"{t}; OneModel needs its dtype and rank fixed across "
                                f"iterations")
            if not all(same_dim(a, b) for a, b in zip(t.shape, want.shape)):
                if attempt:
                    ctx.unsupported(f"{what} {k} ({v!r}) enters as {want} and leaves the body "
                                    f"as {t}")
                types[k] = TensorType(want.dtype, tuple(
                    a if same_dim(a, b) else ctx.data_dim() for a, b in zip(want.shape,
                                                                             t.shape)))
                changed = True
        if not changed:
            return g, cap, types
    raise AssertionError("unreachable")


def _import_loop(ctx, node):
    sub = _sub()
    body = node.attr("body")
    if body is None:
        ctx.unsupported("Loop needs a body")
    _no_sequences(ctx, body, "the body's")
    if not node.input(0) and not node.input(1):
        ctx.unsupported("a Loop with neither a trip count nor a condition never ends")
    carried = node.inputs[2:]
    for v in carried:
        if not v:
            ctx.unsupported("an empty loop-carried input")
    n = len(carried)
    g, cap, carried_types = _import_carrying(ctx, body, [I64, BOOL], carried, 1,
                                             "loop-carried value")
    outs = sub.output_types(g)
    c = ctx.const(node.input(1)) if node.input(1) else None
    cond_known = None if c is None else bool(c.reshape(-1)[0])
    trip = _trip_dim(ctx, node, g, cond_known)
    if trip is None:
        trip = ctx.data_dim()
    dims = tuple(tuple(t.shape) for t in carried_types) + tuple(
        (trip,) + sub.outer_shape(ctx, g, t.shape) for t in outs[1 + n:])
    ins = [x for x in node.inputs[:2] if x] + list(carried) + cap
    out = ctx.emit("loop", ins, body=g, n_carried=n, has_trip=bool(node.input(0)),
                   has_cond=bool(node.input(1)), dims=dims)
    return list(out)


def _import_scan(ctx, node):
    sub = _sub()
    if ctx.opset < 9:
        ctx.unsupported("Scan before opset 9 (with a batch axis and sequence_lens)")
    body = node.attr("body")
    _no_sequences(ctx, body, "the body's")
    k = int(node.attr("num_scan_inputs", 0))
    n = len(node.inputs) - k
    if k < 1 or n < 0:
        ctx.unsupported(f"num_scan_inputs {k} does not fit its {len(node.inputs)} inputs")
    states, seqs = node.inputs[:n], node.inputs[n:]
    in_axes = node.attr("scan_input_axes") or [0] * k
    in_dirs = node.attr("scan_input_directions") or [0] * k
    m = len(body.outputs) - n
    out_axes = node.attr("scan_output_axes") or [0] * m
    out_dirs = node.attr("scan_output_directions") or [0] * m
    if len(in_axes) != k or len(in_dirs) != k or len(out_axes) != m or len(out_dirs) != m:
        ctx.unsupported("scan axes or directions do not match the inputs and outputs")
    slices = []
    trip = None
    for v, a in zip(seqs, in_axes):
        shape = list(ctx.type(v).shape)
        if not -len(shape) <= a < len(shape):
            ctx.unsupported(f"scan input axis {a} is out of range for {v!r}")
        steps = shape.pop(a % len(shape))
        trip = steps if trip is None else trip
        slices.append(TensorType(ctx.type(v).dtype, tuple(shape)))
    g, cap, state_types = _import_carrying(ctx, body, [], states, 0, "state", slices)
    outs = sub.output_types(g)
    dims = [tuple(t.shape) for t in state_types]
    for t, a in zip(outs[n:], out_axes):
        shape = list(sub.outer_shape(ctx, g, t.shape))
        if not -len(shape) - 1 <= a <= len(shape):
            ctx.unsupported(f"scan output axis {a} is out of range for rank {len(shape) + 1}")
        shape.insert(a % (len(shape) + 1), trip)
        dims.append(tuple(shape))
    out = ctx.emit("scan", [*states, *seqs, *cap], body=g, n_states=n, n_scan_inputs=k,
                   input_axes=tuple(in_axes), input_directions=tuple(in_dirs),
                   output_axes=tuple(out_axes), output_directions=tuple(out_dirs),
                   dims=tuple(dims))
    return list(out) if isinstance(out, tuple) else [out]


# -- export ------------------------------------------------------------------------------------
def _export_sub():
    from onemodel.formats import onnx_subgraph_export

    return onnx_subgraph_export


def _export_cond(ctx, node):
    ex = _export_sub()
    ins = ctx.inputs(node)
    p = node.params
    then_g = ex.subgraph_proto(ctx, p["then_branch"], ins[1:], 0, "then")
    else_g = ex.subgraph_proto(ctx, p["else_branch"], ins[1:], 0, "else")
    ctx.make_node("If", [ins[0]], ctx.outputs(node), then_branch=then_g, else_branch=else_g)


def _export_loop(ctx, node):
    ex = _export_sub()
    p = node.params
    ins = ctx.inputs(node)
    k = int(p["has_trip"]) + int(p["has_cond"])
    head = ins[:k]
    trip = head[0] if p["has_trip"] else ""
    cond = head[-1] if p["has_cond"] else ""
    n = p["n_carried"]
    body = ex.subgraph_proto(ctx, p["body"], ins[k + n:], 2 + n, "body")
    ctx.make_node("Loop", [trip, cond, *ins[k:k + n]], ctx.outputs(node), body=body)


def _export_scan(ctx, node):
    ex = _export_sub()
    p = node.params
    ins = ctx.inputs(node)
    n, k = p["n_states"], p["n_scan_inputs"]
    body = ex.subgraph_proto(ctx, p["body"], ins[n + k:], n + k, "body")
    ctx.make_node("Scan", ins[:n + k], ctx.outputs(node), body=body, num_scan_inputs=k,
                  scan_input_axes=list(p["input_axes"]),
                  scan_input_directions=list(p["input_directions"]),
                  scan_output_axes=list(p["output_axes"]),
                  scan_output_directions=list(p["output_directions"]))


ONNX = {
    "cond": OnnxSpec(export=_export_cond, imports={"If": _import_if}),
    "loop": OnnxSpec(export=_export_loop, imports={"Loop": _import_loop}),
    "scan": OnnxSpec(export=_export_scan, imports={"Scan": _import_scan}),
}

__all__ = ["ONNX"]
