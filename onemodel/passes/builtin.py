"""The built-in passes and fused ops, registered like any plugin (as "onemodel-builtin-passes").

The registry registers this module when it loads; a test may call the hooks directly.
"""
from __future__ import annotations

from ..registry.hookspecs import hookimpl
from . import (constant_folding, cse, dead_code, fold_batch_norm, fold_transpose_matmul,
               fuse_activation, fuse_elementwise, fuse_matmul_add, noop_elimination,
               recognize_attention, recognize_gelu, recognize_layer_norm)
from .fused_ops import FUSED_OPS

PLUGIN_NAME = "onemodel-builtin-passes"

PASS_MODULES = (constant_folding, noop_elimination, cse, dead_code, fuse_matmul_add,
                fold_batch_norm, fuse_activation, fold_transpose_matmul, fuse_elementwise,
                recognize_gelu, recognize_layer_norm, recognize_attention)


@hookimpl
def onemodel_passes():
    return tuple(m.PASS for m in PASS_MODULES)


@hookimpl
def onemodel_ops():
    return FUSED_OPS
