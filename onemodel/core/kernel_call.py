"""Checking what an op's kernel returned against its inferred types: one rule for every runtime.

Each place that runs an op's own kernel (eager dispatch, the reference interpreter, the plan
compiler's generated code, `DynamicPlan`, constant folding, a backend's numpy fallback) hands
the result to `check_outputs` (or a prebuilt `OutputCheck`), so a kernel that returns the wrong
thing is caught the same way wherever it runs.

What is checked, in order:

* **count**: as many outputs as the inference gives. A tuple or list is the outputs; a
  one-output op may also return its array bare.
* **dtype**: a result of another dtype is *cast* to the inferred one (numpy hands back float64
  from some float32 arithmetic and Python scalars from reductions: a kernel's habit, not a
  mistake); a value that cannot be cast (a string, None as an int) is an error.
* **rank**: equal to the inferred rank.
* **sizes**: an int size must be equal; a symbolic size whose symbols ``env`` binds is
  evaluated and must be equal; a size that is one unbound symbol (a *data size*, such as
  ``nonzero``'s count) is bound to the result's size in ``env``, so every later use of that
  symbol, in the same result or a later node's, must agree; a compound size naming an unbound
  symbol is an error (nothing decided that symbol).

A result that fails raises `KernelOutputError` (an `OpError`) naming the op, the kernel's
plugin and what differed. The graph runtimes wrap it, like any kernel failure, in the error
that names the node and its source line (`interpreter.node_error`); folding passes catch it and
leave the node to run, and fail naming itself, at run time. A backend kernel that declares a
memory kind (``out``, ``view``, ``fresh``: `plan.PlanKernel`) promises its dtype and shape and
is not re-checked on the hot path.
"""
from __future__ import annotations

from typing import Any, MutableMapping, Sequence

import numpy as np

from ..errors import OpError
from .symbolic import Dim
from .types import TensorType

#: The largest result (bytes, all outputs of one node together) that folding computes while a
#: graph is built: the constant-folding pass, the ONNX importer and the compiled backend's
#: per-signature folding all leave a node whose result would be bigger to run instead, so
#: building or importing a graph never allocates a factory's or an ``expand``'s huge result.
#: (docs/guide/passes.md, "Constant folding".)
FOLD_MAX_BYTES = 1 << 20


def nbytes(t: TensorType) -> int | None:
    """The bytes a value of ``t`` holds; None when a size is symbolic."""
    n = t.dtype.itemsize
    for d in t.shape:
        if not isinstance(d, int):
            return None
        n *= d
    return n


def fold_fits(types: Sequence[TensorType], held: int = 0) -> bool:
    """Whether one node's results of ``types`` may be folded: every size an int and together
    no more than `FOLD_MAX_BYTES`, or than ``held``, the bytes of the constants they are
    computed from, for a caller that may drop those (the ONNX importer: folding a transposed
    weight then never holds more than the file did)."""
    total = 0
    for t in types:
        n = nbytes(t)
        if n is None:
            return False
        total += n
    return total <= max(FOLD_MAX_BYTES, held)


class KernelOutputError(OpError):
    """An op's kernel returned something other than what its inference promised (the message
    names the op, the kernel's plugin and what differed)."""


def _by(provider: str | None) -> str:
    return f" of plugin {provider}" if provider else ""


def check_outputs(out: Any, types: Sequence[TensorType], op: str, provider: str | None = None,
                  env: MutableMapping[str, int] | None = None) -> list[np.ndarray]:
    """The kernel result ``out`` as arrays of ``types`` (cast where needed), or a
    `KernelOutputError` (the rule is the module doc's). ``env`` holds the sizes bound so far and
    receives the data sizes this result decides (a fresh one when None)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if len(outs) != len(types):
        raise KernelOutputError(f"ops.{op}: the kernel{_by(provider)} returned {len(outs)} "
                                f"outputs, inference {len(types)}")
    if env is None:
        env = {}
    arrays = []
    for a, t in zip(outs, types):
        raw = a
        want = t.dtype.numpy
        try:
            a = np.asarray(a)
            if a.dtype != want:
                a = a.astype(want)
        except (TypeError, ValueError) as exc:
            raise KernelOutputError(f"ops.{op}: the kernel{_by(provider)} returned "
                                    f"{type(raw).__name__} {raw!r:.40}, not an array of {t}: "
                                    f"{exc}") from None
        if a.shape != t.shape:
            _check_shape(a.shape, t, op, provider, env)
        arrays.append(a)
    return arrays


def _check_shape(actual: tuple, t: TensorType, op: str, provider: str | None,
                 env: MutableMapping[str, int]) -> None:
    def wrong(why: str) -> KernelOutputError:
        return KernelOutputError(f"ops.{op}: the kernel{_by(provider)} returned shape "
                                 f"{actual}, but its inference gives {t}: {why}")

    if len(actual) != len(t.shape):
        raise wrong(f"rank {len(actual)}, not {len(t.shape)}")
    for axis, (d, n) in enumerate(zip(t.shape, actual)):
        if isinstance(d, Dim):
            unknown = d.symbols() - env.keys()
            if unknown:
                name = next(iter(unknown))
                if len(unknown) == 1 and d == Dim.symbol(name):
                    env[name] = int(n)  # a data size: this result decides it
                    continue
                raise wrong(f"axis {axis} is {d}, which names sizes {sorted(unknown)} that "
                            f"nothing decided")
            want = d.evaluate(env)
        else:
            want = int(d)
        if want != n:
            raise wrong(f"axis {axis} is {n}, not {d}" + (f" = {want}" if isinstance(d, Dim)
                                                           else ""))


class OutputCheck:
    """`check_outputs` for one node with its types fixed (what generated code calls): returns
    the one array of a one-output op, else the list."""

    __slots__ = ("types", "op", "provider", "single")

    def __init__(self, types: Sequence[TensorType], op: str, provider: str | None = None):
        self.types, self.op, self.provider = tuple(types), op, provider
        self.single = len(self.types) == 1

    def __call__(self, out: Any):
        arrays = check_outputs(out, self.types, self.op, self.provider)
        return arrays[0] if self.single else arrays


__all__ = ["KernelOutputError", "check_outputs", "OutputCheck", "FOLD_MAX_BYTES", "fold_fits", "nbytes"]
