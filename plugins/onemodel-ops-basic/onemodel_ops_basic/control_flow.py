"""Control flow: ``cond`` (ONNX ``If``), ``loop`` (``Loop``) and ``scan`` (``Scan``).

Each holds its branches or body as `Graph` params (see onemodel/core/subgraphs.py). A subgraph
is closed: the values it reads from the enclosing graph are its last inputs, fed by the node's
last inputs, so outer passes see ordinary edges. The kernels run a subgraph through the
reference interpreter (every op's own kernel), so every backend runs these ops correctly
(the compiled one through its fallback path); only the taken branch of ``cond`` runs.

The output shapes are the ``dims`` param, decided at import: a size the import cannot know
(branches of different sizes, a loop that stops on a condition computed from data) is a *data
size*, bound from the result at run time (onemodel/core/dynamic_plan.py).

Traces do not make these ops (a trace records no Python control flow); ONNX import does.
"""
from __future__ import annotations

import numpy as np

from onemodel.core.graph import Graph
from onemodel.core.subgraphs import run_subgraph
from onemodel.registry import OpDef, Param, Sample

from ._common import Dim, DType, OpError, TensorType


# -- shared checks ---------------------------------------------------------------------------
def _graph(g, op: str, what: str, n_inputs: int) -> Graph:
    if not isinstance(g, Graph):
        raise OpError(f"ops.{op}: {what} must be a Graph, got {type(g).__name__}")
    if len(g.inputs) != n_inputs:
        raise OpError(f"ops.{op}: {what} takes {len(g.inputs)} inputs, the node gives "
                      f"{n_inputs}")
    return g


def _check_dims(dims, op: str, n: int) -> tuple:
    if not isinstance(dims, tuple) or len(dims) != n or not all(isinstance(s, tuple)
                                                                 for s in dims):
        raise OpError(f"ops.{op}: dims must be a tuple of {n} shapes (one per output)")
    for s in dims:
        for v in s:
            if isinstance(v, bool) or not isinstance(v, (int, Dim)):
                raise OpError(f"ops.{op}: dims holds {v!r}, not a size")
    return dims


def _out_types(op: str, dtypes, dims) -> tuple:
    return tuple(TensorType(dt, s) for dt, s in zip(dtypes, dims))


def _scalar(x, op: str, what: str):
    a = np.asarray(x)
    if a.size != 1:
        raise OpError(f"ops.{op}: {what} must hold one value, got shape {list(a.shape)}")
    return a.reshape(-1)[0]


def _empty(dtype: DType, shape) -> np.ndarray:
    """Zero iterations' stacked output: unknown sizes (data sizes) are 0."""
    return np.zeros(tuple(0 if d is None or isinstance(d, Dim) else int(d) for d in shape),
                    dtype=dtype.numpy)


def _results(outs, dims) -> tuple:
    """Contiguous results, checked against the sizes ``dims`` states (None: a data size)."""
    res = []
    for k, (a, want) in enumerate(zip(outs, dims)):
        a = np.require(np.asarray(a), requirements="C")  # (ascontiguousarray makes 0-d 1-d)
        if len(a.shape) != len(want) or any(
                w is not None and not isinstance(w, Dim) and int(w) != n
                for w, n in zip(want, a.shape)):
            raise OpError(f"output {k} has shape {list(a.shape)}, but dims declares "
                          f"{[str(w) for w in want]}")
        res.append(a)
    return tuple(res)


# -- cond ------------------------------------------------------------------------------------
def _cond_infer(pred, *captured, then_branch, else_branch, dims):
    t = _graph(then_branch, "cond", "then_branch", len(captured))
    e = _graph(else_branch, "cond", "else_branch", len(captured))
    if pred is None or pred.dtype != DType.BOOL:
        raise OpError(f"ops.cond: the condition must be a bool tensor, got "
                      f"{pred.dtype if pred is not None else None}")
    if len(t.outputs) != len(e.outputs):
        raise OpError(f"ops.cond: the branches give {len(t.outputs)} and {len(e.outputs)} "
                      f"outputs")
    dtypes = []
    for k, ((_, a), (_, b)) in enumerate(zip(t.outputs, e.outputs)):
        da, db = t.values[a].dtype, e.values[b].dtype
        if da != db:
            raise OpError(f"ops.cond: output {k} is {da} in then_branch but {db} in "
                          f"else_branch")
        dtypes.append(da)
    dims = _check_dims(dims, "cond", len(dtypes))
    return _out_types("cond", dtypes, dims)


