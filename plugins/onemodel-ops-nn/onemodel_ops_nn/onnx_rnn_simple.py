"""ONNX's simple RNN, ``H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb)``, imported as its formula
unrolled over the time steps (a fixed sequence length): one matmul pair, add and activation per
step and direction, stacked as ONNX lays Y and Y_h out. Activations Tanh, Relu and Sigmoid;
``clip`` bounds the activation's input."""
from __future__ import annotations

import numpy as np

from onemodel.core import Dim

from .onnx_rnn import _check_lengths

_ACTIVATIONS = {"tanh": "tanh", "relu": "relu", "sigmoid": "sigmoid"}


def _activations(ctx, node, n_dirs):
    acts = node.attr("activations")
    if node.attr("activation_alpha") or node.attr("activation_beta"):
        ctx.unsupported("RNN activation_alpha / activation_beta")
    names = [(a.decode() if isinstance(a, bytes) else str(a)).lower()
             for a in (acts or ["Tanh"] * n_dirs)]
    if len(names) != n_dirs or any(a not in _ACTIVATIONS for a in names):
        ctx.unsupported(f"RNN activations {names} (one of Tanh, Relu, Sigmoid per direction)")
    return [_ACTIVATIONS[a] for a in names]


def _step_inputs(ctx, x, steps):
    return [ctx.emit("take", [x, np.array(t, np.int64)], axis=0) for t in range(steps)]


def _direction(ctx, xs, w, r, bias, h, reverse, act, clip):
    """(Y of shape (seq, batch, H), the last H) of one direction."""
    ys = [None] * len(xs)
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for t in order:
        z = ctx.emit("einsum", [xs[t], w], equation="bi,hi->bh")
        if h is not None:
            z = ctx.emit("add", [z, ctx.emit("einsum", [h, r], equation="bj,hj->bh")])
        if bias is not None:
            z = ctx.emit("add", [z, bias])
        if clip is not None:
            z = ctx.emit("clip", [z], min=-clip, max=clip)
        h = ctx.emit(act, [z])
        ys[t] = h
    return ctx.emit("stack", ys, axis=0), h


def import_rnn(ctx, node):
    direction = node.attr("direction", "forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    if direction not in ("forward", "reverse", "bidirectional"):
        ctx.unsupported(f"RNN direction {direction!r}")
    dirs = ("forward", "reverse") if direction == "bidirectional" else (direction,)
    acts = _activations(ctx, node, len(dirs))
    clip = node.attr("clip")
    clip = None if clip is None else float(clip)
    layout = node.attr("layout", 0)
    x, w_all, r_all = node.inputs[:3]
    b_all, h0 = node.input(3), node.input(5)
    if not ctx.type(x).dtype.is_float:
        ctx.unsupported(f"RNN of a {ctx.type(x).dtype.name.lower()} input (floats)")
    if layout:
        x = ctx.emit("transpose", [x], axis0=0, axis1=1)
        h0 = ctx.emit("transpose", [h0], axis0=0, axis1=1) if h0 else h0
    steps = ctx.type(x).shape[0]
    if isinstance(steps, Dim):
        ctx.unsupported(f"RNN over the symbolic sequence length {steps} (it is unrolled)")
    _check_lengths(ctx, node, steps)
    hidden = int(ctx.type(r_all).shape[-1])
    xs = _step_inputs(ctx, x, int(steps))
    results = []
    for d, name in enumerate(dirs):
        def row(t, k=d):
            return ctx.emit("take", [t, np.array(k, np.int64)], axis=0)

        bias = None
        if b_all:
            b = row(b_all)
            bias = ctx.emit("add", [ctx.emit("narrow", [b], axis=0, start=0, length=hidden),
                                    ctx.emit("narrow", [b], axis=0, start=hidden,
                                             length=hidden)])
        results.append(_direction(ctx, xs, row(w_all), row(r_all), bias,
                                  row(h0) if h0 else None, name == "reverse", acts[d], clip))
    wanted = list(node.outputs) + [""] * (2 - len(node.outputs))
    outs = [None, None]
    if wanted[0]:
        y = ctx.emit("stack", [res[0] for res in results], axis=1)  # (seq, D, batch, H)
        outs[0] = ctx.emit("permute", [y], axes=(2, 0, 1, 3)) if layout else y
    if wanted[1]:
        s = ctx.emit("stack", [res[1] for res in results], axis=0)  # (D, batch, H)
        outs[1] = ctx.emit("transpose", [s], axis0=0, axis1=1) if layout else s
    return outs


#: op name -> the ONNX op types its record also claims
RIDERS = {"gru": {"RNN": import_rnn}}
