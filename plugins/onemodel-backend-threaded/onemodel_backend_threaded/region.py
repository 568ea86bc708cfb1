"""Intra-op parallelism along the batch axis: *regions*.

A region is a run of consecutive plan steps that all treat axis 0 (the batch axis) row by row:
each of ``k`` pieces runs every step of the region, in order, on rows ``[lo:hi]`` of the same
buffers, with kernels made for the piece's shape by the same ``KernelDef.make`` the whole step
uses. A single large step is a region of one; a chain of them (an MLP, a CNN) pays for one
hand-off instead of one per node.

Which ops qualify, and how each input is passed (rows sliced, or whole where it broadcasts over
axis 0), is what each op's record declares (`OpTraits.batch`, pointwise ops by default, and
`OpTraits.view` for reshapes and axis permutations); an op that declares nothing never joins a
region.
"""
from __future__ import annotations

import operator

import numpy as np

import attrs

from onemodel.core.plan import OUT, VIEW, ConstantType, PlanKernel
from onemodel.core.types import TensorType
from onemodel.registry import REGISTRY
from onemodel.registry.records import NO_TRAITS


def traits(op: str):
    """The `OpTraits` the op's record declares (none for an unknown op)."""
    rec = REGISTRY.tables().ops.get(op)
    return rec.traits if rec is not None else NO_TRAITS


@attrs.define
class RegionStep:
    """How a step runs inside a region: ``sliced[i]`` says whether passed argument ``i`` is
    cut to the piece's rows; ``pieces[(lo, hi)]`` is ``(fn, extra)`` for the piece of those
    rows."""

    kind: str                 # OUT or VIEW
    sliced: tuple
    pieces: dict
    out_sliced: bool = True   # False: each piece gets the whole output (column pieces)
    repack: int = 0           # weight elements a BLAS call re-packs for every row piece


def bounds(n: int, k: int) -> list[tuple[int, int]]:
    q, r = divmod(n, k)
    out, start = [], 0
    for i in range(k):
        stop = start + q + (1 if i < r else 0)
        out.append((start, stop))
        start = stop
    return out


def region_step(step, kdef, params: dict, in_types: list, out_types: list, length: int,
                spans: list, inside: set) -> RegionStep | None:
    """How ``step`` runs in pieces (rows ``lo:hi`` for each of ``spans``) of a region of
    ``length`` rows, or None.

    ``inside``: the values produced earlier in the same region (they exist only as row slices
    while the region runs, so they must be sliced).
    """
    node, pk = step.node, step.kernel
    op = node.op
    if len(node.outputs) != 1 or length < 2:
        return None
    out = tuple(int(d) for d in out_types[0].shape)
    if not out or out[0] != length:
        return None
    passed = list(pk.inputs) if pk.inputs is not None else list(range(len(node.inputs)))
    types = [in_types[j] for j in passed]
    if pk.kind == VIEW:
        return _view_step(node, params, types, out, length, spans)
    if pk.kind != OUT or kdef is None or kdef.make is None:
        return None
    rank = len(out)
    sliced = []
    tr = traits(op)
    try:
        kind = tr.batch_kind(dict(params), in_types)
    except Exception:  # noqa: BLE001 - a trait that cannot judge these types: no split
        kind = None
    if kind == "rows":
        if passed[:1] != [0] or len(types[0].shape) < 2 or int(types[0].shape[0]) != length:
            return None
        sliced = [True] + [False] * (len(passed) - 1)
    elif kind == "broadcast":
        for t in types:
            if t is None:
                sliced.append(False)
                continue
            shape = tuple(int(d) for d in t.shape)
            if len(shape) < rank or shape[0] == 1:
                sliced.append(False)
            elif shape[0] == length:
                sliced.append(True)
            else:
                return None
    else:
        return None
    for a, s in zip(step.args, sliced):
        if a is not None and a in inside and not s:
            return None
    pieces = {}
    for lo, hi in spans:
        chunk = list(in_types)
        for j, s in zip(passed, sliced):
            if s:
                chunk[j] = _rows(in_types[j], lo, hi)
        try:
            made = kdef.make(dict(params), chunk)
        except Exception:  # noqa: BLE001 - the piece's shape is not one the kernel takes
            return None
        if not isinstance(made, PlanKernel) or made.kind != OUT or made.inputs != pk.inputs:
            return None
        pieces[(lo, hi)] = (made.fn, tuple(made.extra))
    repack = 0
    if tr.cost is not None:
        try:
            repack = int(tr.cost(in_types, out_types, dict(params)).packs)
        except Exception:  # noqa: BLE001 - a cost function that cannot judge: no repack
            repack = 0
    return RegionStep(OUT, tuple(sliced), pieces, repack=repack)


