"""The passes of onemodel-ops-basic, one per file, contributed by the plugin's
``onemodel_passes`` hook: they speak of the basic ops, so they live next to them."""
from __future__ import annotations

from . import fold_transpose_matmul

PASSES = (fold_transpose_matmul.PASS,)
