"""The hooks a OneModel plugin may implement. Each returns a sequence of records."""
from __future__ import annotations

from typing import Sequence

import pluggy

from .records import BackendDef, KernelDef, ModuleDef, OpDef, PassDef

hookspec = pluggy.HookspecMarker("onemodel")
hookimpl = pluggy.HookimplMarker("onemodel")


@hookspec
def onemodel_ops() -> Sequence[OpDef]:
    """Operators this package defines."""
    return ()  # a specification: pluggy calls the plugins' implementations


@hookspec
def onemodel_kernels() -> Sequence[KernelDef]:
    """Backend-specific kernels for ops defined anywhere."""
    return ()  # a specification: pluggy calls the plugins' implementations


@hookspec
def onemodel_backends() -> Sequence[BackendDef]:
    """Execution backends."""
    return ()  # a specification: pluggy calls the plugins' implementations


@hookspec
def onemodel_passes() -> Sequence[PassDef]:
    """Graph passes."""
    return ()  # a specification: pluggy calls the plugins' implementations


@hookspec
def onemodel_modules() -> Sequence[ModuleDef]:
    """Layer classes for ``om.nn``."""
    return ()  # a specification: pluggy calls the plugins' implementations
