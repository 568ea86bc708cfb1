"""A lowered shape signature as plain, immutable data: the `Program` that `lower.Lowering`
produces and that `plan.NativePlan` runs, `plan_codec` stores and loads and `plan_check`
validates. Nothing here refers back to the lowering that made it.

Every class is a frozen attrs record whose fields are all there is to it: `plan_codec` walks
``attrs.fields``, so a field added here is stored, loaded and rebuilt with no change elsewhere
(a loaded entry is built by calling the class, never by filling in a bare object).
"""
from __future__ import annotations

import math
from types import MappingProxyType
from typing import Any, Mapping

import attrs
import numpy as np

from . import program as P


def _frozen_map(value) -> Mapping:
    """A read-only mapping of a mapping's items (anything else is no field of a program)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"a {type(value).__name__}, not a mapping")
    return MappingProxyType(dict(value))


def _tuple(value) -> tuple:
    """A tuple of a tuple's or a list's items (anything else is no field of a program)."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"a {type(value).__name__}, not a sequence")
    return tuple(value)


def _program_array(value) -> np.ndarray:
    """A native program: an int64 vector nobody changes once lowered (a read-only copy when
    the array given may still be written)."""
    a = np.asarray(value)
    if a.dtype != np.int64:
        raise TypeError(f"a native program of dtype {a.dtype}, not int64")
    if a.flags.writeable:
        a = a.copy()
        a.setflags(write=False)
    return a


def contiguous_strides(shape) -> tuple:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= int(d)
    return tuple(reversed(out))


@attrs.frozen
class Loc:
    """Where a value lives for native code (lower's module doc): offset and strides in
    elements of ``dtype``, the type native memory holds it in (float32 for bools too)."""

    buf: int
    off: int
    shape: tuple
    strides: tuple
    alloc: int | None = None  # the arena allocation it sees (None: weights, feed, output)
    dtype: str = "float32"

    @property
    def addr(self) -> int:
        return P.addr(self.buf, self.off, self.dtype)

    @property
    def itemsize(self) -> int:
        return P.itemsize(self.dtype)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def contiguous(self) -> bool:
        return all(st == c for d, st, c in zip(self.shape, self.strides,
                                               contiguous_strides(self.shape)) if d != 1)

    def with_view(self, shape, strides, off: int | None = None) -> "Loc":
        """The same memory seen with another shape and strides (from element ``off``)."""
        return Loc(self.buf, self.off if off is None else int(off), tuple(shape),
                   tuple(strides), self.alloc, self.dtype)


@attrs.frozen(eq=False)
class NativeSegment:
    """Instructions run by one native call: the flat program and the node of each one."""

    program: np.ndarray = attrs.field(converter=_program_array)
    nodes: tuple = attrs.field(converter=_tuple)

    @property
    def instructions(self) -> list[list[int]]:
        """The program split into its instructions (``[opcode, length, fields...]``)."""
        return split_program(self.program)


@attrs.frozen(eq=False)
class PyStep:
    """A node run by its numpy kernel between native segments."""

    node: Any
    kernel: Any
    params: Mapping = attrs.field(converter=_frozen_map)
    #: per input: None | ("py" | "feed", name) | ("loc" | "loc_bool" | "loc_i64", Loc)
    #: | ("const", array)
    inputs: tuple = attrs.field(converter=_tuple)
    outputs: tuple = attrs.field(converter=_tuple)  # per output: ("py", name) | ("loc", Loc)
    provider: str | None = None


@attrs.frozen(eq=False)
class Program:
    """One shape signature of one graph, lowered: all that running it needs besides the
    session's graph (its nodes, constants and types), registry and weight block."""

    env: Mapping = attrs.field(converter=_frozen_map)  # the sizes of the symbolic axes
    feeds: tuple = attrs.field(converter=_tuple)         # the graph's inputs, in order
    output_names: tuple = attrs.field(converter=_tuple)  # the outputs asked for
    wanted: tuple = attrs.field(converter=_tuple)        # the value of each output
    #: per output: written by a kernel straight into the array handed back
    direct: tuple = attrs.field(converter=_tuple)
    #: per output not written directly: ("loc", Loc) | ("const", array) | ("feed", name)
    #: | ("py", name); None for one written directly
    fetch: tuple = attrs.field(converter=_tuple)
    segments: tuple = attrs.field(converter=_tuple)      # NativeSegment and PyStep, in order
    locs: Mapping = attrs.field(converter=_frozen_map)  # value -> Loc of every native value
    #: constants folded for this signature (value -> array), beside the graph's initializers
    folded: Mapping = attrs.field(converter=_frozen_map)
    arena_bytes: int = 0  # the scratch arena's high-water mark (NativePlan allocates >= 64)
    source: str = ""       # what `describe` prints


def split_program(program) -> list[list[int]]:
    """A flat program's instructions (stops at a length that does not fit)."""
    p = program.tolist() if isinstance(program, np.ndarray) else list(program)
    out, pc = [], 0
    while pc + 1 < len(p) and 2 <= p[pc + 1] <= len(p) - pc:
        out.append(p[pc: pc + p[pc + 1]])
        pc += p[pc + 1]
    return out


#: every class a stored program is built from (plan_codec decodes these and no other)
CLASSES = {c.__name__: c for c in (Program, NativeSegment, PyStep, Loc)}

__all__ = ["Program", "NativeSegment", "PyStep", "Loc", "CLASSES", "contiguous_strides",
           "split_program"]