def _cond(pred, *captured, then_branch, else_branch, dims):
    taken = then_branch if bool(_scalar(pred, "cond", "the condition")) else else_branch
    return _results(run_subgraph(taken, captured), dims)


# -- loop ------------------------------------------------------------------------------------
def _loop_split(xs, n_carried, has_trip, has_cond):
    k = int(has_trip) + int(has_cond)
    trip = xs[0] if has_trip else None
    cond = xs[int(has_trip)] if has_cond else None
    return trip, cond, list(xs[k:k + n_carried]), list(xs[k + n_carried:])


def _loop_infer(*xs, body, n_carried, has_trip, has_cond, dims):
    trip, cond, carried, captured = _loop_split(xs, n_carried, has_trip, has_cond)
    if len(carried) != n_carried:
        raise OpError(f"ops.loop: n_carried is {n_carried}, but only {len(carried)} values "
                      f"follow the trip count and condition")
    g = _graph(body, "loop", "body", 2 + n_carried + len(captured))
    if trip is not None and (not trip.dtype.is_int or len(trip.shape) > 1):
        raise OpError(f"ops.loop: the trip count must be an integer scalar, got {trip}")
    if cond is not None and cond.dtype != DType.BOOL:
        raise OpError(f"ops.loop: the condition must be a bool scalar, got {cond}")
    outs = [g.values[v].type for _, v in g.outputs]
    if len(outs) < 1 + n_carried:
        raise OpError(f"ops.loop: the body gives {len(outs)} outputs; it must give the "
                      f"condition and {n_carried} loop-carried values")
    for k, (x, o) in enumerate(zip(carried, outs[1:1 + n_carried])):
        if x.dtype != o.dtype:
            raise OpError(f"ops.loop: loop-carried value {k} enters as {x.dtype} and leaves "
                          f"the body as {o.dtype}")
    dims = _check_dims(dims, "loop", len(outs) - 1)
    return _out_types("loop", [o.dtype for o in outs[1:]], dims)


def _loop(*xs, body, n_carried, has_trip, has_cond, dims):
    trip, cond, carried, captured = _loop_split(xs, n_carried, has_trip, has_cond)
    limit = None if trip is None else int(_scalar(trip, "loop", "the trip count"))
    go = True if cond is None else bool(_scalar(cond, "loop", "the condition"))
    out_types = [body.values[v].type for _, v in body.outputs]
    scans: list[list] = [[] for _ in out_types[1 + n_carried:]]
    i = 0
    while go and (limit is None or i < limit):
        outs = run_subgraph(body, [np.array(i, np.int64), np.array(go), *carried, *captured])
        go = bool(_scalar(outs[0], "loop", "the body's condition"))
        carried = outs[1:1 + n_carried]
        for acc, a in zip(scans, outs[1 + n_carried:]):
            acc.append(a)
        i += 1
    stacked = [np.stack(acc) if acc else _empty(t.dtype, (0,) + tuple(d[1:]))
               for acc, t, d in zip(scans, out_types[1 + n_carried:], dims[n_carried:])]
    return _results([*carried, *stacked], dims)


# -- scan ------------------------------------------------------------------------------------
def _axis(a: int, n: int, what: str) -> int:
    if not -n <= a < n:
        raise OpError(f"ops.scan: {what} axis {a} is out of range for rank {n}")
    return a % n


def _scan_parts(xs, n_states, n_scan_inputs):
    return (list(xs[:n_states]), list(xs[n_states:n_states + n_scan_inputs]),
            list(xs[n_states + n_scan_inputs:]))


