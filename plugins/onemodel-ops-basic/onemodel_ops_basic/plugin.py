"""Entry point of onemodel-ops-basic: the hook returning every basic op record.

Each op's ONNX mapping lives in ``onnx_mapping.py`` (keyed by op name) and is attached here, so
the record handed to the registry carries every capability.
"""
from __future__ import annotations

import attrs

from onemodel.registry import hookimpl

from . import (data_dependent, data_shaped, division, elementwise, elementwise_math, factory,
               gather_nd, index, linalg, logical, matmul_t, predicates, reduce, shape)
from .passes import PASSES

from .onnx_elementwise_more import ONNX as _ELEMENTWISE_MORE_ONNX
from .onnx_mapping import ONNX

ONNX = {**ONNX, **_ELEMENTWISE_MORE_ONNX}


def all_ops():
    ops = (*elementwise.OPS, *linalg.OPS, *shape.OPS, *index.OPS, *reduce.OPS, *factory.OPS,
           *matmul_t.OPS, *gather_nd.OPS, *predicates.OPS, *data_shaped.OPS,
           *elementwise_math.OPS, *division.OPS, *logical.OPS,
           *data_dependent.OPS)
    return tuple(attrs.evolve(op, onnx=ONNX[op.name]) if op.name in ONNX else op for op in ops)


@hookimpl
def onemodel_ops():
    return all_ops()


@hookimpl
def onemodel_passes():
    return PASSES
