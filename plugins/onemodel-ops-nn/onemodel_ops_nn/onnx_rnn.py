"""ONNX mappings of lstm and gru (merged into ``onnx_mapping.ONNX``).

ONNX stacks the gates in another order than PyTorch (LSTM: i, o, f, c against PyTorch's i, f, g,
o; GRU: z, r, h against r, z, n), puts every direction of a layer in one node with weights
(D, G*H, ...) and both biases in one (D, 2*G*H) tensor, and returns Y as (seq, D, batch, H).
Export writes one ONNX node per OneModel node (one direction); import turns an ONNX node into one
op per direction and stacks their results as ONNX lays them out. PyTorch's GRU is ONNX's
``linear_before_reset=1``.
"""
from __future__ import annotations

import numpy as np

from onemodel.core import Dim
from onemodel.registry import OnnxSpec

#: position k of ONNX's gate order holds PyTorch's gate ORDER[k]
LSTM_ORDER = (0, 3, 1, 2)   # i, o, f, c  <-  i, f, g, o
GRU_ORDER = (1, 0, 2)       # z, r, h     <-  r, z, n
_DEFAULT_ACTIVATIONS = {"lstm": ("sigmoid", "tanh", "tanh"), "gru": ("sigmoid", "tanh")}


def gate_index(order, hidden: int) -> np.ndarray:
    """Row indices that reorder a stacked (G*H, ...) tensor: row block k <- block order[k]."""
    return np.concatenate([np.arange(g * hidden, (g + 1) * hidden) for g in order]).astype(
        np.int64)


def _inverse(order):
    inv = [0] * len(order)
    for k, g in enumerate(order):
        inv[g] = k
    return tuple(inv)


# -- export -------------------------------------------------------------------------------------
def _reordered(ctx, name, idx, hint):
    """``name``'s rows in ONNX's gate order: folded when it is an initializer, else a Gather."""
    value = ctx.initializer_value(name)
    if value is not None:
        return ctx.add_initializer(np.take(np.asarray(value), idx, axis=0), hint=hint)
    return ctx.make_node("Gather", [name, ctx.ints(idx, hint="gate_order")], name=hint, axis=0)


def _unsqueeze0(ctx, name):
    value = ctx.initializer_value(name)
    if value is not None:
        return ctx.add_initializer(np.asarray(value)[None], hint=name)
    return ctx.make_node("Unsqueeze", [name, ctx.ints([0], hint="axes")], name="unsqueeze")


def _export_rnn(onnx_type, gates, order, states):
    def export(ctx, node):
        out_t = ctx.output_types(node)[0]
        names = []
        for n, t in zip(ctx.inputs(node), ctx.input_types(node)):
            names.append(ctx.cast(n, t.dtype, out_t.dtype) if t is not None else "")
        x, w_ih, w_hh, b_ih, b_hh = names[:5]
        init = names[5:5 + states]
        hidden = ctx.input_types(node)[2].shape[1]
        if isinstance(hidden, Dim):
            ctx.unsupported(node, "a symbolic hidden size")
        hidden = int(hidden)
        idx = gate_index(order, hidden)
        w = _unsqueeze0(ctx, _reordered(ctx, w_ih, idx, "W"))
        r = _unsqueeze0(ctx, _reordered(ctx, w_hh, idx, "R"))
        b = ""
        if b_ih or b_hh:  # ONNX takes both biases in one tensor: zeros for a missing one
            parts = [_reordered(ctx, v or ctx.const(np.zeros(gates * hidden, out_t.dtype.numpy),
                                                    hint="zero_bias"), idx, "B")
                     for v in (b_ih, b_hh)]
            b = _unsqueeze0(ctx, ctx.make_node("Concat", parts, name="B", axis=0))
        ins = [x, w, r, b, ""] + [_unsqueeze0(ctx, s) if s else "" for s in init]
        while not ins[-1]:
            ins.pop()
        outs = [ctx.fresh("Y")] + [ctx.fresh("Y_state") for _ in range(states)]
        attrs = {"hidden_size": hidden,
                 "direction": "reverse" if node.params["reverse"] else "forward"}
        if onnx_type == "GRU":
            attrs["linear_before_reset"] = int(bool(node.params["linear_before_reset"]))
        ctx.make_node(onnx_type, ins, outs, n_outputs=len(outs), **attrs)
        final = ctx.outputs(node)
        ctx.make_node("Squeeze", [outs[0], ctx.ints([1], hint="axes")], [final[0]])
        for o, f in zip(outs[1:], final[1:]):
            ctx.make_node("Squeeze", [o, ctx.ints([0], hint="axes")], [f])
    return export


