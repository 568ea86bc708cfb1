"""The core's own passes and fused op, registered like any plugin (as "onemodel-builtin-passes").

Only generic passes live in the core: constant folding, dead code, common subexpressions, no-op
elimination and the elementwise-chain fusion, all driven by what op records declare (purity,
`OpTraits`). Passes that speak of particular ops live in the plugin that owns those ops.
"""
from __future__ import annotations

from ..registry.hookspecs import hookimpl
from . import constant_folding, cse, dead_code, fuse_elementwise, noop_elimination
from .elementwise_chain import elementwise_chain

PLUGIN_NAME = "onemodel-builtin-passes"

PASS_MODULES = (constant_folding, noop_elimination, cse, dead_code, fuse_elementwise)


@hookimpl
def onemodel_passes():
    return tuple(m.PASS for m in PASS_MODULES)


@hookimpl
def onemodel_ops():
    return (elementwise_chain,)