def _scan_infer(*xs, body, n_states, n_scan_inputs, input_axes, input_directions, output_axes,
                output_directions, dims):
    states, seqs, captured = _scan_parts(xs, n_states, n_scan_inputs)
    if len(seqs) != n_scan_inputs or n_scan_inputs < 1:
        raise OpError(f"ops.scan: needs {n_states} states and {n_scan_inputs} (at least one) "
                      f"scan inputs, got {len(xs)} inputs")
    g = _graph(body, "scan", "body", len(xs))
    outs = [g.values[v].type for _, v in g.outputs]
    if len(outs) < n_states:
        raise OpError(f"ops.scan: the body gives {len(outs)} outputs, fewer than its "
                      f"{n_states} states")
    for what, seq, n in (("input_axes", input_axes, n_scan_inputs),
                         ("input_directions", input_directions, n_scan_inputs),
                         ("output_axes", output_axes, len(outs) - n_states),
                         ("output_directions", output_directions, len(outs) - n_states)):
        if not isinstance(seq, tuple) or len(seq) != n:
            raise OpError(f"ops.scan: {what} must be a tuple of {n} ints, got {seq!r}")
    for d in input_directions + output_directions:
        if d not in (0, 1):
            raise OpError(f"ops.scan: a direction is 0 (forward) or 1 (reverse), got {d}")
    for x, a in zip(seqs, input_axes):
        _axis(a, len(x.shape), "an input")
    dims = _check_dims(dims, "scan", len(outs))
    return _out_types("scan", [o.dtype for o in outs], dims)


def _scan(*xs, body, n_states, n_scan_inputs, input_axes, input_directions, output_axes,
          output_directions, dims):
    states, seqs, captured = _scan_parts(xs, n_states, n_scan_inputs)
    steps = []
    for x, a, d in zip(seqs, input_axes, input_directions):
        s = np.moveaxis(np.asarray(x), _axis(a, np.ndim(x), "an input"), 0)
        steps.append(s[::-1] if d else s)
    n = steps[0].shape[0]
    if any(s.shape[0] != n for s in steps):
        raise OpError(f"ops.scan: the scan inputs have {[s.shape[0] for s in steps]} steps; "
                      f"they must agree")
    out_types = [body.values[v].type for _, v in body.outputs][n_states:]
    accs: list[list] = [[] for _ in out_types]
    for t in range(n):
        outs = run_subgraph(body, [*states, *(s[t] for s in steps), *captured])
        states = outs[:n_states]
        for acc, a in zip(accs, outs[n_states:]):
            acc.append(a)
    stacked = []
    for acc, t, _d, axis, direction in zip(accs, out_types, dims[n_states:], output_axes,
                                          output_directions):
        a = np.stack(acc) if acc else _empty(t.dtype, (0,) + tuple(t.shape))
        if direction:
            a = a[::-1]
        stacked.append(np.moveaxis(a, 0, _axis(axis, a.ndim, "an output")))
    return _results([*states, *stacked], dims)


# -- samples: small graphs built by hand ---------------------------------------------------------
def _body(inputs, nodes, outputs) -> Graph:
    """A subgraph from (name, dtype, shape) inputs, (op, ins, (name, dtype, shape)..., params)
    nodes and output value names."""
    from onemodel.core.graph import GraphBuilder

    b = GraphBuilder()
    for name, dt, shape in inputs:
        b.add_input(name, TensorType(dt, shape))
    for op, ins, outs, params in nodes:
        b.add_node(op, ins, [TensorType(dt, s) for _, dt, s in outs], params,
                   names=[n for n, _, _ in outs])
    return b.finish([(f"out{k}", v) for k, v in enumerate(outputs)])


F, B, I = DType.F32, DType.BOOL, DType.I64


