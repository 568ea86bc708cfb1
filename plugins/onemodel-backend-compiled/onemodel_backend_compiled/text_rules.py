"""Rules for the glue of text models: embedding lookups (``take`` by token ids) and the attention
mask chain (int64 mask -> cast -> comparisons / ``where`` / ``isnan``). On numpy each of these
was a step of several microseconds and a break between native segments, on runs of 80-250 us.

Bools live in native memory as float32 0.0 / 1.0 and int64 values as 8-byte elements (see the
`lower` module doc); the mask ops are VM ops (csrc/om_masks.h) with numpy's NaN semantics.
"""
from __future__ import annotations

import math

import numpy as np

from . import program as P
from .lower import Lowering, contiguous_strides, squeeze_dims
from .pointwise import COPY, EQ, ISNAN, LE, LOADI64, LT, NE, WHERE, Unsupported, VMBuilder
from .vm_emit import emit_vm


# -- take ----------------------------------------------------------------------------------------
def _const_indices(lw: Lowering, ind: str):
    if ind not in lw.consts:
        return None
    arr = np.asarray(lw.consts[ind])
    if arr.dtype.kind not in "iu":
        raise Unsupported("take: indices dtype")
    return arr.astype(np.int64)


def take_rule(lw: Lowering, node, params):
    """numpy's take: a constant scalar index (or an increasing run) is a view; other indices
    (token ids fed at run time, constant index arrays) copy rows with ``I_GATHER``, which checks
    every index first and fails the segment on one out of range (the numpy kernel then names
    the node)."""
    x, ind = node.inputs[:2]
    if set(params) - {"axis"}:
        raise Unsupported("take: options")
    _take(lw, node, x, ind, params.get("axis"), negative=True)


def embedding_rule(lw: Lowering, node, params):
    """embedding(indices, weight): weight's rows, indices in [0, rows) (no negative ones)."""
    ind, w = node.inputs[:2]
    if params or len(lw.shape(w)) != 2:
        raise Unsupported("embedding: options or weight rank")
    _take(lw, node, w, ind, 0, negative=False)


def _take(lw: Lowering, node, x: str, ind: str, axis, negative: bool) -> None:
    out = node.outputs[0]
    if not (lw.is_f32(x) or lw.is_bool(x)):
        raise Unsupported("take: data dtype")
    consts = _const_indices(lw, ind)
    if consts is None and not lw.is_i64(ind):
        raise Unsupported("take: indices dtype")
    if axis is None:
        loc = lw.contiguous(x)
        loc = loc.with_view((loc.size,), (1,))
        axis = 0
    else:
        loc = lw.loc(x)
        axis = int(axis) % len(loc.shape)
    n = loc.shape[axis]
    if consts is not None:
        if consts.size and (consts.min() < (-n if negative else 0) or consts.max() >= n):
            raise Unsupported("take: a constant index out of range (numpy names the node)")
        flat = np.where(consts < 0, consts + n, consts).reshape(-1)
        if flat.size == 1 or (flat.size > 1 and np.all(np.diff(flat) == 1)):
            # a view: the axis becomes the indices' shape over one run of positions
            ishape = tuple(consts.shape)
            shape = tuple(loc.shape[:axis]) + ishape + tuple(loc.shape[axis + 1:])
            st = loc.strides[axis]
            istrides = tuple(s * st for s in contiguous_strides(ishape))
            strides = tuple(loc.strides[:axis]) + istrides + tuple(loc.strides[axis + 1:])
            if shape != tuple(lw.shape(out)):
                raise Unsupported("take: shape")
            lw.bind(out, loc.with_view(shape, strides, loc.off + int(flat[0]) * st))
            return
        off = lw.weights.ints(lw.const_key(ind), consts)
        iaddr, nidx = P.addr(P.WEIGHTS, off, np.int64), consts.size
    else:
        il = lw.loc(ind, ints=True)
        shape, strides = squeeze_dims(il.shape, il.strides)
        if len(shape) > 1 or (shape and strides[0] != 1):
            raise Unsupported("take: strided indices")
        iaddr, nidx = il.addr, il.size
    if loc.strides[-1] != 1 or not loc.contiguous:
        loc = lw.contiguous(loc)
    outer = math.prod(loc.shape[:axis])
    inner = math.prod(loc.shape[axis + 1:])
    dst = lw.dest(out)
    lw.emit(P.instruction(P.I_GATHER, loc.addr, outer, n, inner, iaddr, nidx, dst.addr,
                          1 if negative else 0))
    lw.bind(out, dst)


