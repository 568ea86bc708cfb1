"""References for cond / loop / scan: ONNX's semantics written out over the reference
interpreter (`run_graph`), apart from the kernels' own loops. The inputs come as one list (the
ops are variadic)."""
import numpy as np

from onemodel.core.interpreter import run_graph


def _run(g, args):
    outs = run_graph(g, {v.name: np.asarray(a) for v, a in zip(g.inputs, args)})
    return [outs[o] for o, _ in g.outputs]


def _cond(xs, then_branch, else_branch, dims):
    pred, captured = xs[0], xs[1:]
    return tuple(_run(then_branch if np.asarray(pred).item() else else_branch, captured))


def _loop(xs, body, n_carried, has_trip, has_cond, dims):
    xs = list(xs)
    trip = int(xs.pop(0)) if has_trip else None
    keep_going = bool(xs.pop(0)) if has_cond else True
    carried, captured = xs[:n_carried], xs[n_carried:]
    per_step = []
    step = 0
    while keep_going and (trip is None or step < trip):
        outs = _run(body, [np.int64(step), np.bool_(keep_going)] + carried + captured)
        keep_going = bool(outs[0])
        carried = outs[1:1 + n_carried]
        per_step.append(outs[1 + n_carried:])
        step += 1
    scans = [np.array([s[k] for s in per_step]) for k in range(len(body.outputs) - 1 - n_carried)]
    return tuple(carried + scans)


def _scan(xs, body, n_states, n_scan_inputs, input_axes, input_directions, output_axes,
          output_directions, dims):
    states = list(xs[:n_states])
    seqs = xs[n_states:n_states + n_scan_inputs]
    captured = list(xs[n_states + n_scan_inputs:])
    n = np.shape(seqs[0])[input_axes[0]]
    per_step = []
    for t in range(n):
        slices = []
        for x, a, d in zip(seqs, input_axes, input_directions):
            idx = [slice(None)] * np.ndim(x)
            idx[a] = n - 1 - t if d else t
            slices.append(np.asarray(x)[tuple(idx)])
        outs = _run(body, states + slices + captured)
        states = outs[:n_states]
        per_step.append(outs[n_states:])
    results = []
    for k, (a, d) in enumerate(zip(output_axes, output_directions)):
        seq = [s[k] for s in per_step]
        if d:
            seq = seq[::-1]
        results.append(np.stack(seq, axis=a % (np.ndim(seq[0]) + 1)))
    return tuple(states + results)


REFERENCES = {"cond": _cond, "loop": _loop, "scan": _scan}
