"""The ``onemodel_modules`` hook of onemodel-ops-nn: every layer class as ``om.nn.<Name>``."""
from __future__ import annotations

from onemodel.registry import ModuleDef, hookimpl


def all_modules() -> tuple[ModuleDef, ...]:
    from .layers import LAYERS

    return tuple(ModuleDef(name=cls.__name__, cls=cls,
                           doc=(cls.__doc__ or "").strip().split("\n")[0])
                 for cls in LAYERS)


@hookimpl
def onemodel_modules():
    return all_modules()