# -- masks ---------------------------------------------------------------------------------------
_COMPARE = {"equal": (EQ, False), "not_equal": (NE, False), "less": (LT, False),
            "less_equal": (LE, False), "greater": (LT, True), "greater_equal": (LE, True)}


def _real(lw: Lowering, v) -> bool:
    """float32, or bool (0.0 / 1.0): values the VM compares as numpy would."""
    return lw.is_f32(v) or lw.is_bool(v)


def _emit(lw: Lowering, vm: VMBuilder, result: int) -> None:
    """Finish and emit, reading int64 inputs with the VM's int64 load."""
    vm.finish(result)
    extra = {}
    for i, v in enumerate(vm.inputs):
        if lw.is_i64(v):
            extra[v] = lw.loc(v, ints=True)
            vm.code = [(LOADI64, c[1], c[2], c[3]) if c[0] == 1 and c[2] == i else c
                       for c in vm.code]
    emit_vm(lw, vm, None, extra)


def mask_rule(lw: Lowering, node, params):
    """isnan, comparisons, where and cast as one VM loop each (int64 only as cast's input)."""
    op, ins, out = node.op, list(node.inputs), node.outputs[0]
    vm = VMBuilder()
    if op == "isnan":
        if params or not lw.is_f32(ins[0]):
            raise Unsupported("isnan dtype")
        _emit(lw, vm, vm.op(ISNAN, vm.load(ins[0])))
    elif op in _COMPARE:
        opc, swap = _COMPARE[op]
        if params or not lw.is_bool(out) or not all(_real(lw, v) for v in ins):
            raise Unsupported("comparison dtype")
        a, b = vm.load(ins[0]), vm.load(ins[1])
        _emit(lw, vm, vm.op(opc, b, a) if swap else vm.op(opc, a, b))
    elif op == "where":
        c, x, y = ins
        if params or not lw.is_bool(c) or not all(_real(lw, v) for v in (x, y)) \
                or (lw.is_bool(out) and not (lw.is_bool(x) and lw.is_bool(y))):
            raise Unsupported("where dtype")
        rc = vm.load(c)
        rx, ry = vm.load(x), vm.load(y)
        dst = vm.op(COPY, rc)  # WHERE overwrites its condition register
        _emit(lw, vm, vm.op(WHERE, rx, ry, dst=dst))
    elif op == "cast":
        x = ins[0]
        if set(params) - {"dtype"} or not (_real(lw, x) or lw.is_i64(x)):
            raise Unsupported("cast dtype")
        if lw.types[x].dtype == lw.types[out].dtype:
            lw.bind(out, lw.loc(x, ints=True))  # the same dtype: a view
            return
        r = vm.load(x)  # to float32: bool as 0 / 1, int64 rounded as numpy's astype
        if lw.is_bool(out):  # numpy: nonzero (NaN too) is True
            r = vm.op(NE, r, vm.const(0.0))
        _emit(lw, vm, r)
    else:
        raise Unsupported(op)


TEXT_RULES = {"take": take_rule, "embedding": embedding_rule, "isnan": mask_rule, "where": mask_rule,
              "cast": mask_rule,
              **{name: mask_rule for name in _COMPARE}}

__all__ = ["TEXT_RULES", "take_rule", "embedding_rule", "mask_rule"]