# -- import -------------------------------------------------------------------------------------
def _check_plain(ctx, node, op):
    """Refuse what the ops do not compute: other activations, clipping, coupled gates."""
    acts = node.attr("activations")
    if acts:
        names = tuple((a.decode() if isinstance(a, bytes) else str(a)).lower() for a in acts)
        default = _DEFAULT_ACTIVATIONS[op]
        if names not in (default, default * 2):
            ctx.unsupported(f"activations {list(names)} (only the default "
                            f"{list(default)} are supported)")
    for a in ("activation_alpha", "activation_beta"):
        if node.attr(a):
            ctx.unsupported(f"attribute {a}")
    if node.attr("clip") is not None:
        ctx.unsupported("cell clipping (clip)")
    if node.attr("input_forget", 0):
        ctx.unsupported("input_forget=1 (coupled input and forget gates)")


def _check_lengths(ctx, node, x_seq):
    """sequence_lens is accepted only when it is a constant equal to the full length."""
    name = node.input(4)
    if not name:
        return
    lens = ctx.const(name)
    if lens is None:
        ctx.unsupported("sequence_lens given at run time (only full-length sequences are "
                        "supported)")
    lens = np.asarray(lens).reshape(-1)
    if isinstance(x_seq, Dim) or lens.size == 0 or not np.all(lens == x_seq):
        ctx.unsupported(f"sequence_lens {lens.tolist()} shorter than the sequence (only "
                        f"full-length sequences are supported)")


def _import_rnn(op, gates, order, states):
    def rule(ctx, node):
        _check_plain(ctx, node, op)
        direction = node.attr("direction", "forward")
        if isinstance(direction, bytes):
            direction = direction.decode()
        if direction not in ("forward", "reverse", "bidirectional"):
            ctx.fail(f"unknown direction {direction!r}")
        dirs = ("forward", "reverse") if direction == "bidirectional" else (direction,)
        layout = node.attr("layout", 0)
        x, w_all, r_all = node.inputs[:3]
        b_all = node.input(3)
        init = [node.input(5 + k) for k in range(states)]
        if op == "lstm" and node.input(7):
            p = ctx.const(node.input(7))
            if p is None or np.any(np.asarray(p) != 0):
                ctx.unsupported("peephole weights P")
        if layout:
            x = ctx.emit("transpose", [x], axis0=0, axis1=1)
            init = [ctx.emit("transpose", [s], axis0=0, axis1=1) if s else s for s in init]
        _check_lengths(ctx, node, ctx.type(x).shape[0])
        hidden = node.attr("hidden_size") or ctx.type(r_all).shape[-1]
        if isinstance(hidden, Dim):
            ctx.unsupported("a symbolic hidden size")
        hidden = int(hidden)
        idx = gate_index(_inverse(order), hidden)
        params = {}
        if op == "gru":
            params["linear_before_reset"] = bool(node.attr("linear_before_reset", 0))
        results = []
        for d, name in enumerate(dirs):
            def row(t, k=d):
                return ctx.emit("take", [t, np.array(k, np.int64)], axis=0)

            w_ih = ctx.emit("take", [row(w_all), idx], axis=0)
            w_hh = ctx.emit("take", [row(r_all), idx], axis=0)
            b_ih = b_hh = None
            if b_all:
                b = row(b_all)
                b_ih = ctx.emit("take", [b, idx], axis=0)
                b_hh = ctx.emit("take", [b, idx + gates * hidden], axis=0)
            st = [row(s) if s else None for s in init]
            results.append(ctx.emit(op, [x, w_ih, w_hh, b_ih, b_hh, *st],
                                    reverse=name == "reverse", **params))
        outs = []
        wanted = list(node.outputs) + [""] * (1 + states - len(node.outputs))
        if wanted[0]:
            ys = [ctx.emit("unsqueeze", [res[0]], axis=1) for res in results]
            y = ys[0] if len(ys) == 1 else ctx.emit("concat", ys, axis=1)
            if layout:  # (seq, D, batch, H) -> (batch, seq, D, H)
                y = ctx.emit("permute", [y], axes=(2, 0, 1, 3))
            outs.append(y)
        else:
            outs.append(None)
        for k in range(states):
            if not wanted[1 + k]:
                outs.append(None)
                continue
            hs = [ctx.emit("unsqueeze", [res[1 + k]], axis=0) for res in results]
            s = hs[0] if len(hs) == 1 else ctx.emit("concat", hs, axis=0)
            if layout:
                s = ctx.emit("transpose", [s], axis0=0, axis1=1)
            outs.append(s)
        return outs
    return rule


ONNX = {
    "lstm": OnnxSpec(export=_export_rnn("LSTM", 4, LSTM_ORDER, 2),
                     imports={"LSTM": _import_rnn("lstm", 4, LSTM_ORDER, 2)}),
    "gru": OnnxSpec(export=_export_rnn("GRU", 3, GRU_ORDER, 1),
                    imports={"GRU": _import_rnn("gru", 3, GRU_ORDER, 1)}),
}
