"""``om.ops``: every op of every installed plugin, resolved by name from the registry."""
from __future__ import annotations

import types

from ..registry import REGISTRY, get_op
from .dispatch import apply
from .op_signature import docstring, signature


class OpFunction:
    """The callable behind ``om.ops.<name>``, with the record's signature and docstring (so
    ``help``, ``inspect.signature`` and IDEs see them). ``__get__`` makes it a routine to pydoc
    and lets it serve as a method when put on a class."""

    __slots__ = ("name", "op", "__dict__")

    def __init__(self, op):
        self.name = op.name
        self.op = op
        self.__name__ = self.__qualname__ = op.name
        self.__module__ = "onemodel.ops"
        self.__doc__ = docstring(op)
        self.__signature__ = signature(op)

    def __call__(self, *args, **kwargs):
        return apply(self.op, args, kwargs)

    def __get__(self, instance, owner=None):
        return self if instance is None else types.MethodType(self, instance)

    def __repr__(self) -> str:
        return f"<op {self.name}{self.__signature__} from {self.op.provider}>"


class OpsNamespace(types.ModuleType):
    def __init__(self):
        super().__init__("onemodel.ops", "Every op contributed by an installed plugin.")
        self._cache: dict[str, OpFunction] = {}
        self._tables = None

    def __getattr__(self, name: str) -> OpFunction:
        if name.startswith("__"):
            raise AttributeError(name)
        tables = REGISTRY.tables()
        if tables is not self._tables:
            self._cache.clear()
            self._tables = tables
        fn = self._cache.get(name)
        if fn is None:
            fn = self._cache[name] = OpFunction(get_op(name))
        return fn

    def __dir__(self):
        return sorted(REGISTRY.tables().ops)


ops = OpsNamespace()
