"""The public surface of a native lowering (docs/guide/backends.md, "A native lowering").

Any plugin may ship ``KernelDef(op="my_op", backend="compiled", lower=lower_my_op)``: for each
node of that op in a graph it lowers, the compiled backend calls ``lower_my_op(ctx, node,
params)`` before it looks at the op's traits (a view kind, a pointwise formula).

* ``ctx`` (a `LoweringContext`) is one graph at one shape signature being lowered: shapes,
  dtypes and constants to read, memory to take, instructions to emit and outputs to bind.
* ``node`` has ``op``, ``inputs`` (value names; None for an absent optional input) and
  ``outputs``; ``params`` are its params with the signature's sizes filled in.
* It returns None once every output is bound (``ctx.bind``). To refuse it raises
  ``Unsupported("why")`` (or returns False): whatever it emitted or took is undone, the node runs
  its numpy kernel, and ``session.plan_source(feeds)`` shows ``(not native: why)``. Any other
  exception is a bug of the lowering and propagates.

Instructions are the executor's (`program`: ``I_VM``, ``I_GEMM``, ``I_SOFTMAX``, ...;
`emit_vm` builds the pointwise one from a `VMBuilder` program over `pointwise`'s opcodes);
every field is checked before a plan runs (``plan_check``), and a plan whose ops' lowerings
come from a plugin registered at run time is not cached on disk.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol

from . import pointwise, program
from .lower import Loc, Lowering
from .pointwise import Unsupported, VMBuilder
from .vm_emit import broadcast_strides, emit_vm


class LoweringContext(Protocol):
    """What a lowering may use of the lowering it runs in (`Lowering` implements it)."""

    #: constant values by name (initializers, and values folded for this signature)
    consts: Mapping[str, Any]
    #: the node being lowered
    current: Any

    def shape(self, value: str) -> tuple:
        """The value's shape at this signature (ints)."""

    def is_f32(self, value: str | None) -> bool:
        """A float32 value (bool ones are float32 0.0 / 1.0 natively: `is_bool`)."""

    def is_bool(self, value: str | None) -> bool: ...

    def is_i64(self, value: str | None) -> bool: ...

    def loc(self, value: str, ints: bool = False) -> Loc:
        """Where an input lives (a constant is put in the weight block); raises `Unsupported`
        for a value native code does not hold (an int64 one unless ``ints``)."""

    def contiguous(self, value_or_loc) -> Loc:
        """A contiguous location of it, copying a strided view into scratch first."""

    def matrix(self, value_or_loc) -> tuple:
        """``(loc, M, K, lda)``: the value as rows of its last axis."""

    def dest(self, value: str) -> Loc:
        """Memory for a new contiguous output value (bind it with `bind`)."""

    def scratch(self, n: int) -> Loc:
        """``n`` floats of scratch, free again after this node."""

    def emit(self, ins: list) -> None:
        """Append one instruction (`program.instruction(...)`) for the current node."""

    def bind(self, value: str, loc: Loc) -> None:
        """Make ``loc`` the memory of output ``value``."""


instruction, addr, fbits = program.instruction, program.addr, program.fbits

__all__ = ["LoweringContext", "Lowering", "Loc", "Unsupported", "VMBuilder", "emit_vm",
           "broadcast_strides", "pointwise", "program", "instruction", "addr", "fbits"]
