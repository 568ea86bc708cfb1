"""Tensor methods made from op records (``OpDef.methods`` / ``inplace`` / ``reflected``) and
installed on the Tensor class itself, so ``help(Tensor)``, ``dir(Tensor)``, IDEs and tab
completion see them with real signatures and docstrings.

The registry loads lazily, so the class is brought in line with the registry's tables whenever
someone looks (an attribute the class lacks, ``dir``) and whenever a generated method notices
that the tables changed (a plugin registered or unregistered at run time).
"""
from __future__ import annotations

import threading

from ..registry import REGISTRY
from .dispatch import apply
from .op_signature import docstring, signature

_lock = threading.RLock()
_local = threading.local()
_state = {"tables": None, "generated": frozenset()}


def _stale() -> bool:
    return REGISTRY.tables() is not _state["tables"]


def _make(cls, name: str, kind: str, op):
    from .tensor import _pack_method_args

    if kind == "inplace":
        def method(self, *args, **kwargs):
            if _stale():
                return _again(cls, self, name, args, kwargs)
            return self._inplace(op, args, kwargs, name)
    elif kind == "reflected":
        def method(self, other, **kwargs):
            if _stale():
                return _again(cls, self, name, (other,), kwargs)
            return apply(op, (other, self), kwargs)
    else:
        def method(self, *args, **kwargs):
            if _stale():
                return _again(cls, self, name, args, kwargs)
            return apply(op, (self,) + _pack_method_args(op, args), kwargs)

    method.__name__ = name
    method.__qualname__ = f"{cls.__name__}.{name}"
    method.__module__ = cls.__module__
    method.__doc__ = docstring(op, method=name)
    method.__signature__ = signature(op, bound_first=True)
    method.op = op
    return method


def _again(cls, tensor, name: str, args: tuple, kwargs: dict):
    """A plugin changed since this method was made: call whatever the name means now."""
    sync(cls)
    return getattr(tensor, name)(*args, **kwargs)


def sync(cls) -> None:
    """Install on ``cls`` a method per op method name of the registry (dunders and names the
    class defines by hand excepted), and remove those no plugin provides any more."""
    if getattr(_local, "busy", False):  # a plugin that looks at Tensor while the tables build
        return
    _local.busy = True
    try:
        tables = REGISTRY.tables()
        if tables is _state["tables"]:
            return
        with _lock:
            if tables is _state["tables"]:
                return
            generated = _state["generated"]
            wanted = {}
            for name, (kind, op) in tables.methods.items():
                if name.startswith("_") or (name in cls.__dict__ and name not in generated):
                    continue
                wanted[name] = _make(cls, name, kind, op)
            for name in generated - wanted.keys():
                delattr(cls, name)
            for name, fn in wanted.items():
                setattr(cls, name, fn)
            _state["generated"] = frozenset(wanted)
            _state["tables"] = tables
    finally:
        _local.busy = False


class TensorMeta(type):
    """Looks at the registry before a class attribute is reported missing (``Tensor.reshape``
    before any op ran) and before ``dir(Tensor)`` (``help(Tensor)``)."""

    def __getattr__(cls, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        sync(cls)
        try:
            return cls.__dict__[name]
        except KeyError:
            raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}") from None

    def __dir__(cls):
        sync(cls)
        return super().__dir__()
