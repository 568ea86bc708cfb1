"""Entry point of onemodel-backend-numpy: the "numpy" backend and its specialised kernels.

The backend itself is the core's plan compiler (`onemodel.core.plan.PlanBackend`): one generated
Python function per shape signature over preassigned buffers. This package supplies the kernels
that make that fast (``out=`` ufuncs, pre-packed weights, views for reshapes); every other op
runs its own eager kernel.
"""
from __future__ import annotations

from onemodel.core.plan import PlanBackend
from onemodel.registry import BackendDef, hookimpl

from . import chain, elementwise, nn, special


def create(**options) -> PlanBackend:
    unknown = set(options) - set(PlanBackend.options)
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; the numpy backend takes "
                        f"{', '.join(PlanBackend.options)}")
    return PlanBackend("numpy", **options)


@hookimpl
def onemodel_backends():
    return (BackendDef(name="numpy", create=create,
                       auto_rank=0,  # auto's last resort: it runs every graph
                       doc="Numpy on the calling thread: one generated function per shape "
                           "signature, buffers reused by liveness; threads=1 by default "
                           "(BLAS bounded to threads inside each run)."),)


@hookimpl
def onemodel_kernels():
    return (*elementwise.KERNELS, *nn.KERNELS, *special.KERNELS, *chain.KERNELS)
