"""More ONNX op types imported as a few standard ops: ReverseSequence (a gather along the time
axis with each batch entry's first ``sequence_lens`` positions reversed) and TensorScatter (a
KV-cache write: a scatter along the sequence axis at each batch entry's write index). plugin.py
attaches each to the record of the op at its heart."""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.core.symbolic import Dim


def import_reverse_sequence(ctx, node):
    """out[b, t] = x[b, lens[b] - 1 - t] for t < lens[b], else x[b, t] (batch and time axes
    as the attributes say): the reversed positions as an index tensor, then ``gather``."""
    x, lens = node.inputs[0], node.inputs[1]
    shape = ctx.type(x).shape
    rank = len(shape)
    b_axis, t_axis = int(node.attr("batch_axis", 1)), int(node.attr("time_axis", 0))
    if rank < 2 or {b_axis, t_axis} != {0, 1}:
        ctx.unsupported(f"ReverseSequence with batch_axis={b_axis}, time_axis={t_axis} on a "
                        f"rank-{rank} input (axes 0 and 1)")
    n_t = shape[t_axis]
    if isinstance(n_t, Dim):
        ctx.unsupported(f"ReverseSequence over the symbolic time axis {n_t}")
    where_t = [1] * rank
    where_t[t_axis] = n_t
    iota = np.arange(n_t, dtype=np.int64).reshape(where_t)
    where_b = [1] * rank
    where_b[b_axis] = shape[b_axis]
    n = lens if ctx.type(lens).dtype == DType.I64 else ctx.emit("cast", [lens], dtype=DType.I64)
    n = ctx.emit("reshape", [n], shape=tuple(where_b))
    flipped = ctx.emit("sub", [ctx.emit("sub", [n, np.array(1, np.int64)]), iota])
    idx = ctx.emit("where", [ctx.emit("less", [iota, n]), flipped, iota])
    idx = ctx.emit("expand", [idx], shape=tuple(shape))
    return [ctx.emit("gather", [x, idx], axis=t_axis)]


def import_tensor_scatter(ctx, node):
    """present[b, ..., (w[b] + s) (mod the cache length, mode circular), ...] = update[b, ..., s,
    ...]: the positions as an index tensor of the update's shape, then ``scatter``."""
    past, update = node.inputs[0], node.inputs[1]
    write = node.input(2)
    shape, ushape = ctx.type(past).shape, ctx.type(update).shape
    rank = len(shape)
    axis = int(node.attr("axis", -2))
    mode = node.attr("mode", "linear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("linear", "circular"):
        ctx.unsupported(f"TensorScatter mode {mode!r}")
    if not -rank <= axis < rank or axis % rank == 0 or len(ushape) != rank:
        ctx.unsupported(f"TensorScatter axis {axis} of a rank-{rank} cache (the batch axis 0 "
                        f"comes first)")
    axis %= rank
    u, m = ushape[axis], shape[axis]
    if isinstance(u, Dim) or (mode == "circular" and isinstance(m, Dim)):
        ctx.unsupported(f"TensorScatter of a symbolic sequence length ({u} into {m})")
    where_s = [1] * rank
    where_s[axis] = u
    pos = np.arange(u, dtype=np.int64).reshape(where_s)
    if write:
        w = write if ctx.type(write).dtype == DType.I64 else \
            ctx.emit("cast", [write], dtype=DType.I64)
        where_b = [1] * rank
        where_b[0] = shape[0]
        pos = ctx.emit("add", [ctx.emit("reshape", [w], shape=tuple(where_b)), pos])
    if mode == "circular":
        pos = ctx.emit("remainder", [pos, np.array(m, np.int64)])
    idx = ctx.emit("expand", [pos], shape=tuple(ushape))
    return [ctx.emit("scatter", [past, idx, update], axis=axis)]


#: op name -> the ONNX op types its record also claims
RIDERS = {
    "gather": {"ReverseSequence": import_reverse_sequence},
    "scatter": {"TensorScatter": import_tensor_scatter},
}
