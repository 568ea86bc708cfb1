"""Entry point of onemodel-ops-nn: the hook returning every nn op record.

Each op's ONNX mapping lives in ``onnx_mapping.py`` (keyed by op name) and is attached here, so
the record handed to the registry carries every capability; PyTorch's names (``torch_names.py``)
likewise.
"""
from __future__ import annotations

import attrs

from onemodel.registry import hookimpl

from . import (activation, activation_more, attention, conv, conv_more, ctc, dropout, embedding,
               fused, hard, linear, losses, losses_more, norm, norm_more, pool, pool_more, resize,
               rnn, triangle)
from .passes import PASSES
from .torch_names import TORCH

from .onnx_activation_more import ONNX as _ACTIVATION_MORE_ONNX
from .onnx_mapping import ONNX as _ONNX
from .onnx_mapping_more import ONNX as _ONNX_MORE

ONNX = {**_ONNX, **_ONNX_MORE, **_ACTIVATION_MORE_ONNX}


def all_ops():
    ops = (*linear.OPS, *conv.OPS, *pool.OPS, *norm.OPS, *activation.OPS, *dropout.OPS,
           *embedding.OPS, *attention.OPS, *losses.OPS, *ctc.OPS, *hard.OPS, *fused.OPS,
           *rnn.OPS, *triangle.OPS, *activation_more.OPS, *losses_more.OPS, *conv_more.OPS,
           *pool_more.OPS, *norm_more.OPS, *resize.OPS)
    ops = (attrs.evolve(op, onnx=ONNX[op.name]) if op.name in ONNX else op for op in ops)
    return tuple(attrs.evolve(op, torch=TORCH[op.name]) if op.name in TORCH else op for op in ops)


@hookimpl
def onemodel_ops():
    return all_ops()


@hookimpl
def onemodel_passes():
    return PASSES


from .module_hooks import onemodel_modules  # noqa: E402,F401  (layers for om.nn)
