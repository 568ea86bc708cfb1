"""A `Lowering` as JSON and arrays, and back: what the plan cache stores per shape signature.

Generic on purpose: every attribute of the lowering is stored (minus the inputs it was made
from, rebuilt from the session, and bookkeeping used only while lowering), value by value, so a
field added to the lowering needs no change here. Values may be JSON scalars, tuples, lists,
dicts, sets, numpy arrays and scalars, slices, dtypes, the graph's nodes (stored by position),
the graph's constants (by name), kernels of the registry (by op), and instances of this
plugin's own classes (`Loc`, `NativeSegment`, `PyStep`, `Arena`: their fields). Anything else
raises `NotCacheable` and the plan is simply not cached. Decoding creates no object but
those, and imports nothing.
"""
from __future__ import annotations

import sys
from types import MappingProxyType

import attrs
import numpy as np

from onemodel.core.dtype import DType
from onemodel.core.symbolic import evaluate
from onemodel.core.types import TensorType

from .lower import Lowering

PACKAGE = __name__.rpartition(".")[0]
#: rebuilt from the session (graph, weights, registry) or only used while lowering
SKIP = frozenset({"graph", "weights", "ops", "rules", "numpy_kernels", "types", "consts",
                  "current", "uses", "last_use", "alloc_refs", "alloc_span", "temps", "accs",
                  "absorbed", "fused", "_next_alloc", "direct_ok"})


class NotCacheable(Exception):
    """The lowering holds a value the codec cannot store: the plan is not cached."""


class BadEntry(Exception):
    """A stored body that does not decode (a corrupt or foreign entry)."""


def _kernel_names(graph, ops, numpy_kernels) -> dict:
    names: dict = {}
    for op in sorted({n.op for n in graph.nodes}):
        kdef = numpy_kernels.get(op)
        if kdef is not None and kdef.kernel is not None:
            names.setdefault(id(kdef.kernel), ["numpy", op])
        opdef = ops.get(op)
        if opdef is not None and getattr(opdef, "kernel", None) is not None:
            names.setdefault(id(opdef.kernel), ["op", op])
    return names


class _Encoder:
    def __init__(self, graph, ops, numpy_kernels) -> None:
        self.arrays: list[np.ndarray] = []
        self._array_ids: dict = {}
        self._inits = {id(a): k for k, a in graph.initializers.items()}
        self._nodes = {id(n): i for i, n in enumerate(graph.nodes)}
        self._kernels = _kernel_names(graph, ops, numpy_kernels)
        self._keep: list = []  # arrays made here stay alive while their ids are memo keys

    def __call__(self, v):
        if v is None or isinstance(v, (bool, str)):
            return v
        t = type(v)
        if t is int or t is float:
            return v
        if t is tuple:
            return {"T": [self(x) for x in v]}
        if t is list:
            return {"L": [self(x) for x in v]}
        if t is dict:
            return {"D": [[self(k), self(x)] for k, x in v.items()]}
        if t is set or t is frozenset:
            return {"S" if t is set else "F": [self(x) for x in sorted(v, key=repr)]}
        if isinstance(v, np.ndarray):
            return self._array(v)
        if isinstance(v, np.generic):
            if v.dtype.str not in _SCALARS:
                raise NotCacheable(f"numpy scalar of dtype {v.dtype}")
            return {"N": [v.dtype.str, v.item()]}
        if isinstance(v, np.dtype):
            return {"DT": v.str}
        if isinstance(v, DType):
            return {"OD": v.name}
        if t is slice:
            return {"SL": [self(v.start), self(v.stop), self(v.step)]}
        if v is Ellipsis:
            return {"E": 0}
        if id(v) in self._nodes:  # ids are unique among live objects: this is the node
            return {"NODE": self._nodes[id(v)]}
        if id(v) in self._kernels:
            return {"K": self._kernels[id(v)]}
        if t.__module__.startswith(PACKAGE + ".") and "." not in t.__qualname__:
            if attrs.has(t):
                fields = {f.name: getattr(v, f.name) for f in attrs.fields(t)}
            elif hasattr(v, "__dict__") and not callable(v):
                fields = dict(vars(v))
            else:
                raise NotCacheable(f"an instance of {t.__qualname__}")
            return {"O": [t.__module__, t.__qualname__,
                          [[k, self(x)] for k, x in fields.items()]]}
        raise NotCacheable(f"a value of type {t.__module__}.{t.__qualname__}")

    def _array(self, a: np.ndarray):
        name = self._inits.get(id(a))
        if name is not None:
            return {"INIT": name}
        index = self._array_ids.get(id(a))
        if index is None:
            if a.dtype.str not in _SCALARS:
                raise NotCacheable(f"an array of dtype {a.dtype}")
            index = len(self.arrays)
            self._array_ids[id(a)] = index
            self._keep.append(a)
            self.arrays.append(np.ascontiguousarray(a))
        return {"A": [index, a.flags.writeable]}


_SCALARS = frozenset(np.dtype(t).str for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64))