def _cond_samples(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal((4,)).astype(np.float32)
    then = _body([("x", F, (3, 4)), ("y", F, (4,))],
                 [("add", ["x", "y"], [("s", F, (3, 4))], {})], ["s"])
    other = _body([("x", F, (3, 4)), ("y", F, (4,))],
                  [("mul", ["x", "y"], [("p", F, (3, 4))], {})], ["p"])
    params = {"then_branch": then, "else_branch": other, "dims": ((3, 4),)}
    yield Sample(args=([np.array(True), x, y],), params=params, grad=False, name="then")
    yield Sample(args=([np.array(False), x, y],), params=params, grad=False, name="else")


def _loop_samples(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((3,)).astype(np.float32)
    # carried h <- h * w + i, scan output: h; the condition stays true
    body = _body([("i", I, ()), ("c", B, ()), ("h", F, (2, 3)), ("w", F, (3,))],
                 [("mul", ["h", "w"], [("hw", F, (2, 3))], {}),
                  ("add", ["hw", "i"], [("h2", F, (2, 3))], {})],
                 ["c", "h2", "h2"])
    params = {"body": body, "n_carried": 1, "has_trip": True, "has_cond": True,
              "dims": ((2, 3), (4, 2, 3))}
    yield Sample(args=([np.array(4, np.int64), np.array(True), x, w],), params=params,
                 grad=False, name="trip_count")


def _scan_samples(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    s0 = np.zeros((3,), np.float32)
    body = _body([("s", F, (3,)), ("xt", F, (3,))],
                 [("add", ["s", "xt"], [("s2", F, (3,))], {})], ["s2", "s2"])
    base = {"body": body, "n_states": 1, "n_scan_inputs": 1}
    yield Sample(args=([s0, x],), params={**base, "input_axes": (1,), "input_directions": (0,),
                                           "output_axes": (0,), "output_directions": (0,),
                                           "dims": ((3,), (5, 3))},
                 grad=False, name="cumulative")
    yield Sample(args=([s0, x],), params={**base, "input_axes": (-1,), "input_directions": (1,),
                                           "output_axes": (1,), "output_directions": (1,),
                                           "dims": ((3,), (3, 5))},
                 grad=False, name="reversed")


_DIMS = Param(kind="any", doc="one shape per output: sizes known at import, data sizes "
                              "(bound at run time) elsewhere")

cond = OpDef(
    name="cond", inputs=("x*",),
    params={"then_branch": Param(kind="any", doc="the Graph run when the condition holds"),
            "else_branch": Param(kind="any", doc="the Graph run otherwise"),
            "dims": _DIMS},
    kernel=_cond, infer=_cond_infer, vjp=None, samples=_cond_samples,
    doc="ONNX If: inputs are the condition, then the values both branches read; runs only "
        "the taken branch (a Graph param).",
)

loop = OpDef(
    name="loop", inputs=("x*",),
    params={"body": Param(kind="any", doc="the Graph run per iteration: (iteration, condition, "
                                          "carried..., captured...) -> (condition, carried..., "
                                          "scan outputs...)"),
            "n_carried": Param(kind="int", doc="how many loop-carried values"),
            "has_trip": Param(kind="bool", doc="the first input is the trip count"),
            "has_cond": Param(kind="bool", doc="an input (after the trip count) is the initial "
                                               "condition"),
            "dims": _DIMS},
    kernel=_loop, infer=_loop_infer, vjp=None, samples=_loop_samples,
    doc="ONNX Loop: [trip count] [condition] carried... captured...; gives the final carried "
        "values and each scan output stacked over the iterations.",
)

scan = OpDef(
    name="scan", inputs=("x*",),
    params={"body": Param(kind="any", doc="the Graph run per step: (states..., slices..., "
                                          "captured...) -> (states..., outputs...)"),
            "n_states": Param(kind="int"), "n_scan_inputs": Param(kind="int"),
            "input_axes": Param(kind="any"), "input_directions": Param(kind="any"),
            "output_axes": Param(kind="any"), "output_directions": Param(kind="any"),
            "dims": _DIMS},
    kernel=_scan, infer=_scan_infer, vjp=None, samples=_scan_samples,
    doc="ONNX Scan (opset 9+): states..., scan inputs..., captured...; gives the final states "
        "and each output stacked along its axis.",
)

OPS = (cond, loop, scan)