def column_step(step, kdef, params: dict, in_types: list, out_types: list, threads: int
                ) -> tuple[RegionStep, list] | None:
    """A linear step with constant weights split by *output features* instead of rows: every
    piece reads all of ``x`` and writes its own columns (through a small buffer of its own, as
    the kernel writes contiguous rows). Each BLAS call then packs only its share of the weight,
    which beats row pieces when there are fewer rows than output features."""
    node, pk = step.node, step.kernel
    if (node.op not in ("linear", "fused_linear") or pk.kind != OUT or pk.inputs != (0,)
            or kdef is None or kdef.make is None or len(node.outputs) != 1):
        return None
    w = in_types[1]
    b = in_types[2] if len(in_types) > 2 else None
    if not isinstance(w, ConstantType) or (b is not None and not isinstance(b, ConstantType)):
        return None
    out = tuple(int(d) for d in out_types[0].shape)
    n_out = out[-1]
    k = min(threads, n_out // 8)
    if k < 2:
        return None
    spans = bounds(n_out, k)
    pieces = {}
    for c0, c1 in spans:
        types = list(in_types)
        types[1] = ConstantType(w.dtype, (c1 - c0,) + tuple(w.shape[1:]), value=w.value[c0:c1])
        if b is not None:
            types[2] = ConstantType(b.dtype, (c1 - c0,), value=b.value[c0:c1])
        try:
            made = kdef.make(dict(params), types)
        except Exception:  # noqa: BLE001 - not a kernel that takes a slice of the weight
            return None
        if not isinstance(made, PlanKernel) or made.kind != OUT or made.inputs != (0,):
            return None
        piece = ColumnPiece(made.fn, tuple(made.extra), c0, c1, out[:-1] + (c1 - c0,),
                            out_types[0].dtype.numpy)
        pieces[(c0, c1)] = (piece, ())
    return RegionStep(OUT, (False,), pieces, out_sliced=False), spans


class ColumnPiece:
    """``piece(x, out=full_output)``: columns ``c0:c1`` of a linear step."""

    __slots__ = ("fn", "extra", "c0", "c1", "shape", "dtype")

    def __init__(self, fn, extra, c0, c1, shape, dtype) -> None:
        self.fn, self.extra, self.c0, self.c1 = fn, extra, c0, c1
        self.shape, self.dtype = shape, dtype

    def __call__(self, x, out):
        tmp = np.empty(self.shape, self.dtype)
        self.fn(x, *self.extra, out=tmp)
        out[..., self.c0:self.c1] = tmp
        return out


def _view_step(node, params, types, out, length, spans):
    x = types[0] if types else None
    if x is None or not x.shape or int(x.shape[0]) != length or len(types) != 1:
        return None
    tr = traits(node.op)
    if tr.view == "reshape":
        pieces = {(lo, hi): (operator.methodcaller("reshape", (hi - lo,) + out[1:]), ())
                  for lo, hi in spans}
        return RegionStep(VIEW, (True,), pieces)
    if tr.view == "permute" and tr.permutation is not None:
        rank = len(x.shape)
        try:
            perm = list(tr.permutation(dict(params), rank))
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            return None
        if not perm or perm[0] != 0 or sorted(perm) != list(range(rank)):
            return None
        fn = operator.methodcaller("transpose", tuple(perm))
        return RegionStep(VIEW, (True,), {span: (fn, ()) for span in spans})
    return None


def _rows(t, lo: int, hi: int):
    """The type of ``t[lo:hi]``."""
    shape = (hi - lo,) + tuple(t.shape[1:])
    if isinstance(t, ConstantType):
        return ConstantType(t.dtype, shape, value=t.value[lo:hi])
    return TensorType(t.dtype, shape)


__all__ = ["RegionStep", "region_step", "column_step", "ColumnPiece", "bounds", "traits"]
