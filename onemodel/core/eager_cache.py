"""The eager fast path: binding and inference cached per call signature.

Binding a call (splitting inputs from params, validating params, making scalars tensors) and
running the op's inference cost far more than a small numpy kernel, yet for a given op they depend
only on the call's structure: the dtypes and shapes of its tensors, the types and values of
everything else, and keyword names. So the first call of a signature goes the full way and
leaves an `Entry` saying where each input comes from and what the params and output types are;
later calls with the same signature build the key, look it up and run the kernel.

What is never cached (the call takes the full path every time): calls while a tracer records
(the caller checks), arguments of a type the key does not know (sizes read from a traced tensor,
arbitrary objects), a tensor that ends up anywhere but as an input (inside a param or a list made
into a constant), and params holding anything mutable. The table holds at most `MAX_ENTRIES`
signatures; the oldest go first.
"""
from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from .dtype import DType

MAX_ENTRIES = 4096
UNCACHEABLE = object()  # a table value: this signature always takes the full path


class Unkeyable(Exception):
    """An argument the key cannot describe; the call takes the full path."""


class Entry:
    """One cached signature: the op, where each input comes from, the bound params and the
    inferred output types (with their numpy dtypes and shapes, to check a kernel's result)."""

    __slots__ = ("op", "sources", "direct", "params", "out_types", "multi", "expect")

    def __init__(self, op, sources, params, out_types, multi):
        self.op = op
        self.sources = sources  # per input: None, ("slot", k), ("wrap", k) or ("const", array)
        # the common case: every input is a tensor of the call, as it is (slot numbers)
        self.direct = (tuple(s[1] for s in sources)
                       if sources and all(s is not None and s[0] == "slot" for s in sources)
                       else None)
        self.params = params
        self.out_types = out_types
        self.multi = multi
        self.expect = tuple((t.dtype.numpy, tuple(t.shape)) for t in out_types)


TABLE: dict = {}  # key -> Entry | UNCACHEABLE
_lock = threading.Lock()
_SCALARS = (bool, int, str, type(None), type(Ellipsis), DType)


def key(op, args: tuple, kwargs: dict, slots: list) -> tuple:
    """The call's signature; tensors and arrays met on the way are appended to ``slots`` (their
    dtype and shape are in the key, their identity pattern too: ``x * x`` is not ``x * y``)."""
    parts: list[Any] = [id(op)]
    tensor = _tensor_class()
    for a in args:
        if type(a) is tensor:  # the common case, inlined
            slots.append(a)
            d = a._data
            parts.append((tensor, d.dtype, d.shape))
        else:
            parts.append(_leaf(a, slots))
    if kwargs:
        for k, v in kwargs.items():
            parts.append(k)
            parts.append(_leaf(v, slots))
    n = len(slots)
    if n == 2:
        if slots[0] is slots[1]:
            parts.append("aliased")
    elif n > 2:
        ids = [id(s) for s in slots]
        if len(set(ids)) < n:
            parts.append(tuple(ids.index(i) for i in ids))
    return tuple(parts)


_TENSOR: list = []


def _tensor_class():
    """`Tensor`, imported on first use (tensor.py imports this module's importer)."""
    if not _TENSOR:
        from .tensor import Tensor

        _TENSOR.append(Tensor)
    return _TENSOR[0]


def _leaf(v: Any, slots: list):
    Tensor = _tensor_class()
    t = type(v)
    if t is Tensor or isinstance(v, Tensor):
        slots.append(v)
        d = v._data
        return (Tensor, d.dtype, d.shape)
    if t is float:
        return (t, v, math.copysign(1.0, v)) if v == 0 else (t, v)  # -0.0 is not 0.0 here
    if t in _SCALARS:
        return (t, v)
    if t is tuple or t is list:
        return (t, tuple(_leaf(e, slots) for e in v))
    if t is np.ndarray:
        slots.append(v)
        return (t, v.dtype, v.shape)
    if t is slice:
        return (t, _leaf(v.start, slots), _leaf(v.stop, slots), _leaf(v.step, slots))
    if isinstance(v, (np.number, np.bool_)):
        return (t, v.item(), str(v))
    raise Unkeyable(t)


def lookup(k: tuple, op):
    """The entry for key ``k`` (checked to be for this very op object), UNCACHEABLE or None."""
    entry = TABLE.get(k)
    if entry is None or entry is UNCACHEABLE or entry.op is op:
        return entry
    return None  # an id reused by another op record after the first was dropped


def store(k: tuple, op, slots: list, inputs: list, params: dict, out_types, multi) -> None:
    """Remember how the full path bound this signature, if it can be replayed exactly."""
    sources = _sources(slots, inputs)
    ok = sources is not None and all(_frozen(v) for v in params.values())
    value = Entry(op, tuple(sources), params, tuple(out_types), multi) if ok else UNCACHEABLE
    with _lock:
        if len(TABLE) >= MAX_ENTRIES:
            for old in list(TABLE)[: MAX_ENTRIES // 4]:
                TABLE.pop(old, None)
        TABLE[k] = value


def _sources(slots: list, inputs: list):
    """Where each bound input came from, or None when that cannot be replayed."""
    used = [False] * len(slots)
    out: list[Any] = []
    for t in inputs:
        if t is None:
            out.append(None)
            continue
        for k, s in enumerate(slots):
            if not used[k] and (s is t or (type(s) is np.ndarray and t._data is s)):
                used[k] = True
                out.append(("slot" if s is t else "wrap", k))
                break
        else:  # made by binding from a scalar or a list of numbers: a constant of this key
            out.append(("const", t._data.copy()))
    return out if all(used) else None


def _frozen(v: Any) -> bool:
    """Whether a param value cannot change behind the cache's back."""
    if type(v) in (tuple, frozenset):
        return all(_frozen(e) for e in v)
    return isinstance(v, (bool, int, float, complex, str, bytes, type(None), DType,
                          np.generic, type(Ellipsis)))


def inputs_of(entry: Entry, slots: list) -> list:
    """The bound inputs of a call with ``entry``'s signature."""
    if entry.direct:
        return [slots[k] for k in entry.direct]
    Tensor = _tensor_class()
    out: list[Any] = []
    for src in entry.sources:
        if src is None:
            out.append(None)
        elif src[0] == "slot":
            out.append(slots[src[1]])
        elif src[0] == "wrap":
            out.append(Tensor._wrap(slots[src[1]]))
        else:
            out.append(Tensor._wrap(src[1].copy()))
    return out


def clear() -> None:
    """Forget every signature (tests; the registry's records are keyed by identity anyway)."""
    with _lock:
        TABLE.clear()


def size() -> int:
    return len(TABLE)
