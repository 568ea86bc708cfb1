"""Entry point of onemodel-ops-basic: the hook returning every basic op record.

Each op's ONNX mapping lives in ``onnx_mapping.py`` (keyed by op name) and is attached here, so
the record handed to the registry carries every capability; PyTorch's names (``torch_names.py``)
likewise.
"""
from __future__ import annotations

import attrs

from onemodel.formats.onnx_api import add_import_rules, attach_onnx
from onemodel.registry import hookimpl

from . import (bitcast, bitwise, control_flow, data_dependent, data_shaped, data_sized, det,
               division, einsum, elementwise, elementwise_math, factory, factory_more, gather_nd, index,
               index_more, linalg, linalg_more, logical, matmul_t, predicates, reduce,
               reduce_more, scan, scatter, scatter_nd, shape, shape_more, sort)
from .passes import PASSES
from .torch_names import TORCH

from .onnx_bitcast import ONNX as _BITCAST_ONNX
from .onnx_bitwise import ONNX as _BITWISE_ONNX
from .onnx_control_flow import ONNX as _CONTROL_FLOW_ONNX
from .onnx_data_sized import SPEC as _DATA_SIZED_ONNX
from .onnx_elementwise_more import ONNX as _ELEMENTWISE_MORE_ONNX
from .onnx_mapping import ONNX as _BASE_ONNX
from .onnx_scatter_nd import ONNX as _SCATTER_ND_ONNX
from .onnx_det import ONNX as _DET_ONNX
from .onnx_reduce_more import SPEC as _REDUCE_MORE_ONNX
from .onnx_reduce_more import SUM_IMPORTS as _SUM_IMPORTS
from .onnx_compositions import RIDERS as _COMPOSITIONS
from .onnx_compositions_more import RIDERS as _COMPOSITIONS_MORE
from .onnx_quantized import IMPORTS as _QUANTIZED_IMPORTS
from .onnx_shape_more import SPEC as _SHAPE_MORE_ONNX
from .onnx_spectral import RIDERS as _SPECTRAL
from .onnx_roi_align import RIDERS as _ROI_ALIGN

ONNX = {**_BASE_ONNX, **_REDUCE_MORE_ONNX, **_SHAPE_MORE_ONNX, **_ELEMENTWISE_MORE_ONNX,
        **_CONTROL_FLOW_ONNX, **_BITWISE_ONNX, **_SCATTER_ND_ONNX, **_DET_ONNX, **_BITCAST_ONNX,
        "sized_from_data": _DATA_SIZED_ONNX}


def _ride(op: str, rules: dict) -> None:
    """Rules that compose several ops ride on the record of the op at their heart."""
    add_import_rules(ONNX, op, rules)


_ride("sum", _SUM_IMPORTS)
_ride("cast", _QUANTIZED_IMPORTS)
for _op, _rules in (*_COMPOSITIONS.items(), *_COMPOSITIONS_MORE.items(), *_SPECTRAL.items(),
                     *_ROI_ALIGN.items()):
    _ride(_op, _rules)


def all_ops():
    ops = (*elementwise.OPS, *linalg.OPS, *shape.OPS, *index.OPS, *reduce.OPS, *factory.OPS,
           *matmul_t.OPS, *gather_nd.OPS, *predicates.OPS, *data_shaped.OPS,
           *elementwise_math.OPS, *division.OPS, *logical.OPS,
           *data_dependent.OPS,
           *reduce_more.OPS, *scan.OPS, *sort.OPS, *shape_more.OPS, *index_more.OPS,
           *factory_more.OPS, *linalg_more.OPS, *scatter.OPS, *einsum.OPS,
           *control_flow.OPS, *bitwise.OPS, *data_sized.OPS,
           *scatter_nd.OPS, *det.OPS, *bitcast.OPS)
    ops = attach_onnx(ops, ONNX, plugin="onemodel-ops-basic")  # an unknown op name raises
    return tuple(attrs.evolve(op, torch=TORCH[op.name]) if op.name in TORCH else op for op in ops)


@hookimpl
def onemodel_ops():
    return all_ops()


@hookimpl
def onemodel_passes():
    return PASSES
