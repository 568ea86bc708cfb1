"""Entry point of onemodel-ops-nn: the hook returning every nn op record.

Each op's ONNX mapping lives in ``onnx_mapping.py`` (keyed by op name) and is attached here, so
the record handed to the registry carries every capability; PyTorch's names (``torch_names.py``)
likewise.
"""
from __future__ import annotations

import attrs

from onemodel.formats.onnx_api import add_import_rules, attach_onnx
from onemodel.registry import hookimpl

from . import (activation, activation_more, attention, conv, conv_more, ctc, dropout, embedding,
               fused, grid_sample, hard, linear, losses, losses_more, norm, norm_more, pool,
               pool_more, resize, resize_onnx, rnn, triangle)
from .passes import PASSES
from .torch_names import TORCH

from .onnx_activation_more import ONNX as _ACTIVATION_MORE_ONNX
from .onnx_attention import IMPORTS as _ATTENTION_IMPORTS
from .onnx_causal_conv import IMPORTS as _CAUSAL_CONV_IMPORTS
from .onnx_flex_attention import IMPORTS as _FLEX_ATTENTION_IMPORTS
from .onnx_linear_attention import IMPORTS as _LINEAR_ATTENTION_IMPORTS
from .onnx_rotary import ROTARY_IMPORTS as _ROTARY_IMPORTS
from .onnx_rotary import SWIGLU_IMPORTS as _SWIGLU_IMPORTS
from .onnx_compositions import RIDERS as _COMPOSITIONS
from .onnx_rnn_simple import RIDERS as _RNN_SIMPLE
from .onnx_pool_indices import with_indices as _with_indices
from .onnx_mapping import ONNX as _ONNX
from .onnx_mapping_more import ONNX as _ONNX_MORE
from .onnx_losses import IMPORTS as _LOSS_IMPORTS
from .onnx_losses import export_nll as _export_nll
from .onnx_quantized_conv import IMPORTS as _QUANTIZED_CONV_IMPORTS
from .onnx_resize import ONNX as _RESIZE_ONNX
from .onnx_grid_sample import ONNX as _GRID_SAMPLE_ONNX
from .onnx_upsample import IMPORTS as _UPSAMPLE_IMPORTS
from .onnx_max_unpool import IMPORTS as _MAX_UNPOOL_IMPORTS

ONNX = {**_ONNX, **_ONNX_MORE, **_ACTIVATION_MORE_ONNX, **_RESIZE_ONNX, **_GRID_SAMPLE_ONNX}


def _ride(op: str, rules: dict) -> None:
    """Rules that compose several ops ride on the record of the op at their heart."""
    add_import_rules(ONNX, op, rules)


_ride("conv2d", _QUANTIZED_CONV_IMPORTS)  # ConvInteger, QLinearConv
_ride("scaled_dot_product_attention",  # Attention, RotaryEmbedding, LinearAttention
      {**_ATTENTION_IMPORTS, **_ROTARY_IMPORTS, **_LINEAR_ATTENTION_IMPORTS})
_ride("scaled_dot_product_attention", _FLEX_ATTENTION_IMPORTS)  # ai.onnx.preview FlexAttention
_ride("glu", _SWIGLU_IMPORTS)  # SwiGLU
_ride("conv1d", _CAUSAL_CONV_IMPORTS)  # CausalConvWithState
_ride("nll_loss", _LOSS_IMPORTS)  # NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
_ride("resize", _UPSAMPLE_IMPORTS)  # Upsample (opsets 7-10)
_ride("max_pool2d", _MAX_UNPOOL_IMPORTS)  # MaxUnpool (full, scatter, reshape)
ONNX["nll_loss"] = attrs.evolve(ONNX["nll_loss"], export=_export_nll)
for _op, _rules in (*_COMPOSITIONS.items(), *_RNN_SIMPLE.items()):  # LpPool, LRN, RNN
    _ride(_op, _rules)
# MaxPool's Indices output: the pool rule, wrapped
add_import_rules(ONNX, "max_pool2d", {"MaxPool": _with_indices(ONNX["max_pool2d"].imports["MaxPool"])},
                 replace=True)


def all_ops():
    ops = (*linear.OPS, *conv.OPS, *pool.OPS, *norm.OPS, *activation.OPS, *dropout.OPS,
           *embedding.OPS, *attention.OPS, *losses.OPS, *ctc.OPS, *hard.OPS, *fused.OPS,
           *rnn.OPS, *triangle.OPS, *activation_more.OPS, *losses_more.OPS, *conv_more.OPS,
           *pool_more.OPS, *norm_more.OPS, *resize.OPS, *resize_onnx.OPS,
           *grid_sample.OPS)
    ops = attach_onnx(ops, ONNX, plugin="onemodel-ops-nn")  # an unknown op name raises
    return tuple(attrs.evolve(op, torch=TORCH[op.name]) if op.name in TORCH else op for op in ops)


@hookimpl
def onemodel_ops():
    return all_ops()


@hookimpl
def onemodel_passes():
    return PASSES


from .module_hooks import onemodel_modules  # noqa: E402,F401  (layers for om.nn)