class _Decoder:
    def __init__(self, arrays, graph, ops, numpy_kernels) -> None:
        self.arrays, self.graph, self.ops, self.numpy_kernels = arrays, graph, ops, numpy_kernels

    def __call__(self, v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if not isinstance(v, dict) or len(v) != 1:
            raise BadEntry(f"unexpected {type(v).__name__} in the body")
        (tag, x), = v.items()
        if tag == "T":
            if isinstance(x, list) and all(type(i) is int for i in x):  # shapes, strides
                return tuple(x)
            return tuple([self(i) for i in _list(x)])
        if tag == "L":
            if isinstance(x, list) and all(type(i) is int for i in x):  # instructions
                return x
            return [self(i) for i in _list(x)]
        if tag == "D":
            return {self(_pair(p)[0]): self(p[1]) for p in _list(x)}
        if tag in ("S", "F"):
            items = [self(i) for i in _list(x)]
            return set(items) if tag == "S" else frozenset(items)
        if tag == "A":
            index, writeable = _pair(x)
            if type(index) is not int or not 0 <= index < len(self.arrays):
                raise BadEntry("array index out of range")
            a = self.arrays[index]
            if not writeable:
                a = a.view()
                a.flags.writeable = False
            return a
        if tag == "INIT":
            if x not in self.graph.initializers:
                raise BadEntry(f"no constant {x!r} in the graph")
            return self.graph.initializers[x]
        if tag == "N":
            dt, value = _pair(x)
            if dt not in _SCALARS:
                raise BadEntry("bad scalar dtype")
            return np.dtype(dt).type(value)
        if tag == "DT":
            if x not in _SCALARS:
                raise BadEntry("bad dtype")
            return np.dtype(x)
        if tag == "OD":
            try:
                return DType[x]
            except (KeyError, TypeError):
                raise BadEntry("bad DType") from None
        if tag == "SL":
            return slice(*(self(i) for i in _list(x, 3)))
        if tag == "E":
            return Ellipsis
        if tag == "NODE":
            if type(x) is not int or not 0 <= x < len(self.graph.nodes):
                raise BadEntry("node index out of range")
            return self.graph.nodes[x]
        if tag == "K":
            kind, op = _pair(x)
            table = self.numpy_kernels if kind == "numpy" else self.ops if kind == "op" else {}
            rec = table.get(op)
            fn = getattr(rec, "kernel", None)
            if fn is None:
                raise BadEntry(f"no kernel of {op!r}")
            return fn
        if tag == "O":
            module, qualname, fields = _list(x, 3)
            mod = sys.modules.get(module) if isinstance(module, str) else None
            cls = getattr(mod, qualname, None) if (
                mod is not None and module.startswith(PACKAGE + ".")
                and isinstance(qualname, str) and "." not in qualname) else None
            if not isinstance(cls, type) or cls.__module__ != module:
                raise BadEntry(f"no class {module}.{qualname}")
            obj = object.__new__(cls)
            names = {f.name for f in attrs.fields(cls)} if attrs.has(cls) else None
            for pair in _list(fields):
                k, val = _pair(pair)
                if not isinstance(k, str) or k.startswith("__") or (
                        names is not None and k not in names):
                    raise BadEntry(f"no field {k!r} in {qualname}")
                object.__setattr__(obj, k, self(val))
            if names is not None and len(fields) != len(names):
                raise BadEntry(f"fields of {qualname} missing")
            return obj
        raise BadEntry(f"unknown tag {tag!r}")


def _list(x, n: int | None = None) -> list:
    if not isinstance(x, list) or (n is not None and len(x) != n):
        raise BadEntry("malformed body")
    return x


def _pair(x) -> list:
    return _list(x, 2)


def encode(lw: Lowering) -> tuple[dict, list[np.ndarray]]:
    """``(body, arrays)`` of a lowering; `NotCacheable` when a value cannot be stored."""
    enc = _Encoder(lw.graph, lw.ops, lw.numpy_kernels)
    fields = {k: enc(v) for k, v in vars(lw).items() if k not in SKIP}
    folded = {k: enc(lw.consts[k]) for k in sorted(lw.folded) if k in lw.consts}
    return {"fields": fields, "folded": folded}, enc.arrays


def encode_value(v):
    """One value without arrays, nodes or kernels (the weight block's layout)."""
    return _Encoder(_EMPTY_GRAPH, {}, {})(v)


def decode_value(v):
    return _Decoder([], _EMPTY_GRAPH, {}, {})(v)


class _EMPTY_GRAPH:
    """No graph: for values that refer to none (no nodes, no constants)."""

    initializers = MappingProxyType({})
    nodes = ()


def decode(body, arrays, graph, env, weights, ops, rules, numpy_kernels) -> Lowering:
    """The lowering `encode` stored, bound to this session's graph, weight block and registry
    (`BadEntry` when the body does not decode)."""
    if not isinstance(body, dict) or not isinstance(body.get("fields"), dict) \
            or not isinstance(body.get("folded"), dict):
        raise BadEntry("malformed body")
    dec = _Decoder(arrays, graph, ops, numpy_kernels)
    lw = object.__new__(Lowering)
    lw.graph, lw.env, lw.weights, lw.ops, lw.rules = graph, dict(env), weights, ops, rules
    lw.numpy_kernels = numpy_kernels
    lw.types = {name: TensorType(v.type.dtype, tuple(evaluate(d, env) for d in v.type.shape))
                for name, v in graph.values.items()}
    for k, v in body["fields"].items():
        if k in SKIP or k.startswith("__") or hasattr(Lowering, k):  # data, never a method
            raise BadEntry(f"field {k!r} is not stored")
        setattr(lw, k, dec(v))
    lw.consts = dict(graph.initializers)
    for k, v in body["folded"].items():
        if k not in graph.values:
            raise BadEntry(f"folded value {k!r} is not in the graph")
        lw.consts[k] = dec(v)
    _check(lw)
    return lw


def _check(lw: Lowering) -> None:
    """What native code will trust: every instruction of every program inside the buffers of
    the run it describes (weights, arena, feeds, outputs), every location too (plan_check)."""
    from . import plan_check

    plan_check.check(lw, lw.weights)


__all__ = ["encode", "decode", "encode_value", "decode_value", "NotCacheable", "BadEntry"]
