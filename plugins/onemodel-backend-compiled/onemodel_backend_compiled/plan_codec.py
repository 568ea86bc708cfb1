"""A lowered `Program` as JSON and arrays, and back: what the plan cache stores per shape
signature.

Generic on purpose: a program is frozen attrs records (`lowered.CLASSES`) stored field by field,
so a field added to one of them needs no change here. Values may be JSON scalars, tuples, lists,
dicts (and read-only mappings), sets, numpy arrays and scalars, slices, dtypes, the graph's nodes
(stored by position), the graph's constants (by name), kernels of the registry (by op), and the
records of `lowered.CLASSES` (by class name and fields). Anything else raises `NotCacheable` and
the plan is simply not cached. Decoding builds a record by calling its class with exactly its
fields, creates no other object, and imports nothing; the program it gives is then checked
(plan_check) before anything runs it.
"""
from __future__ import annotations

from types import MappingProxyType

import attrs
import numpy as np

from onemodel.core.dtype import DType

from .lowered import CLASSES, Program


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
        if t is dict or t is MappingProxyType:
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
        if CLASSES.get(t.__name__) is t:
            return {"O": [t.__name__, {f.name: self(getattr(v, f.name))
                                       for f in attrs.fields(t)}]}
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
            name, fields = _pair(x)
            cls = CLASSES.get(name) if isinstance(name, str) else None
            if cls is None or not isinstance(fields, dict):
                raise BadEntry(f"no record {name!r}")
            names = {f.name for f in attrs.fields(cls)}
            if set(fields) != names:
                raise BadEntry(f"fields of {name} {sorted(set(fields) ^ names)} missing or "
                               f"unknown")
            return cls(**{k: self(val) for k, val in fields.items()})
        raise BadEntry(f"unknown tag {tag!r}")


def _list(x, n: int | None = None) -> list:
    if not isinstance(x, list) or (n is not None and len(x) != n):
        raise BadEntry("malformed body")
    return x


def _pair(x) -> list:
    return _list(x, 2)


def encode(program: Program, graph, ops, numpy_kernels) -> tuple[dict, list[np.ndarray]]:
    """``(body, arrays)`` of a program lowered from ``graph``; `NotCacheable` when a value
    cannot be stored."""
    if type(program) is not Program:
        raise NotCacheable(f"a {type(program).__name__}, not a Program")
    enc = _Encoder(graph, ops, numpy_kernels)
    return {"program": enc(program)}, enc.arrays


def encode_value(v):
    """One value without arrays, nodes or kernels (the weight block's layout)."""
    return _Encoder(_EMPTY_GRAPH, {}, {})(v)


def decode_value(v):
    return _Decoder([], _EMPTY_GRAPH, {}, {})(v)


class _EMPTY_GRAPH:
    """No graph: for values that refer to none (no nodes, no constants)."""

    initializers = MappingProxyType({})
    nodes = ()


def decode(body, arrays, graph, env, weights, ops, numpy_kernels) -> Program:
    """The program `encode` stored, its nodes, constants and kernels those of this session's
    graph and registry, checked (plan_check) against the run it describes: ``env``'s shapes and
    ``weights``, the stored weight block (`BadEntry` when the body does not decode, or
    `plan_check.UnsafePlan`)."""
    from . import plan_check

    if not isinstance(body, dict) or set(body) != {"program"}:
        raise BadEntry("malformed body")
    program = _Decoder(arrays, graph, ops, numpy_kernels)(body["program"])
    if type(program) is not Program:
        raise BadEntry("the body is not a program")
    if dict(program.env) != {k: int(v) for k, v in env.items()}:
        raise BadEntry("a program of another shape signature")
    plan_check.check(program, graph, weights)
    return program


__all__ = ["encode", "decode", "encode_value", "decode_value", "NotCacheable", "BadEntry"]
