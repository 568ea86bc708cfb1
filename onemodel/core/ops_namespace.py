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
        REGISTRY.on_change(self._forget)

    def __getattr__(self, name: str) -> OpFunction:
        """Resolve ``name`` once and keep it as a plain attribute (a module ``__getattr__`` costs
        more than a small op's kernel); `_forget` drops them when plugins change."""
        if name.startswith("__"):
            raise AttributeError(name)
        fn = self._cache.get(name)
        if fn is None:
            fn = self._cache[name] = OpFunction(get_op(name))
            self.__dict__[name] = fn
        return fn

    def _forget(self) -> None:
        for name in list(self._cache):
            self.__dict__.pop(name, None)
        self._cache.clear()

    def __dir__(self):
        return sorted(REGISTRY.tables().ops)


ops = OpsNamespace()
