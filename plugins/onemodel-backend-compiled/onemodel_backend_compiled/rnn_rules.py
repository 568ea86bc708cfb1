"""lstm and gru (one direction of one layer; om.nn.LSTM / GRU and the ONNX imports stack layers
and directions out of them) as native code: the input projection of every step as one packed
GEMM into scratch, then one I_LSTM / I_GRU instruction running the steps (csrc/om_rnn.h: per
step the recurrent GEMM over the packed W_hh^T and the gate arithmetic). An LSTM whose batch
fills 16 lanes (`fused_rnn`; a GRU too, in either reset form) runs as the I_LSTM / I_GRU
alone: the batch in the lanes, the input projection and the cell inside each step's tiles,
over [W_hh | W_ih] packed by hidden unit. A batch-first layer reads its input where it lies
(`sequence_src`: the step and row strides of the transposed view), and (when its output's only
reader swaps steps and batch back) the step writes the rows in that layout
(`batch_first_dest`).

Biases are folded where the formula allows: an LSTM's b_ih + b_hh and a GRU's (without
``linear_before_reset``) both go into the projection's bias; a GRU with it keeps b_hh on the
recurrent GEMM, since r scales ``W_hn h + b_hn``. Weights fed at run time (training, or a weight
that is a graph input) raise `Unsupported`: the node runs its numpy kernel, and the plan's
profile says why.
"""
from __future__ import annotations

import numpy as np

from . import program as P
from .lower import Loc, Lowering
from .pointwise import Unsupported
from .traits import permutation_of



