"""ONNX's NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss imported as ``nll_loss`` (and
``log_softmax``): the same definition as PyTorch's, (N, C, d1...) inputs, class weights,
``ignore_index`` and the three reductions ('mean' divides by the summed weights of the targets
not ignored). ONNX has no ignore_index unless given: the rule then passes one no class index
can equal. Claimed by nll_loss's record (plugin.py)."""
from __future__ import annotations

import numpy as np

_NEVER = int(np.iinfo(np.int64).min)  # no class index is this


def _nll(ctx, node, log_prob, target, weight):
    reduction = node.attr("reduction", "mean")
    if reduction not in ("mean", "sum", "none"):
        ctx.unsupported(f"{node.op_type} reduction {reduction!r}")
    ignore = node.attr("ignore_index")
    return ctx.emit("nll_loss", [log_prob, target, weight or None], reduction=reduction,
                    ignore_index=_NEVER if ignore is None else int(ignore))


def import_nll(ctx, node):
    return [_nll(ctx, node, node.inputs[0], node.inputs[1], node.input(2))]


def import_softmax_cross_entropy(ctx, node):
    scores = node.inputs[0]
    if ctx.rank(scores) < 2:
        ctx.unsupported("SoftmaxCrossEntropyLoss of scores of rank < 2 (N, C, ...)")
    log_prob = ctx.emit("log_softmax", [scores], axis=1)
    return [_nll(ctx, node, log_prob, node.inputs[1], node.input(2)), log_prob]


def export_nll(ctx, node):
    """NegativeLogLikelihoodLoss (opset 13+) of an (N, C, ...) input."""
    types = ctx.input_types(node)
    if len(types[0].shape) < 2:
        ctx.unsupported(node, "nll_loss of a (C,) input (ONNX's takes (N, C, ...))")
    if ctx.opset < 13:
        ctx.unsupported(node, "NegativeLogLikelihoodLoss needs opset 13")
    ins = [ctx.name_of(i) for i in node.inputs]
    while ins and not ins[-1]:
        ins.pop()
    ignore = int(node.params["ignore_index"])
    ctx.make_node("NegativeLogLikelihoodLoss", ins, ctx.outputs(node),
                  reduction=node.params["reduction"], ignore_index=None if ignore == _NEVER
                  else ignore)


IMPORTS = {"NegativeLogLikelihoodLoss": import_nll,
           "SoftmaxCrossEntropyLoss": import_softmax_cross_entropy}
