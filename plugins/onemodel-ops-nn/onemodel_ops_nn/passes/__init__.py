"""The passes of onemodel-ops-nn, one per file: they speak of the nn ops (and the basic ops a
traced model spells them with), so they live here, next to those ops, and are contributed by the
plugin's ``onemodel_passes`` hook like any third party's."""
from __future__ import annotations

from . import (fold_batch_norm, fuse_activation, fuse_matmul_add, recognize_attention,
               recognize_gelu, recognize_layer_norm)

PASSES = tuple(m.PASS for m in (fuse_matmul_add, fold_batch_norm, fuse_activation,
                                recognize_gelu, recognize_layer_norm, recognize_attention))
