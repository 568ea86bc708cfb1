"""Emitting one pointwise VM loop (``I_VM``) over a node's output, and the broadcast strides it
reads its inputs with. Shared by the lowerings of every module (rules, text_rules, a plugin's
own), so that none of them imports another."""
from __future__ import annotations

from . import program as P
from .lower import Loc, Lowering
from .pointwise import Unsupported, VMBuilder


def broadcast_strides(loc: Loc, shape) -> tuple:
    pad = len(shape) - len(loc.shape)
    if pad < 0:
        raise Unsupported("broadcast to fewer dims")
    out = []
    for i, d in enumerate(shape):
        j = i - pad
        if j < 0:
            out.append(0)
        elif loc.shape[j] == d:
            out.append(loc.strides[j] if d != 1 else 0)
        elif loc.shape[j] == 1:
            out.append(0)
        else:
            raise Unsupported("shapes do not broadcast")
    return tuple(out)


def emit_vm(lw: Lowering, vm: VMBuilder, dst: Loc | None = None,
            extra: dict | None = None) -> None:
    """Emit ``vm`` (finished) as one loop over the current node's output: into ``dst`` when given,
    else into new memory bound to the output. ``extra`` maps input names the VM loaded to
    locations of their own (weight-block vectors, an accumulator, int64 views)."""
    extra = extra or {}
    out = lw.current.outputs[0]
    shape = lw.shape(out)
    in_locs = [extra[v] if v in extra else lw.loc(v) for v in vm.inputs]
    strides = [broadcast_strides(loc, shape) for loc in in_locs]
    if dst is None:
        dst = lw.dest(out)
        bind = True
    else:
        bind = False
    dshape, all_strides = collapse(shape, [dst.strides] + strides)
    if len(dshape) > 4:
        raise Unsupported("more than 4 dims after collapsing")
    pad = 4 - len(dshape)
    dshape = (1,) * pad + dshape
    all_strides = [(0,) * pad + s for s in all_strides]
    fields = [len(in_locs), *dshape, dst.addr, *all_strides[0]]
    for loc, st in zip(in_locs, all_strides[1:]):
        fields += [loc.addr, *st]
    fields.append(len(vm.code))
    for c in vm.code:
        fields += list(c)
    fields.append(len(vm.consts))
    fields += [P.fbits(c) for c in vm.consts]
    lw.emit(P.instruction(P.I_VM, *fields))
    if bind:
        lw.bind(out, dst)


def collapse(shape, stride_sets):
    """Drop size-1 dims and merge neighbours contiguous in every operand."""
    keep = [i for i, d in enumerate(shape) if d != 1]
    dims = [int(shape[i]) for i in keep]
    sets = [[int(s[i]) for i in keep] for s in stride_sets]
    i = len(dims) - 1
    while i > 0:
        if all(st[i - 1] == st[i] * dims[i] for st in sets):
            dims[i - 1] *= dims[i]
            for st in sets:
                st[i - 1] = st[i]
                del st[i]
            del dims[i]
        i -= 1
    if not dims:
        return (1,), [(0,) for _ in sets]
    return tuple(dims), [tuple(st) for st in sets]


__all__ = ["broadcast_strides", "emit_vm", "collapse"]
