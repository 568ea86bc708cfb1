"""Batch norm (eval) folded into the preceding conv2d / linear.

``batch_norm(conv2d(x, W, b), mean, var, gamma, beta, training=False)`` with constant
statistics becomes ``conv2d(x, W * s, (b - mean) * s + beta)`` with ``s = gamma / sqrt(var +
eps)`` (per output channel); the same for ``linear`` on (N, C) features. The conv/linear output
must have no other user. Training-mode batch norm, or statistics fed at run time, stay as they
are.
"""
from __future__ import annotations

import numpy as np

from onemodel.passes.patterns import P, PatternMatcher
from onemodel.registry import PassDef

FOLDABLE = P("batch_norm", [P(("conv2d", "linear"), [P.var("x"), P.const("w")], name="base",
                              private=True), P.const("mean"), P.const("var")],
             params={"training": lambda v: not v})


def _optional_const(m, node, i):
    """(array or None, ok): input ``i`` of ``node`` absent, or a constant."""
    name = node.inputs[i] if len(node.inputs) > i else None
    if name is None:
        return None, True
    arr = m.rw.const(name)
    return arr, arr is not None


def _fold(m):
    base, bn = m.nodes["base"], m.root
    W = m.const("w")
    rank = len(m.rw.type(base.outputs[0]).shape)
    if W.dtype.kind != "f" or (base.op == "linear" and rank != 2):
        return None
    channels = W.shape[0]
    (B, ok_b), (gamma, ok_g), (beta, ok_be) = (_optional_const(m, base, 2),
                                               _optional_const(m, bn, 3),
                                               _optional_const(m, bn, 4))
    mean, var = m.const("mean"), m.const("var")
    if not (ok_b and ok_g and ok_be) or mean.size != channels or var.size != channels:
        return None
    dt = np.float64
    gamma = np.ones(channels, dt) if gamma is None else gamma.astype(dt).reshape(channels)
    beta = np.zeros(channels, dt) if beta is None else beta.astype(dt).reshape(channels)
    scale = gamma / np.sqrt(var.astype(dt).reshape(channels) + float(bn.params.get("eps", 1e-5)))
    shift = beta - mean.astype(dt).reshape(channels) * scale
    W2 = (W.astype(dt) * scale.reshape((-1,) + (1,) * (W.ndim - 1))).astype(W.dtype)
    B2 = ((np.zeros(channels) if B is None else B.astype(dt)) * scale + shift).astype(W.dtype)
    bias_name = base.inputs[2] if len(base.inputs) > 2 else None
    w = m.rw.add_const(W2, f"{m['w']}_bn")
    b = m.rw.add_const(B2, f"{bias_name or m['w']}_bn_bias")
    return m.node(base.op, [m["x"], w, b], **dict(base.params))


FOLD = PatternMatcher([(FOLDABLE, _fold)])

PASS = PassDef(name="fold_batch_norm", level="all", run=FOLD.rewrite, order=20,
               doc="Fold eval-mode batch_norm with constant statistics into conv2d/linear.")
