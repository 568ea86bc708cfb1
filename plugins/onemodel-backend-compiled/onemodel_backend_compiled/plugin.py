"""Entry point of onemodel-backend-compiled: the "compiled" backend and its native lowerings."""
from __future__ import annotations

from onemodel.registry import BackendDef, hookimpl

from .backend import create
from .lowerings import kernel_defs
from .platform import platform


@hookimpl
def onemodel_backends():
    return (BackendDef(name="compiled", create=create,
                       # auto prefers it: any op without a lowering runs on numpy in the plan
                       auto_rank=100, platform=platform,
                       doc="Native packed kernels (GEMM/GEMV with fused epilogues, conv, "
                           "attention, layer norm, pointwise loops) run by one C call per "
                           "shape signature; ops without a lowering run on numpy between."),)


@hookimpl
def onemodel_kernels():
    return kernel_defs()
