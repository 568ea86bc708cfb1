"""A tagged JSON encoding of node params (documented in docs/format.md, "Params").

JSON has no tuples, no symbolic sizes, no dtypes and no inf/nan, so those are written as objects
with one ``$``-prefixed key; everything else is plain JSON:

=======================  ==========================================
Python value             JSON
=======================  ==========================================
None / True / 3 / "x"    null / true / 3 / "x"
2.5 (finite float)       2.5 (always written with "." or "e")
inf, -inf, nan           {"$float": "inf"} / "-inf" / "nan"
(1, 2)  (tuple)          {"$tuple": [1, 2]}
[1, 2]  (list)           [1, 2]
Dim batch*2              {"$dim": "batch*2"}
DType.F32                {"$dtype": "f32"}
{"k": v} (dict)          {"$dict": {"k": v}}
slice(1, None, 2)        {"$slice": [1, null, 2]}
Ellipsis                 {"$ellipsis": true}
Graph (a subgraph)       {"$graph": {...}} (the manifest's graph form)
=======================  ==========================================

Index params (``__getitem__``) are tuples of ints, ``("slice", start, stop, step)`` tuples,
None and the string ``"..."``, so they need no tag of their own.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ..core.dtype import DType
from ..core.symbolic import Dim, SymbolicError
from ..errors import FormatError

MAX_DEPTH = 32


def encode(value: Any, where: str = "param", depth: int = 0, sub=None) -> Any:
    """The JSON form of one param value; FormatError naming ``where`` for what cannot be saved.
    ``sub(graph, where)`` writes a `Graph` (a subgraph param, ``$graph``; the file's writer
    passes it, as a subgraph's arrays go into the file's data entries)."""
    if depth > MAX_DEPTH:
        raise FormatError(f"{where}: nested more than {MAX_DEPTH} levels deep")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, Dim):
        return {"$dim": str(value)}
    if isinstance(value, DType):
        return {"$dtype": value.value}
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isnan(f):
            return {"$float": "nan"}
        if math.isinf(f):
            return {"$float": "inf" if f > 0 else "-inf"}
        return f
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, where, depth + 1, sub) for v in value]}
    if isinstance(value, list):
        return [encode(v, where, depth + 1, sub) for v in value]
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):
                raise FormatError(f"{where}: dict keys must be strings, got {k!r}")
        return {"$dict": {k: encode(v, f"{where}[{k!r}]", depth + 1, sub)
                          for k, v in value.items()}}
    if isinstance(value, slice):
        return {"$slice": [encode(v, where, depth + 1) for v in (value.start, value.stop,
                                                                  value.step)]}
    if value is Ellipsis:
        return {"$ellipsis": True}
    from ..core.graph import Graph

    if isinstance(value, Graph) and sub is not None:
        return {"$graph": sub(value, where)}
    sym = getattr(value, "expr", None)  # a SymInt left in params by mistake
    if sym is not None and isinstance(sym, (Dim, int)):
        return encode(sym, where, depth)
    raise FormatError(f"{where}: a value of type {type(value).__name__} ({value!r:.60}) cannot be "
                      f"saved; params may hold None, bool, int, float, str, tuples, lists, dicts, "
                      f"symbolic sizes and dtypes")


_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def decode(obj: Any, where: str = "param", depth: int = 0, sub=None) -> Any:
    """The Python value of a JSON param; FormatError naming ``where`` for anything malformed.
    ``sub(body, where)`` reads a ``$graph`` (the file's reader passes it)."""
    if depth > MAX_DEPTH:
        raise FormatError(f"{where}: nested more than {MAX_DEPTH} levels deep")
    if obj is None or isinstance(obj, (bool, str, int)):
        return obj
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise FormatError(f"{where}: non-finite numbers must be written as {{\"$float\": ...}}")
        return obj
    if isinstance(obj, list):
        return [decode(v, where, depth + 1, sub) for v in obj]
    if isinstance(obj, dict):
        if len(obj) != 1:
            raise FormatError(f"{where}: an object param must have exactly one $-tag key, got "
                              f"keys {sorted(obj)[:5]}")
        (tag, body), = obj.items()
        if tag == "$tuple":
            if not isinstance(body, list):
                raise FormatError(f"{where}: $tuple needs a list")
            return tuple(decode(v, where, depth + 1, sub) for v in body)
        if tag == "$dim":
            if not isinstance(body, str) or len(body) > 1000:
                raise FormatError(f"{where}: $dim needs a short string")
            try:
                return Dim.parse(body)
            except SymbolicError as exc:
                raise FormatError(f"{where}: {exc}") from None
        if tag == "$dtype":
            try:
                return DType.parse(body) if isinstance(body, str) else _bad(where, tag, body)
            except (ValueError, TypeError) as exc:
                raise FormatError(f"{where}: {exc}") from None
        if tag == "$float":
            if not isinstance(body, str) or body not in _FLOATS:
                raise FormatError(f"{where}: $float must be \"inf\", \"-inf\" or \"nan\", got "
                                  f"{body!r}")
            return _FLOATS[body]
        if tag == "$dict":
            if not isinstance(body, dict):
                raise FormatError(f"{where}: $dict needs an object")
            return {k: decode(v, f"{where}[{k!r}]", depth + 1, sub) for k, v in body.items()}
        if tag == "$slice":
            if not isinstance(body, list) or len(body) != 3:
                raise FormatError(f"{where}: $slice needs [start, stop, step]")
            return slice(*(decode(v, where, depth + 1) for v in body))
        if tag == "$ellipsis":
            return Ellipsis
        if tag == "$graph":
            if sub is None or not isinstance(body, dict):
                raise FormatError(f"{where}: $graph needs an object, inside a OneModel file")
            return sub(body, where)
        raise FormatError(f"{where}: unknown param tag {tag!r}")
    raise FormatError(f"{where}: unexpected JSON value {obj!r:.60}")


def _bad(where, tag, body):
    raise FormatError(f"{where}: {tag} needs a string, got {body!r:.60}")
