"""Views that need stride arithmetic: a reshape of a strided value without a copy (numpy's rule)
and split as one view per piece. Text models reshape the pieces of a fused projection (GPT-2's
qkv split, heads) that are strided; a copy per piece cost more than the attention it fed."""
from __future__ import annotations

from .lower import Loc, Lowering, contiguous_strides
from .pointwise import Unsupported
from .traits import permutation_of


def reshape_strides(shape, strides, new_shape) -> tuple | None:
    """Strides that show a value of ``shape``/``strides`` as ``new_shape`` in the same element
    order, or None when that needs a copy (numpy's ``_attempt_nocopy_reshape``)."""
    old = [(int(d), int(s)) for d, s in zip(shape, strides) if int(d) != 1]
    new = [int(d) for d in new_shape]
    if any(d == 0 for d in new):
        return None
    if not old:  # one element
        return contiguous_strides(new)
    odims, ostr = [d for d, _ in old], [s for _, s in old]
    out = [0] * len(new)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new) and oi < len(odims):
        np_, op = new[ni], odims[oi]
        while np_ != op:
            if np_ < op:
                if nj >= len(new):
                    return None
                np_ *= new[nj]
                nj += 1
            else:
                if oj >= len(odims):
                    return None
                op *= odims[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if ostr[ok] != odims[ok + 1] * ostr[ok + 1]:
                return None
        out[nj - 1] = ostr[oj - 1]
        for nk in range(nj - 1, ni, -1):
            out[nk - 1] = out[nk] * new[nk]
        ni, oi = nj, oj
        nj, oj = nj + 1, oj + 1
    if oi < len(odims):
        return None
    for nk in range(ni, len(new)):  # trailing size-1 dims
        out[nk] = 1
    return tuple(out)


def reshape_view(lw: Lowering, node, params):
    """reshape, flatten, squeeze, unsqueeze: new strides over the same memory when the element
    order allows it (also for a strided input), else a contiguous copy seen with the new shape."""
    x, out = node.inputs[0], node.outputs[0]
    loc = lw.loc(x, ints=True)
    shape = lw.shape(out)
    st = reshape_strides(loc.shape, loc.strides, shape)
    if st is None:
        if lw.is_i64(x):
            raise Unsupported("a copy of int64 elements")
        loc = lw.own(lw.contiguous(loc))
        st = contiguous_strides(shape)
    lw.bind(out, loc.with_view(shape, st))


def split_view(lw: Lowering, node, params):
    """split: each piece a view of the input at its offset along the axis."""
    x = node.inputs[0]
    loc = lw.loc(x, ints=True)
    rank = len(loc.shape)
    if rank == 0 or set(params) - {"sizes", "axis"}:
        raise Unsupported("split options")
    axis = int(params.get("axis", 0)) % rank
    shapes = [lw.shape(o) for o in node.outputs]
    if sum(s[axis] for s in shapes) != loc.shape[axis] \
            or any(tuple(s[:axis]) + tuple(s[axis + 1:])
                   != tuple(loc.shape[:axis]) + tuple(loc.shape[axis + 1:]) for s in shapes):
        raise Unsupported("split shapes")
    off = loc.off
    for o, s in zip(node.outputs, shapes):
        lw.bind(o, loc.with_view(s, loc.strides, off))
        off += s[axis] * loc.strides[axis]


def heads_last_dest(lw: Lowering, value: str) -> Loc | None:
    """Memory for an attention output (batch, heads, seq, dv) laid out as (batch, seq, heads,
    dv) when its only reader swaps heads and seq back: the merge of heads (transpose, then
    reshape to (batch, seq, heads * dv)) is then a view, not a copy. None otherwise."""
    shape = lw.shape(value)
    users = lw.uses.get(value, [])
    if len(shape) != 4 or len(users) != 1 or value in lw.wanted:
        return None
    reader = lw.nodes[users[0]]
    if permutation_of(lw, reader, 4) != (0, 2, 1, 3):
        return None
    b, h, s, dv = (int(d) for d in shape)
    loc = lw.new_alloc(max(1, b * h * s * dv), value)
    return loc.with_view(shape, (s * h * dv, dv, h * dv, 1))


__all__ = ["reshape_strides", "reshape_view", "split_view", "heads_last_dest"]
