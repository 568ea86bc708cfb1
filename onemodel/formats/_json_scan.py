"""Measure a JSON document's size in Python objects before parsing it.

``json.loads`` of ``[{},{},...]`` turns every 3 bytes into a 64-byte dict, and nothing in the
parser can be told to stop: 64 MiB of such text (60 KB deflated) peaked at 1.6 GB. So a reader
scans the bytes first, at C speed and in little memory, and refuses a document with too many
elements or nested too deeply before any object exists.

Counting on the raw bytes is fast (``bytes.count``, ``bytes.translate``) and errs only one way
for elements: commas and brackets inside strings add to the count. So the raw count decides
when it is within the limit; only past a limit are the strings blanked out (a regex, about as
slow as parsing) for the exact figure, and not even then when the quotes alone prove too many.
"""
from __future__ import annotations

import re

import numpy as np

# a JSON string, escapes included (brackets and commas inside strings are not structure)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_CHUNK = 1 << 20


def count_elements(bare: bytes) -> int:
    """An upper bound on the values and keys in ``bare`` (JSON with its strings emptied): every
    value but the first follows a comma or opens a container, every key precedes a colon."""
    return 1 + sum(bare.count(c) for c in (b",", b"[", b"{", b":"))


def max_depth(bare: bytes) -> int:
    """The deepest nesting of ``[``/``{`` in ``bare`` (a running sum over the brackets alone,
    a chunk at a time so the scan stays small)."""
    brackets = bare.translate(None, _NOT_BRACKETS)
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
    bare = None
    n = count_elements(raw)  # at least the true count
    if n > max_elements:
        # each string is an element; an escaped quote needs a backslash: a lower bound
        strings = (raw.count(b'"') - raw.count(b"\\")) // 2
        if strings <= max_elements:  # the strings alone do not decide: count without them
            bare = _STRING.sub(b'""', raw)
            n = count_elements(bare)
        if n > max_elements:
            return (f"holds about {n} JSON elements, more than the limit of {max_elements} (a "
                    f"JSON bomb?)")
    depth = max_depth(raw)  # brackets in strings may raise it: then count again without them
    if depth > max_nesting:
        depth = max_depth(bare if bare is not None else _STRING.sub(b'""', raw))
        if depth > max_nesting:
            return f"is nested {depth} levels deep, more than the limit of {max_nesting}"
    return None