def fused_rnn(gates: int, batch: int, hidden: int, linear_before_reset: bool) -> bool:
    """Whether a layer runs fused (csrc/om_rnn.h lstm_fused / gru_fused: the batch in 16 lanes,
    the input projection and the cell inside the step's tiles): an LSTM whose hidden size is a
    multiple of 4, a GRU with linear_before_reset and an even one, a GRU without it (ONNX's
    default: gru_fused's two-pass form) and one a multiple of 4, when at least 7/8 of the
    groups' lanes hold a batch row. A group of 16 costs about what the projection GEMM and the
    6x16 recurrent GEMM cost at batch 13-14 (LSTM(64, 128), 32 steps: fused 1.37 ms for any
    batch up to 16; unfused 0.29 ms at batch 2, 1.05 at 8, 1.45 at 14, 1.8 at 16, 4.9 at 30,
    where two fused groups take 2.7)."""
    shape_ok = hidden % (2 if gates == 3 and linear_before_reset else 4) == 0
    return shape_ok and batch >= 14 * -(-batch // 16)


def _weight(lw: Lowering, value, rows: int, cols: int | None, what: str):
    """A float32 constant of ``(rows, cols)`` (``(rows,)`` without cols), or None for an
    absent input."""
    if value is None:
        return None
    if value not in lw.consts:
        raise Unsupported(f"{what} is computed at run time (only constant weights run "
                          f"natively)")
    arr = np.asarray(lw.consts[value])
    shape = (rows,) if cols is None else (rows, cols)
    if arr.dtype != np.float32 or arr.shape != shape:
        raise Unsupported(f"{what}: {arr.dtype} {arr.shape}, not float32 {shape}")
    return arr


def _rule(gates: int):
    def rule(lw: Lowering, node, params):
        ins = (list(node.inputs) + [None] * 7)[:7]
        x, w_ih, w_hh, b_ih, b_hh, h0 = ins[:6]
        c0 = ins[6] if gates == 4 else None
        if not lw.is_f32(x) or any(s is not None and not lw.is_f32(s) for s in (h0, c0)):
            raise Unsupported("dtype")
        steps, batch, size = lw.shape(x)
        h = lw.shape(node.outputs[1])[1]
        gh = gates * h
        W_ih = _weight(lw, w_ih, gh, size, "w_ih")
        W_hh = _weight(lw, w_hh, gh, h, "w_hh")
        B_ih = _weight(lw, b_ih, gh, None, "b_ih")
        B_hh = _weight(lw, b_hh, gh, None, "b_hh")
        lbr = gates == 3 and bool(params.get("linear_before_reset", True))
        key = lw.const_key
        fused = fused_rnn(gates, batch, h, lbr)
        if fused:
            w, w2, rec_bias = _fused(lw, key, (w_ih, w_hh, b_ih, b_hh),
                                     (W_ih, W_hh, B_ih, B_hh), gates, h, size, lbr)
            loc, pre_step, pre_row = sequence_src(lw, x)
            src = loc.addr
        else:
            src, w, w2, rec_bias, pre_step, pre_row = _projection_and_panels(
                lw, key, (w_ih, w_hh, b_ih, b_hh), (W_ih, W_hh, B_ih, B_hh), x, gh, h, lbr)
        states = [lw.contiguous(s).addr if s is not None else -1 for s in (h0, c0)]
        y = batch_first_dest(lw, node.outputs[0]) or lw.dest(node.outputs[0])
        y_step, y_row = y.strides[0], y.strides[1]
        finals = [lw.dest(o) for o in node.outputs[1:]]
        panels = 3 if gates == 4 else 2 if lbr else 5  # h^T rows of om_rnn.h's fused scratch
        scratch = lw.scratch(16 * (panels * h + 2 * size) if fused
                             else batch * (gates + 2) * h)
        flags = (1 if params.get("reverse", False) else 0) | (2 if lbr else 0) | (4 if fused else 0)
        lw.emit(P.instruction(P.I_LSTM if gates == 4 else P.I_GRU, steps, batch, h, src,
                              P.addr(P.WEIGHTS, w), w2, rec_bias, *states, y.addr,
                              y_step, y_row, finals[0].addr,
                              finals[1].addr if gates == 4 else -1, flags, scratch.addr,
                              size, pre_step, pre_row))
        lw.bind(node.outputs[0], y)
        for o, loc in zip(node.outputs[1:], finals):
            lw.bind(o, loc)
    return rule


def batch_first_dest(lw: Lowering, value: str) -> Loc | None:
    """Memory for a layer's output sequence (steps, batch, H) laid out (batch, steps, H) when
    its only reader swaps the two axes back (om.nn.LSTM / GRU with ``batch_first``): the step
    writes each row at its place (the instruction's y_step / y_row strides), the reader is a
    view, and the caller's array takes the rows directly where it may. The copy of the
    transposed output after the run was 6.5 % of LSTM(64, 128) b16. None otherwise."""
    users = lw.uses.get(value, [])
    if len(users) != 1 or value in lw.wanted:
        return None
    reader = lw.nodes[users[0]]
    if permutation_of(lw, reader, 3) != (1, 0, 2):
        return None
    steps, batch, h = (int(d) for d in lw.shape(value))
    out = reader.outputs[0]
    loc = lw.dest(out) if out in lw.direct_ok else lw.new_alloc(max(1, steps * batch * h), value)
    return loc.with_view((steps, batch, h), (h, steps * h, 1))


def sequence_src(lw: Lowering, x: str) -> tuple[Loc, int, int]:
    """The input sequence (steps, batch, I) as ``(loc, step stride, row stride)``, read where
    it lies when its rows are unit-stride (a batch-first layer's input is the transpose of the
    caller's (batch, steps, I) array: strides (I, steps * I, 1)); a copy otherwise. The copy
    was about 2 % of LSTM(64, 128) b16's time."""
    loc = lw.loc(x)
    if (loc.strides[2] == 1 or loc.shape[2] == 1) and min(loc.strides) >= 0:
        return loc, int(loc.strides[0]), int(loc.strides[1])
    c = lw.contiguous(loc)
    return c, int(c.strides[0]), int(c.strides[1])


def _fused(lw: Lowering, key, values, arrays, gates: int, h: int, size: int, lbr: bool):
    """A fused layer's operands (csrc/om_rnn.h lstm_fused / gru_fused): the weights by unit and
    the biases by unit (the input x is read as it lies, `sequence_src`). LSTM: w[j][k][i, f,
    g, o] over k in [W_hh | W_ih], bias (H, 4) b_ih + b_hh. GRU with linear_before_reset:
    per pair of units, the H rows of W_hh then the I rows of W_ih, each (r, z, n of j, then
    of j + 1); without it: per pair, the H rows of (r, z of j, then of j + 1), the I rows as
    with it, then W_hn per four units (H rows of n of j .. j + 3). bias (H, 4): b_ir + b_hr,
    b_iz + b_hz, b_in, b_hn."""
    w_ih, w_hh, b_ih, b_hh = values
    W_ih, W_hh, B_ih, B_hh = arrays
    k = h + size

    def pairs(W, gates_: int, cols: int):  # [g][j][k] -> [pair][k][unit of the pair][g]
        return W.reshape(gates_, h // 2, 2, cols).transpose(1, 3, 2, 0).reshape(h // 2, -1)

    if gates == 4:
        packed = np.concatenate([W_hh, W_ih], axis=1).reshape(4, h, k).transpose(1, 2, 0)
    elif lbr:
        packed = np.concatenate([pairs(W_hh, 3, h), pairs(W_ih, 3, size)], axis=1)
    else:  # r gates h before W_hn: r, z first, n of four units on r h after
        fours = W_hh[2 * h:].reshape(h // 4, 4, h).transpose(0, 2, 1)
        packed = np.concatenate([np.concatenate([pairs(W_hh[:2 * h], 2, h),
                                                 pairs(W_ih, 3, size)], axis=1).ravel(),
                                 fours.ravel()])
    form = "" if gates == 4 or lbr else " reset first"
    w = lw.weights.plain((f"rnn{gates}{form} weights by unit", key(w_hh), key(w_ih)),
                         np.ascontiguousarray(packed))
    bias = -1
    if B_ih is not None or B_hh is not None:
        zero = np.zeros(gates * h, np.float32)
        bi = (B_ih if B_ih is not None else zero).reshape(gates, h)
        bh = (B_hh if B_hh is not None else zero).reshape(gates, h)
        by_gate = bi + bh if gates == 4 else np.stack([bi[0] + bh[0], bi[1] + bh[1], bi[2],
                                                       bh[2]])
        bias = P.addr(P.WEIGHTS, lw.weights.plain(
            (f"rnn{gates} biases by unit", *(key(b) for b in (b_ih, b_hh) if b is not None)),
            np.ascontiguousarray(by_gate.T)))
    return w, -1, bias


def _projection_and_panels(lw: Lowering, key, values, arrays, x, gh: int, h: int, lbr: bool):
    """The input projection of every step as one packed GEMM into scratch (emitted here), the
    recurrent weight panels, and the projection's step and row strides: a batch-first input
    (`sequence_src`'s strides (I', steps * I', 1)) is projected as the caller's (batch * steps)
    rows, so its projection lies batch first too."""
    w_ih, w_hh, b_ih, b_hh = values
    W_ih, W_hh, B_ih, B_hh = arrays
    gates = gh // h
    # the projection's bias: b_ih, plus b_hh where it is not on the recurrent GEMM
    parts = [(b, B) for j, (b, B) in enumerate(((b_ih, B_ih), (b_hh, B_hh)))
             if B is not None and not (lbr and j == 1)]
    bias_off = -1
    if parts:
        total = parts[0][1] if len(parts) == 1 else parts[0][1] + parts[1][1]
        bias_off = P.addr(P.WEIGHTS, lw.weights.plain(
            ("rnn projection bias", *(key(b) for b, _ in parts)), total))
    rec_bias = -1
    if lbr and B_hh is not None:
        rec_bias = P.addr(P.WEIGHTS, lw.weights.plain(key(b_hh), B_hh))
    loc, x_step, x_row = sequence_src(lw, x)
    steps, batch, size = loc.shape
    if steps > 1 and batch > 1 and x_row == steps * x_step and x_step >= size:
        xl, m, k, lda = lw.matrix(loc.with_view((batch * steps, size), (x_step, 1)))
        pre_step, pre_row = gh, steps * gh
    else:
        xl, m, k, lda = lw.matrix(loc)
        pre_step, pre_row = batch * gh, gh
    pre = lw.scratch(steps * batch * gh)
    w_in = lw.weights.panels((key(w_ih), "^T"), lambda: W_ih.T)
    lw.emit(P.instruction(P.I_GEMM, xl.addr, lda, m, k, gh, P.addr(P.WEIGHTS, w_in),
                          bias_off, 1 if parts else 0, -1, gh, pre.addr, gh,
                          P.ACTIVATIONS[None]))
    if gates == 3 and not lbr:  # r and z from h, n from r * h: two panel sets
        w = lw.weights.panels((key(w_hh), "rz^T"), lambda: W_hh[:2 * h].T)
        w2 = P.addr(P.WEIGHTS, lw.weights.panels((key(w_hh), "n^T"),
                                                 lambda: W_hh[2 * h:].T))
    else:
        w = lw.weights.panels((key(w_hh), "^T"), lambda: W_hh.T)
        w2 = -1
    return pre.addr, w, w2, rec_bias, pre_step, pre_row


RNN_RULES = {"lstm": _rule(4), "gru": _rule(3)}

__all__ = ["RNN_RULES", "fused_rnn", "batch_first_dest", "sequence_src"]
