"""Measure a JSON document's size in Python objects before parsing it.

``json.loads`` of ``[{},{},...]`` turns every 3 bytes into a 64-byte dict, and nothing in the
parser can be told to stop: 64 MiB of such text (60 KB deflated) peaked at 1.6 GB. So a reader
scans the bytes first, at C speed and in little memory, and refuses a document with too many
elements or nested too deeply before any object exists.
"""
from __future__ import annotations

import re

import numpy as np

# a JSON string, escapes included (brackets and commas inside strings are not structure)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_CHUNK = 1 << 20


def count_elements(bare: bytes) -> int:
    """An upper bound on the values and keys in ``bare`` (JSON with its strings emptied): every
    value but the first follows a comma or opens a container, every key precedes a colon."""
    return 1 + sum(bare.count(c) for c in (b",", b"[", b"{", b":"))


def max_depth(bare: bytes) -> int:
    """The deepest nesting of ``[``/``{`` in ``bare`` (a running sum over the brackets alone,
    a chunk at a time so the scan stays small)."""
    brackets = _NOT_BRACKET.sub(b"", bare)
    depth = deepest = 0
    for start in range(0, len(brackets), _CHUNK):
        a = np.frombuffer(brackets, np.uint8, count=min(_CHUNK, len(brackets) - start),
                          offset=start)
        closes = (a == ord("]")) | (a == ord("}"))
        running = np.cumsum(1 - 2 * closes.astype(np.int64)) + depth
        deepest = max(deepest, int(running.max()))
        depth = int(running[-1])
    return deepest


def check(raw: bytes, *, max_elements: int, max_nesting: int) -> str | None:
    """None when ``raw`` stays within the limits, else what exceeds them (the caller names the
    document). Malformed JSON is left to the parser."""
    bare = _STRING.sub(b'""', raw)
    n = count_elements(bare)
    if n > max_elements:
        return (f"holds about {n} JSON elements, more than the limit of {max_elements} (a JSON "
                f"bomb?)")
    depth = max_depth(bare)
    if depth > max_nesting:
        return f"is nested {depth} levels deep, more than the limit of {max_nesting}"
    return None
