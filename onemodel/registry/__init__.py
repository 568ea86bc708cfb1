"""Plugin registry: ops, kernels, backends, passes and layers contributed by installed packages.

Packages register through the entry-point group ``onemodel``; ``register(plugin)`` adds one at run
time. Records are validated once, when the tables are first needed.
"""
from __future__ import annotations

from ..errors import OneModelError, PluginError
from .hookspecs import hookimpl, hookspec
from .manager import DISABLE_ENV, ENTRY_POINT_GROUP, REGISTRY, PluginInfo
from .records import (REQUIRED, BackendDef, KernelDef, ModuleDef, OnnxSpec, OpCost, OpDef,
                      OpTraits, Param, PassDef, Pointwise, Sample, VjpContext)


def register(plugin: object, name: str | None = None) -> str:
    """Add a plugin object (anything with ``@hookimpl`` functions) at run time."""
    return REGISTRY.register(plugin, name)


def unregister(plugin_or_name: object) -> None:
    """Remove a plugin added with `register` (tests use this in ``finally``)."""
    REGISTRY.unregister(plugin_or_name)


def ops() -> dict[str, OpDef]:
    """Every available op by name."""
    return dict(REGISTRY.tables().ops)


def get_op(name: str) -> OpDef:
    """The op called ``name``, or an error saying why it is unavailable and what is close."""
    tables = REGISTRY.tables()
    op = tables.ops.get(name)
    if op is not None:
        return op
    if name in tables.withdrawn:
        raise tables.withdrawn[name]
    import difflib

    close = difflib.get_close_matches(name, tables.ops, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownOpError(f"no installed plugin provides op {name!r}{hint}")


def kernels() -> dict[tuple[str, str], KernelDef]:
    """Backend kernels keyed by (backend, op)."""
    return dict(REGISTRY.tables().kernels)


def backends() -> dict[str, BackendDef]:
    return dict(REGISTRY.tables().backends)


def passes() -> dict[str, PassDef]:
    return dict(REGISTRY.tables().passes)


def modules() -> dict[str, ModuleDef]:
    return dict(REGISTRY.tables().modules)


def plugins() -> list[PluginInfo]:
    """Every plugin seen: distribution, version, contributions and load errors."""
    return REGISTRY.plugins()


def errors() -> list[PluginError]:
    """Errors from loading plugins (import failures, hooks that raised, malformed records)."""
    REGISTRY.tables()
    return REGISTRY.errors()


class UnknownOpError(OneModelError, AttributeError):
    """No installed plugin provides the op."""


__all__ = ["hookimpl", "hookspec", "register", "unregister", "ops", "get_op", "kernels",
           "backends", "passes", "modules", "plugins", "errors", "OpDef", "Param", "Sample",
           "VjpContext", "OnnxSpec", "KernelDef", "BackendDef", "PassDef", "ModuleDef",
           "OpTraits", "Pointwise", "OpCost",
           "REQUIRED", "ENTRY_POINT_GROUP", "DISABLE_ENV", "UnknownOpError", "PluginError"]
