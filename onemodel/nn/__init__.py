"""``om.nn``: `NnModule`, `Parameter`, initialisers, and every layer contributed by a plugin.

The core knows no concrete layer: ``om.nn.Linear`` and friends are `ModuleDef` records returned
by plugins from the ``onemodel_modules`` hook, resolved here by name on first use.
"""
from __future__ import annotations

import difflib

from ..registry import REGISTRY
from . import functional, init, utils
from .module import IncompatibleKeys, NnModule, StateDictError
from .parameter import Parameter

# the layers are not listed: they come from the plugins, through __getattr__
__all__ = ["NnModule", "Parameter", "StateDictError", "IncompatibleKeys", "init", "functional", "utils"]
_CORE = list(__all__)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    modules = REGISTRY.tables().modules
    rec = modules.get(name)
    if rec is not None:
        return rec.cls
    close = difflib.get_close_matches(name, list(modules) + _CORE, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    clash = REGISTRY.tables().clash("modules", name)
    if clash is not None:
        hint = f": {clash}"
    if not modules:
        hint += " (no installed plugin contributes layers: install onemodel-ops-nn)"
    raise AttributeError(f"module 'onemodel.nn' has no layer or attribute {name!r}{hint}")


def __dir__():
    return sorted(set(_CORE) | {"module", "parameter"} | set(REGISTRY.tables().modules))

