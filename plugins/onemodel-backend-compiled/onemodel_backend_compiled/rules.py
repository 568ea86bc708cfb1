"""This plugin's native lowerings of the ops it has instructions for (GEMM, convolution, pools,
rows, attention), and the lowerings an op's traits select: views by kind, pointwise formulas.
Each is ``rule(lowering, node, params)``: it emits and binds the node's outputs, or raises
`Unsupported` (the node then runs its numpy kernel). `lowerings` registers them as
``KernelDef(backend="compiled", lower=...)`` records; another plugin's records of the same kind
are looked up the same way.

A neighbour is recognised by what its record says (an epilogue, a view kind), never by its
name: a GEMM or convolution applies a reader whose op declares an epilogue, through readers
that declare ``view="reshape"``.
"""
from __future__ import annotations

import math

import numpy as np
from onemodel.core.symbolic import evaluate_nested

from . import linear_fusion
from . import program as P
from .instructions import (BY_OPCODE, DIRECT_DW_SMALL, DIRECT_PLAIN, DIRECT_POOL,
                           conv_lanes_scratch)
from .lower import Loc, Lowering, contiguous_strides, squeeze_dims
from .views import heads_last_dest, reshape_view, split_view
from .traits import epilogue_of, full_params, permutation_of, traits_of
from .vm_emit import broadcast_strides, emit_vm
from .pointwise import ADD, MUL, SUB, Unsupported, VMBuilder, formula_code, op_code

ACC = -1


# -- views (by the op's view trait) ----------------------------------------------------------
def permuted_view(lw: Lowering, node, params):
    """``view="permute"``: the axes the op's record says, as strides over the same memory."""
    x, out = node.inputs[0], node.outputs[0]
    loc = lw.loc(x, ints=True)
    axes = permutation_of(lw, node, len(loc.shape))
    if axes is None:
        raise Unsupported("permutation: the record gives none for these params")
    lw.bind(out, loc.with_view(tuple(loc.shape[a] for a in axes),
                               tuple(loc.strides[a] for a in axes)))


def index_view(lw: Lowering, node, params):
    """Basic indexing with positive-step slices, integers, ``None`` and ``...`` (shufflenet's
    channel split) as a view: an offset and strides, no copy."""
    x, out = node.inputs[0], node.outputs[0]
    loc = lw.loc(x, ints=True)
    index = params.get("index")
    if not isinstance(index, (tuple, list)):
        raise Unsupported("index form")
    items = list(index)
    ellipses = [k for k, item in enumerate(items) if isinstance(item, str) and item == "..."]
    consumed = sum(1 for item in items if item is not None and not isinstance(item, str))
    if len(ellipses) > 1 or consumed > len(loc.shape) \
            or any(isinstance(item, str) and item != "..." for item in items):
        raise Unsupported("index form")
    if ellipses:
        k = ellipses[0]
        items[k:k + 1] = [("slice", None, None, None)] * (len(loc.shape) - consumed)
    else:  # the axes after the last item are whole
        items += [("slice", None, None, None)] * (len(loc.shape) - consumed)
    off, shape, strides, axis = loc.off, [], [], 0
    for item in items:
        if item is None:  # a new axis of one element
            shape.append(1)
            strides.append(0)
            continue
        d, st = loc.shape[axis], loc.strides[axis]
        axis += 1
        if isinstance(item, (tuple, list)) and len(item) == 4 and item[0] == "slice":
            start, stop, step = slice(*item[1:]).indices(d)
            if step <= 0:
                raise Unsupported("index: a negative step")
            n = len(range(start, stop, step))
            off += start * st if n else 0
            shape.append(n)
            strides.append(st * step)
        elif isinstance(item, int) and not isinstance(item, bool) and -d <= item < d:
            off += (item % d) * st
        else:  # an index out of range (numpy names it), anything else
            raise Unsupported(f"index item {item!r}")
    if tuple(shape) != tuple(lw.shape(out)) or 0 in shape:
        raise Unsupported("index shape")
    lw.bind(out, loc.with_view(shape, strides, off))


def expand_view(lw: Lowering, node, params):
    x, out = node.inputs[0], node.outputs[0]
    loc = lw.loc(x, ints=True)
    shape = lw.shape(out)
    lw.bind(out, loc.with_view(shape, broadcast_strides(loc, shape)))


# -- GEMM ----------------------------------------------------------------------------------------
def _sum_inputs(lw: Lowering, node):
    """The inputs of a node that is a plain sum of same-shape values (add, or a chain of adds),
    else None."""
    out_shape = lw.shape(node.outputs[0])
    if node.op == "add":
        ins = list(node.inputs)
    elif node.op == "elementwise_chain":
        steps = node.params.get("steps", ())
        if not steps or steps[0][0] != "add" or tuple(steps[0][1]) != (0, 1) or steps[0][2]:
            return None
        for _k, (op, args, p) in enumerate(steps[1:], start=2):
            if op != "add" or p or len(args) != 2 or ACC not in args:
                return None
        used = [j for _, args, _ in steps for j in args if j != ACC]
        if sorted(used) != list(range(len(node.inputs))):
            return None
        ins = list(node.inputs)
    else:
        return None
    if len(set(ins)) != len(ins):
        return None
    if not all(i is not None and lw.is_f32(i) and lw.shape(i) == out_shape for i in ins):
        return None
    return ins


def _accumulate_target(lw: Lowering, node, out_value: str):
    """If ``out_value``'s only reader is a sum node, ``(acc Loc, resid Loc | None)`` to write
    the GEMM into that sum's accumulator; else None."""
    users = lw.uses.get(out_value, [])
    if len(users) != 1 or out_value in lw.wanted:
        return None
    s = lw.nodes[users[0]]
    ins = _sum_inputs(lw, s)
    if ins is None or out_value not in ins:
        return None
    key = id(s)
    if key in lw.accs:
        acc, absorbed = lw.accs[key]
        absorbed.add(ins.index(out_value))
        lw.absorbed.add(out_value)
        return acc, acc
    acc = lw.dest(s.outputs[0])
    absorbed = {ins.index(out_value)}
    resid = None
    for j, other in enumerate(ins):
        if other != out_value and other in lw.locs and lw.locs[other].contiguous:
            resid = lw.locs[other]
            absorbed.add(j)
            break
    lw.accs[key] = (acc, absorbed)
    lw.absorbed.add(out_value)
    return acc, resid


def _act_reader(lw: Lowering, value: str):
    """``(node, activation)``: the reader of a GEMM's output whose op declares an epilogue the
    GEMM has (relu, tanh, sigmoid, GELU erf or tanh), its only reader through views of
    ``view="reshape"`` (GPT-2's MLP: linear, reshape, GELU-tanh), to be applied in the GEMM's
    registers; else None."""
    v = value
    for _ in range(4):
        users = lw.uses.get(v, [])
        if len(users) != 1 or v in lw.wanted:
            return None
        n = lw.nodes[users[0]]
        if traits_of(lw, n.op).view == "reshape" and n.inputs and n.inputs[0] == v:
            v = n.outputs[0]
            continue
        if len(n.inputs) != 1 or n.inputs[0] != v or not lw._lowerable(n) \
                or not lw.is_f32(n.outputs[0]) or _rule_of(lw, n) is not pointwise_rule:
            return None
        ep = epilogue_of(lw, n)
        if ep is None or ep[0] not in P.ACTIVATIONS or ep[1:] != (0.0, 0.0):
            return None
        return n, ep[0]
    return None


def _rule_of(lw: Lowering, node):
    """The lowering ``node`` gets (its op's, or the pointwise one for a formula)."""
    rule = lw.rules.get(node.op)
    if rule is None and traits_of(lw, node.op).pointwise is not None:
        rule = lw.rules.get(POINTWISE)
    return rule


def _gemm(lw: Lowering, node, x: str, n: int, panels_off: int, bias: str | None, act: str | None):
    out = node.outputs[0]
    xl, m, k, lda = lw.matrix(x)
    bias_loc = lw.contiguous(bias) if bias is not None else None
    if bias_loc is not None and bias_loc.size != n:
        raise Unsupported("bias shape")
    target = None if act not in (None, "none") else _accumulate_target(lw, node, out)
    reader = _act_reader(lw, out) if target is None and act in (None, "none") else None
    if reader is not None:
        act = reader[1]
    if target is not None:
        dst, resid = target
    elif reader is not None:  # the memory of the activation's output (the caller's array when
        # it is returned), seen with the GEMM's shape: the same elements in the same order
        fin = lw.dest(reader[0].outputs[0])
        dst, resid = fin.with_view(lw.shape(out), contiguous_strides(lw.shape(out))), None
    else:
        dst, resid = lw.dest(out), None
    lw.emit(P.instruction(P.I_GEMM, xl.addr, lda, m, k, n, P.addr(P.WEIGHTS, panels_off),
                          bias_loc.addr if bias_loc is not None else -1,
                          1 if bias_loc is not None else 0,
                          resid.addr if resid is not None else -1, n, dst.addr, n,
                          P.ACTIVATIONS[act]))
    if target is None:
        lw.bind(out, dst)
    if reader is not None:  # its output is the GEMM's, activated (pointwise_rule binds it)
        lw.fused[id(reader[0])] = fin


def linear_rule(lw: Lowering, node, params):
    if id(node) in lw.fused:  # computed by the GEMM of a linear before it (linear_fusion)
        loc = lw.fused.pop(id(node))
        if loc is not None:
            lw.bind(node.outputs[0], loc)
        return
    if linear_fusion.stacked_sum(lw, node, _sum_inputs, _group_act) \
            or linear_fusion.shared_input(lw, node, _group_act, _sum_inputs):
        return
    x, w, b = (list(node.inputs) + [None])[:3]
    if w not in lw.consts or not lw.is_f32(x) or (b is not None and not lw.is_f32(b)):
        raise Unsupported("run-time weight")
    W = np.asarray(lw.consts[w])
    if W.ndim != 2 or W.dtype != np.float32:
        raise Unsupported("weight")
    off = lw.weights.panels((lw.const_key(w), "^T"), lambda: W.T)
    _gemm(lw, node, x, W.shape[0], off, b, _group_act(node))


def _group_act(node):
    """The activation a linear applies in its own node (a separate activation node stays)."""
    act = node.params.get("activation", "relu" if node.op == "fused_linear" else None)
    return None if act in (None, "none") else act


def matmul_rule(lw: Lowering, node, params):
    a, b = node.inputs[:2]
    ta, tb = params.get("transpose_a", False), params.get("transpose_b", False)
    if not (lw.is_f32(a) and lw.is_f32(b)):
        raise Unsupported("dtype")
    if len(lw.shape(a)) < 2 or len(lw.shape(b)) < 2:
        raise Unsupported("1-D matmul")
    if b in lw.consts and len(lw.shape(b)) == 2 and not ta:
        B = np.asarray(lw.consts[b])
        off = lw.weights.panels((lw.const_key(b), "^T") if tb else lw.const_key(b),
                                lambda: B.T if tb else B)
        _gemm(lw, node, a, B.shape[0] if tb else B.shape[1], off, None, None)
        return
    al, bl = lw.loc(a), lw.loc(b)
    if ta:
        al = _swap_last(al)
    if tb:
        bl = _swap_last(bl)
    out = node.outputs[0]
    oshape = lw.shape(out)
    batch = oshape[:-2]
    m, k, n = al.shape[-2], al.shape[-1], bl.shape[-1]
    if al.shape[:-2] != tuple(batch):
        raise Unsupported("broadcast a")
    nb = math.prod(batch)
    if al.strides[-1] != 1:
        al = lw.contiguous(al)
    sa = _batch_stride(al, nb)
    if sa is None:
        al = lw.contiguous(al)
        sa = _batch_stride(al, nb)
    if bl.shape[:-2] == tuple(batch):
        sb = _batch_stride(bl, nb)
        if sb is None:
            bl = lw.contiguous(bl)
            sb = _batch_stride(bl, nb)
    elif math.prod(bl.shape[:-2]) == 1:
        sb = 0
    else:
        raise Unsupported("broadcast b")
    dst = lw.dest(out)
    scratch = lw.scratch(((n + 15) // 16) * 16 * k)
    lw.emit(P.instruction(P.I_BMM, nb, al.addr, sa, al.strides[-2], bl.addr, sb,
                          bl.strides[-2], bl.strides[-1], dst.addr, m * n, m, k, n, 0,
                          scratch.addr))
    lw.bind(out, dst)


def _swap_last(loc: Loc) -> Loc:
    s, st = list(loc.shape), list(loc.strides)
    s[-1], s[-2], st[-1], st[-2] = s[-2], s[-1], st[-2], st[-1]
    return loc.with_view(s, st)


def _batch_stride(loc: Loc, nb: int):
    """One stride walking the batch dims of ``loc``, or None when they do not collapse."""
    if nb == 1:
        return 0
    shape, strides = squeeze_dims(loc.shape[:-2], loc.strides[:-2])
    return strides[0] if len(shape) == 1 else None


# -- conv and pooling ----------------------------------------------------------------------------
def _pair(v, name):
    if isinstance(v, int):
        return v, v
    if isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(i, int) for i in v):
        return int(v[0]), int(v[1])
    if isinstance(v, (tuple, list)) and len(v) == 1 and isinstance(v[0], int):
        return int(v[0]), int(v[0])
    raise Unsupported(f"{name} {v!r}")


def conv_rule(lw: Lowering, node, params):
    x, w, b = (list(node.inputs) + [None])[:3]
    if w not in lw.consts or not lw.is_f32(x) or (b is not None and not lw.is_f32(b)):
        raise Unsupported("run-time weight")
    if set(params) - {"stride", "padding", "dilation", "groups", "activation"}:
        raise Unsupported("conv options")
    W = np.asarray(lw.consts[w])
    if W.ndim != 4 or len(lw.shape(x)) != 4:
        raise Unsupported("conv rank")
    if params.get("activation") not in P.CONV_ACTIVATIONS:
        raise Unsupported(f"activation {params.get('activation')!r}")
    sh, sw = _pair(params.get("stride", 1), "stride")
    ph, pw = _pair(params.get("padding", 0), "padding")
    dh, dw = _pair(params.get("dilation", 1), "dilation")
    g = int(params.get("groups", 1))
    cin, cout = lw.shape(x)[1], lw.shape(node.outputs[0])[1]
    if W.dtype != np.float32 or g < 1 or cout % g or cin % g or min(sh, sw, dh, dw) < 1 \
            or min(ph, pw) < 0:
        raise Unsupported("conv weight dtype, grouping, stride or padding")
    pro = lw.fused.pop(("prologue", id(node)), None)  # batch norm + ReLU on its input
    src = x if pro is None else pro[0]
    xl = lw.contiguous(src)
    bl = lw.contiguous(b) if b is not None else None
    _conv_direct(lw, node, params, xl, bl, W, (sh, sw), (ph, pw), (dh, dw), g,
                 None if pro is None else pro[1:4])
    if pro is not None and lw.last_use.get(src) == pro[4]:  # kept alive for this node
        loc = lw.locs.get(src)
        refs = lw.alloc_refs.get(loc.alloc) if loc is not None and loc.alloc is not None else None
        if refs is not None:
            refs.discard(src)
            if not refs:
                lw._free(loc.alloc)


def conv1d_rule(lw: Lowering, node, params):
    """A 1-d convolution as a 2-d one over a single row: the input (N, C, L) is (N, C, 1, L),
    the weight (O, C/g, k) is (O, C/g, 1, k), stride, padding and dilation apply along the
    row, so every kernel the 2-d convolution chooses (direct, implicit GEMM, 1x1, depthwise)
    serves it, with a following activation fused as there."""
    x, w, b = (list(node.inputs) + [None])[:3]
    if w not in lw.consts or not lw.is_f32(x) or (b is not None and not lw.is_f32(b)):
        raise Unsupported("run-time weight")
    if set(params) - {"stride", "padding", "dilation", "groups"}:
        raise Unsupported("conv options")
    W = np.asarray(lw.consts[w])
    if W.ndim != 3 or len(lw.shape(x)) != 3:
        raise Unsupported("conv rank")
    s, pad, d = (_pair(params.get(k, v), k)[0] for k, v in
                 (("stride", 1), ("padding", 0), ("dilation", 1)))
    g = int(params.get("groups", 1))
    (n, cin, length), (_, cout, lo) = lw.shape(x), lw.shape(node.outputs[0])
    if W.dtype != np.float32 or g < 1 or cout % g or cin % g or min(s, d) < 1 or pad < 0:
        raise Unsupported("conv weight dtype, grouping, stride or padding")
    xl = lw.contiguous(x)
    row = xl.with_view((n, cin, 1, length), contiguous_strides((n, cin, 1, length)))
    bl = lw.contiguous(b) if b is not None else None
    _conv_direct(lw, node, {}, row, bl, W[:, :, None, :], (1, s), (0, pad), (1, d), g,
                 out_shape=(n, cout, 1, lo))


def pack_conv_weights(W: np.ndarray, groups: int) -> np.ndarray:
    """(cout, cin/g, kh, kw) as [g][cout/g rounded up to 4, by fours][k][4] (zero rows added),
    the layout of the stride-1 convolution kernel."""
    cout = W.shape[0]
    cog = cout // groups
    cog4 = (cog + 3) // 4 * 4
    k = int(np.prod(W.shape[1:]))
    wg = np.zeros((groups, cog4, k), np.float32)
    wg[:, :cog] = W.reshape(groups, cog, k)
    return np.ascontiguousarray(wg.reshape(groups, cog4 // 4, 4, k).transpose(0, 1, 3, 2))


def pack_lanes_weights(W: np.ndarray) -> np.ndarray:
    """(cout, cin, kh, kw) of one group as [cout / 32][k][32] (a last block of 16 as
    [k][16]): om_conv_lanes.h's layout, one row of a block's weights per reduction step."""
    cout = W.shape[0]
    wf = W.reshape(cout, -1)
    blocks = [wf[c0:c0 + min(32, cout - c0)].T.reshape(-1) for c0 in range(0, cout, 32)]
    return np.ascontiguousarray(np.concatenate(blocks), dtype=np.float32)


def _pool_after(lw: Lowering, conv_out: str):
    """The 2x2 stride-2 max pool that is the only reader of ``conv_out``, or None."""
    users = lw.uses.get(conv_out, [])
    if len(users) != 1 or conv_out in lw.wanted:
        return None
    node = lw.nodes[users[0]]
    if node.op != "max_pool2d" or node.inputs[0] != conv_out or not lw._lowerable(node):
        return None
    params = node.params
    if set(params) - {"kernel_size", "stride", "padding", "dilation", "ceil_mode",
                      "count_include_pad", "return_indices"} or params.get("ceil_mode") \
            or params.get("return_indices"):
        return None
    try:
        stride = params.get("stride")
        ok = (_pair(params["kernel_size"], "k") == (2, 2)
              and _pair(stride if stride not in (None, ()) else 2, "s") == (2, 2)
              and _pair(params.get("padding", 0), "p") == (0, 0)
              and _pair(params.get("dilation", 1), "d") == (1, 1))
    except (Unsupported, KeyError):
        return None
    n, c, ho, wo = lw.shape(conv_out)
    if not ok or lw.shape(node.outputs[0]) != (n, c, ho // 2, wo // 2) or ho < 2 or wo < 2:
        return None
    return node


def _reader_activation(lw: Lowering, node):
    """``(code, p0, p1)`` of the conv epilogue computing this one-input node (its record's
    epilogue trait), or None."""
    ep = epilogue_of(lw, node)
    if ep is None or ep[0] not in P.CONV_ACTIVATIONS:
        return None
    return (P.CONV_ACTIVATIONS[ep[0]], *ep[1:])


def _reader_after(lw: Lowering, conv_out: str):
    """``(node, (code, p0, p1))``: the activation (ReLU6's clip, hardswish, hardsigmoid, SiLU's
    swish, ...) that is the only reader of ``conv_out``, computed in the convolution's tiles
    instead of a pass of its own; or None."""
    users = lw.uses.get(conv_out, [])
    if len(users) != 1 or conv_out in lw.wanted:
        return None
    node = lw.nodes[users[0]]
    if len(node.inputs) != 1 or node.inputs[0] != conv_out or len(node.outputs) != 1 \
            or not lw._lowerable(node) or lw.shape(node.outputs[0]) != lw.shape(conv_out):
        return None
    if _rule_of(lw, node) is not pointwise_rule:  # the rule that binds its output to the conv's
        return None
    act = _reader_activation(lw, node)
    return None if act is None else (node, act)


def conv_gemm_rows(k: int, m: int) -> int:
    """Rows of A per block in conv_gemm (om_conv_gemm.h's conv_gemm_rows)."""
    return min(m, max(6, 98304 // max(k, 1) // 6 * 6))


def _conv_direct(lw: Lowering, node, params, xl: Loc, bl, W, stride, pad, dil, g, pro=None,
                 out_shape=None):
    """Convolution on the shifted-slice kernel (see om_kernels.h; a stride above 1 through
    phase planes), with a following 2x2 max pool fused in when the pool is the convolution's
    only reader. ``pro``: the weight offsets of a batch norm's mean, scale and shift, applied
    with a ReLU to the input as it is copied in (see batch_norm_rule). ``out_shape``: the
    output as (N, C, H, W) where its value has another rank (conv1d_rule)."""
    n, cin, h, wd = xl.shape
    out = node.outputs[0]
    _, cout, ho, wo = out_shape or lw.shape(out)
    kh, kw = W.shape[2], W.shape[3]
    (sh, sw), (ph, pw), (dh, dw) = stride, pad, dil
    hp, wfull = h + 2 * ph, wd + 2 * pw
    if (ho, wo) != ((hp - (kh - 1) * dh - 1) // sh + 1, (wfull - (kw - 1) * dw - 1) // sw + 1):
        raise Unsupported("conv output shape")
    if (sh, sw) == (1, 1):
        wp = wd + pw  # rows share their padding (om_kernels.h)
        plane = hp * wp + pw
    else:
        wp = -(-wfull // sw)
        plane = -(-hp // sh) * wp
    cig, cog = cin // g, cout // g
    k = cig * kh * kw
    cog4 = (cog + 3) // 4 * 4
    nq = (ho - 1) * wp + wo
    nqr = (nq + 23) // 24 * 24
    xpn = cig * sh * sw * plane + 24 + wp
    act, p0, p1 = P.CONV_ACTIVATIONS[params.get("activation")], 0.0, 0.0
    reader = _reader_after(lw, out) if act == 0 else None
    last = out
    if reader is not None:
        (act, p0, p1), last = reader[1], reader[0].outputs[0]
    pool = _pool_after(lw, last)
    dst = lw.dest(pool.outputs[0] if pool is not None else last)
    if pool is not None:
        lw.fused[id(pool)] = dst
    if reader is not None:  # its output is only the pool's input when pooled: never stored
        lw.fused[id(reader[0])] = dst if pool is None else None
    pro_fields = [-1, -1, -1] if pro is None else [P.addr(P.WEIGHTS, o) for o in pro]
    is_1x1 = pool is None and (kh, kw, sh, sw, ph, pw, g) == (1, 1, 1, 1, 0, 0, 1)
    one_gemm_1x1 = is_1x1 and lw.heuristics.conv.one_gemm_1x1_wins(cin, h * wd, n, pro is not None,
                                                                    cout)
    small_1x1 = is_1x1 and h * wd <= lw.heuristics.conv.one_gemm_1x1_max_positions
    if one_gemm_1x1:  # channels first as W x (om_conv1x1.h)
        woff = lw.weights.offset(("1x1", lw.const_key(node.inputs[1])),
                                 lambda: W.reshape(cout, cin))
        s16 = -(-(h * wd) // 16) * 16
        scratch = lw.scratch(n * s16 * (cin + (cout if (h * wd) % 16 else 0)))
        lw.emit(P.instruction(P.I_CONV1X1, xl.addr, n, cin, h * wd, cout,
                              P.addr(P.WEIGHTS, woff), bl.addr if bl is not None else -1,
                              act, dst.addr, scratch.addr, P.fbits(p0), P.fbits(p1),
                              *pro_fields, 1))
    elif pool is None and g == 1 and (lw.heuristics.conv.gemm_wins(cin, kh, kw, stride, ho, wo)
                                      or small_1x1 and pro is not None
                                      or lw.heuristics.conv.gemm_columns_win(
                                          cin, kh, kw, stride, n, ho, wo)) \
            and not lw.heuristics.conv.lanes_before_gemm(g, cin, cout, kh, kw, stride, wo):
        k = cin * kh * kw
        cols = lw.heuristics.conv.gemm_columns_win(cin, kh, kw, stride, n, ho, wo)
        if cols:  # channels first: W as it is (om_conv_gemm.h's conv_gemm_cols)
            wts = lw.weights.offset(("cols", lw.const_key(node.inputs[1])),
                                    lambda: W.reshape(cout, k))
        else:
            wts = lw.weights.panels((lw.const_key(node.inputs[1]), "^gemm"),
                                    lambda: W.reshape(cout, k).T)
        fields = [xl.addr, n, cin, h, wd, cout, kh, kw, ph, pw, dh, dw, sh, sw, ho, wo,
                  P.addr(P.WEIGHTS, wts), bl.addr if bl is not None else -1, act, dst.addr,
                  0, P.fbits(p0), P.fbits(p1), *pro_fields, 1 if cols else 0]
        scratch = lw.scratch(BY_OPCODE[P.I_CONV_GEMM].scratch[1](fields))
        fields[20] = scratch.addr
        lw.emit(P.instruction(P.I_CONV_GEMM, *fields))
    elif small_1x1:  # positions first, both sides transposed (om_conv1x1.h)
        panels = lw.weights.panels((lw.const_key(node.inputs[1]), "^1x1"),
                                   lambda: W.reshape(cout, cin).T)
        scratch = lw.scratch((n * h * wd * cin + 15) // 16 * 16 + n * h * wd * cout)
        lw.emit(P.instruction(P.I_CONV1X1, xl.addr, n, cin, h * wd, cout,
                              P.addr(P.WEIGHTS, panels), bl.addr if bl is not None else -1,
                              act, dst.addr, scratch.addr, P.fbits(p0), P.fbits(p1),
                              *pro_fields, 0))
    elif lw.heuristics.conv.lanes_win(g, cin, cout, kh, kw, stride, pool is not None):
        # channels in the lanes (om_conv_lanes.h): the same fields as conv2d_direct
        woff = lw.weights.offset(("lanes", lw.const_key(node.inputs[1])),
                                 lambda: pack_lanes_weights(W))
        fields = [xl.addr, n, cin, h, wd, cout, kh, kw, ph, pw, dh, dw, 1, ho, wo,
                  P.addr(P.WEIGHTS, woff), bl.addr if bl is not None else -1, act, dst.addr,
                  0, DIRECT_POOL if pool is not None else DIRECT_PLAIN, sh, sw, P.fbits(p0), P.fbits(p1),
                  *pro_fields, 0]
        need = conv_lanes_scratch(fields)
        fields[19], fields[28] = lw.scratch(need).addr, need
        lw.emit(P.instruction(P.I_CONV_LANES, *fields))
    else:
        mode = DIRECT_POOL if pool is not None else DIRECT_PLAIN
        if cig == 1 and cog == 1 and pool is None and pro is None \
                and lw.heuristics.conv.dw_small_wins(kh, kw, stride, ho * wo):
            mode = DIRECT_DW_SMALL  # depthwise on dw_small (else on dw_direct's rows)
        woff = lw.weights.offset(("conv4", lw.const_key(node.inputs[1]), g),
                                 lambda: pack_conv_weights(W, g))
        fields = [xl.addr, n, cin, h, wd, cout, kh, kw, ph, pw, dh, dw, g, ho, wo,
                  P.addr(P.WEIGHTS, woff), bl.addr if bl is not None else -1, act, dst.addr,
                  0, mode, sh, sw, P.fbits(p0), P.fbits(p1), *pro_fields, 0]
        # the layout of conv_direct_range (om_kernels.h): padded input, tiles, koff, the
        # phase planes' row buffer, and the table's formula for the mode (dw_small's block,
        # dw_direct's rows); the instruction carries it for a worker's own scratch
        need = max((xpn + 15) // 16 * 16 + cog4 * nqr + 32 + 2 * k + 2 + wp * sw + 16,
                   BY_OPCODE[P.I_CONV_DIRECT].scratch[1](fields))
        fields[19], fields[28] = lw.scratch(need).addr, need
        lw.emit(P.instruction(P.I_CONV_DIRECT, *fields))
    if pool is None and reader is None:
        lw.bind(out, dst)


def pool_rule(opcode):
    def rule(lw: Lowering, node, params):
        x, out = node.inputs[0], node.outputs[0]
        if id(node) in lw.fused:  # computed by the convolution before it
            lw.bind(out, lw.fused.pop(id(node)))
            return
        if len(lw.shape(x)) != 4:
            raise Unsupported("pool rank")
        # ceil mode: only the output size changes (given); a max pool's windows are clipped at
        # the edges (an average pool's divisor would differ)
        if _pair(params.get("dilation", 1), "dilation") != (1, 1) \
                or (params.get("ceil_mode") and opcode != P.I_MAXPOOL) \
                or not params.get("count_include_pad", True) \
                or params.get("return_indices") \
                or set(params) - {"kernel_size", "stride", "padding", "dilation", "ceil_mode",
                                  "count_include_pad", "return_indices"}:
            raise Unsupported("pool options")
        kh, kw = _pair(params["kernel_size"], "kernel_size")
        stride = params.get("stride")
        sh, sw = _pair(stride if stride not in (None, ()) else (kh, kw), "stride")
        ph, pw = _pair(params.get("padding", 0), "padding")
        n, c, h, w = lw.shape(x)
        _, _, ho, wo = lw.shape(out)
        xl = lw.contiguous(x)
        dst = lw.dest(out)
        lw.emit(P.instruction(opcode, xl.addr, n * c, h, w, kh, kw, sh, sw, ph, pw, ho, wo,
                              dst.addr))
        lw.bind(out, dst)
    return rule


def concat_rule(lw: Lowering, node, params):
    """concat as each input's rows copied into their place in the rows of one output buffer
    (a row: the concat axis and the axes after it)."""
    out = node.outputs[0]
    ins = list(node.inputs)
    if not ins or any(v is None or not lw.is_f32(v) for v in ins) or set(params) - {"axis"}:
        raise Unsupported("concat inputs")
    shape = lw.shape(out)
    axis = int(params.get("axis", 0)) % len(shape)
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    dst = lw.dest(out)
    fields, off = [], 0
    for v in ins:
        n = lw.shape(v)[axis] * inner
        if n:
            fields += [lw.contiguous(v).addr, n, off]
        off += n
    lw.emit(P.instruction(P.I_CONCAT, dst.addr, outer, shape[axis] * inner, len(fields) // 3,
                          *fields))
    lw.bind(out, dst)


def _conv_reads_bn_relu(lw: Lowering, bn):
    """``(relu, conv, index of conv)`` when the batch norm's only reader is a ReLU whose only
    reader is a one-group convolution this module lowers (DenseNet's norm, relu, conv on every
    concatenation): the convolution then normalises its input as it copies it in, and neither
    the normalised nor the rectified map is stored. None otherwise."""
    def only_reader(value):
        users = lw.uses.get(value, [])
        return lw.nodes[users[0]] if len(users) == 1 and value not in lw.wanted else None

    relu = only_reader(bn.outputs[0])
    if relu is None or list(relu.inputs) != [bn.outputs[0]] or not lw._lowerable(relu) \
            or (epilogue_of(lw, relu) or ("",))[0] != "relu":
        return None
    conv = only_reader(relu.outputs[0])
    if _rule_of(lw, relu) is not pointwise_rule or conv is None \
            or lw.rules.get(conv.op) is not conv_rule \
            or conv.inputs[0] != relu.outputs[0] or not lw._lowerable(conv):
        return None
    params = evaluate_nested(dict(conv.params), lw.env)
    w, b = (list(conv.inputs) + [None, None])[1:3]
    wv = lw.consts.get(w)
    try:
        ok = (wv is not None and np.asarray(wv).dtype == np.float32 and np.ndim(wv) == 4
              and (b is None or lw.is_f32(b)) and int(params.get("groups", 1)) == 1
              and not set(params) - {"stride", "padding", "dilation", "groups", "activation"}
              and params.get("activation") in P.CONV_ACTIVATIONS
              and min(*_pair(params.get("stride", 1), "s"),
                      *_pair(params.get("dilation", 1), "d")) >= 1
              and min(_pair(params.get("padding", 0), "p")) >= 0)
    except (Unsupported, TypeError, ValueError):
        return None
    return (relu, conv, lw.uses[relu.outputs[0]][0]) if ok else None


def batch_norm_rule(lw: Lowering, node, params):
    """Evaluation batch norm with constant statistics as one pointwise pass,
    ``(x - mean) * (invstd * weight) + bias``, the per-channel vectors in the weight block
    (the ones no convolution before it absorbed: DenseNet normalises concatenations). Followed
    by a ReLU and a convolution, each the only reader, it is no pass at all: the convolution
    applies both to its input as it copies it in (`_conv_reads_bn_relu`, om_prologue.h)."""
    x, mean, var, w, b = (list(node.inputs) + [None] * 5)[:5]
    if params.get("training") or set(params) - {"training", "momentum", "eps"} \
            or mean is None or var is None or not lw.is_f32(x) or len(lw.shape(x)) < 2 \
            or any(v is not None and v not in lw.consts for v in (mean, var, w, b)):
        raise Unsupported("batch_norm: training, run-time statistics or options")
    c, nd = lw.shape(x)[1], len(lw.shape(x))
    vec = {k: np.asarray(lw.consts[v]) for k, v in (("m", mean), ("v", var), ("w", w), ("b", b))
           if v is not None}
    if any(a.dtype != np.float32 or a.shape != (c,) for a in vec.values()):
        raise Unsupported("batch_norm: statistics dtype or shape")
    scale = np.float32(1.0) / np.sqrt(vec["v"] + np.float32(params.get("eps", 1e-5)))
    if "w" in vec:
        scale = scale * vec["w"]
    arrays = {"m": vec["m"], "s": scale, "b": vec.get("b")}
    target = _conv_reads_bn_relu(lw, node) if nd == 4 else None
    if target is not None:  # the convolution applies it (and the ReLU) to its input
        relu, conv, at = target
        keys = tuple(lw.const_key(v) for v in (mean, var, w, b) if v is not None)
        zero = np.zeros(c, np.float32)
        offs = [lw.weights.plain((node.outputs[0], "pro", k, *keys), a if a is not None else zero)
                for k, a in arrays.items()]
        lw.fused[("prologue", id(conv))] = (x, *offs, at)
        lw.fused[id(relu)] = None  # never stored
        lw.last_use[x] = max(lw.last_use.get(x, at), at)
        return
    vm, extra = VMBuilder(), {}
    bshape = (1, c) + (1,) * (nd - 2)
    for k, a in arrays.items():
        if a is not None:
            off = lw.weights.plain((node.outputs[0], k, *(lw.const_key(v) for v in (
                mean, var, w, b) if v is not None)), a)
            extra[f"__bn_{k}__"] = Loc(P.WEIGHTS, off, bshape, contiguous_strides(bshape))
    r = vm.op(SUB, vm.load(x), vm.load("__bn_m__"))
    r = vm.op(MUL, r, vm.load("__bn_s__"))
    if "__bn_b__" in extra:
        r = vm.op(ADD, r, vm.load("__bn_b__"))
    vm.finish(r)
    emit_vm(lw, vm, None, extra)


def mean_rule(lw: Lowering, node, params):
    """mean over trailing axes (global average pool: (2, 3) of NCHW) as the mean of each
    contiguous row; keepdims or not, the elements keep their order."""
    x, out = node.inputs[0], node.outputs[0]
    shape = lw.shape(x)
    if not lw.is_f32(x) or set(params) - {"axis", "keepdims"}:
        raise Unsupported("mean options")
    axis = params.get("axis")
    rank = len(shape)
    axes = range(rank) if axis is None else [axis] if isinstance(axis, int) else axis
    axes = sorted({int(a) % rank for a in axes}) if rank else []
    if not axes or axes != list(range(rank - len(axes), rank)):
        raise Unsupported("mean over inner axes")
    cols = math.prod(shape[rank - len(axes):])
    xl = lw.contiguous(x)
    dst = lw.dest(out)
    lw.emit(P.instruction(P.I_MEAN_ROWS, xl.addr, xl.size // cols, cols, dst.addr))
    lw.bind(out, dst)


# -- rows: softmax, layer norm, attention --------------------------------------------------------
def softmax_rule(lw: Lowering, node, params):
    x, out = node.inputs[0], node.outputs[0]
    shape = lw.shape(x)
    if params.get("axis", -1) % len(shape) != len(shape) - 1:
        raise Unsupported("softmax over an inner axis")
    xl = lw.contiguous(x)
    dst = lw.dest(out)
    lw.emit(P.instruction(P.I_SOFTMAX, xl.addr, dst.addr, xl.size // shape[-1], shape[-1]))
    lw.bind(out, dst)


def layer_norm_rule(lw: Lowering, node, params):
    x, g, b = (list(node.inputs) + [None, None])[:3]
    out = node.outputs[0]
    cols = math.prod(params["normalized_shape"])
    xl = lw.contiguous(x)
    gl = lw.contiguous(g) if g is not None else None
    bl = lw.contiguous(b) if b is not None else None
    dst = lw.dest(out)
    lw.emit(P.instruction(P.I_LAYERNORM, xl.addr, dst.addr, xl.size // cols, cols,
                          gl.addr if gl is not None else -1, bl.addr if bl is not None else -1,
                          P.fbits(params.get("eps", 1e-5))))
    lw.bind(out, dst)


def _attn_operand(lw: Lowering, loc: Loc, batch) -> list[int]:
    if loc.strides[-1] != 1:
        loc = lw.contiguous(loc)
    st = [0] * (2 - len(batch)) + list(loc.strides[:-2])
    return [loc.addr, st[0], st[1], loc.strides[-2]]


def attention_rule(lw: Lowering, node, params):
    q, k, v = node.inputs[:3]
    mask = node.inputs[3] if len(node.inputs) > 3 else None
    if mask is not None and not (lw.is_f32(mask) or lw.is_bool(mask)):
        raise Unsupported("attention mask dtype")
    if not all(lw.is_f32(t) for t in (q, k, v)):
        raise Unsupported("dtype")
    ql, kl, vl = lw.loc(q), lw.loc(k), lw.loc(v)
    batch = ql.shape[:-2]
    if kl.shape[:-2] != batch or vl.shape[:-2] != batch or len(batch) > 2:
        raise Unsupported("attention batch dims")
    out = node.outputs[0]
    sq, d = ql.shape[-2:]
    sk, dv = vl.shape[-2:]
    ops_ = [_attn_operand(lw, loc, batch) for loc in (ql, kl, vl)]
    dst = heads_last_dest(lw, out) or lw.dest(out)
    ost = list(dst.strides[:-2])
    ost = [0] * (2 - len(batch)) + ost
    nb = [1] * (2 - len(batch)) + list(batch)
    scratch = lw.scratch((sk + 15) // 16 * 16 * d + sq * sk + (dv + 15) // 16 * 16 * sk + sq)
    extra = []
    if mask is not None:  # its strides broadcast to the scores (batch..., sq, sk)
        ml = lw.loc(mask)
        mst = broadcast_strides(ml, tuple(batch) + (sq, sk))
        mst = (0,) * (2 - len(batch)) + tuple(mst)
        extra = [ml.addr, *mst, 1 if lw.is_bool(mask) else 0]
    lw.emit(P.instruction(P.I_ATTN_MASK if extra else P.I_ATTN, nb[0], nb[1], sq, sk, d, dv,
                          P.fbits(1.0 / math.sqrt(d)), *ops_[0], *ops_[1], *ops_[2], dst.addr,
                          ost[0], ost[1], dst.strides[-2], scratch.addr, *extra))
    lw.bind(out, dst)


# -- pointwise -----------------------------------------------------------------------------------
def _formula_of(lw: Lowering, op_name: str, params):
    op = lw.ops.get(op_name)
    pw = getattr(getattr(op, "traits", None), "pointwise", None)
    if pw is None:
        return None
    try:
        return pw.expression(op.inputs, full_params(lw, op_name, params))
    except Exception:  # noqa: BLE001 - a formula we cannot read: no native lowering
        return None


def _step(lw: Lowering, vm: VMBuilder, op_name: str, params, regs):
    op = lw.ops.get(op_name)
    names = tuple(i.rstrip("?*") for i in op.inputs) if op is not None else ()
    try:
        return op_code(vm, op_name, params, regs)
    except Unsupported:
        tree = _formula_of(lw, op_name, params)
        if tree is None:
            raise Unsupported(f"{op_name}: no formula for these params") from None
        vm.pinned.update(regs)  # a formula may read an input more than once
        try:
            return formula_code(vm, tree, dict(zip(names, regs)))
        finally:
            vm.pinned.difference_update(regs)


def pointwise_rule(lw: Lowering, node, params):
    """One VM loop for a pointwise node or an ``elementwise_chain`` (or the rest of a sum whose
    linears were accumulated in place)."""
    out = node.outputs[0]
    key = id(node)
    if key in lw.fused:  # computed in the tiles of the convolution before it
        loc = lw.fused.pop(key)
        if loc is not None:
            lw.bind(out, loc)
        return
    if key in lw.accs:
        acc, absorbed = lw.accs.pop(key)
        rest = [v for j, v in enumerate(_sum_inputs(lw, node)) if j not in absorbed]
        if rest:
            vm = VMBuilder()
            regs = [vm.load("__acc__")] + [vm.load(v) for v in rest]
            r = regs[0]
            for q in regs[1:]:
                r = vm.op(ADD, r, q, dst=r)
            vm.finish(r)
            emit_vm(lw, vm, acc, {"__acc__": acc})
        lw.bind(out, acc)
        return
    vm = VMBuilder()

    def load(v):
        return vm.load_bool(v) if lw.is_bool(v) else vm.load(v)

    if node.op == "elementwise_chain":
        acc = None
        for op_name, args, sparams in params["steps"]:
            regs = [acc if j == ACC else load(node.inputs[j]) for j in args]
            acc = _step(lw, vm, op_name, dict(sparams), regs)
    else:
        regs = [load(v) for v in node.inputs if v is not None]
        acc = _step(lw, vm, node.op, params, regs)
    if not _vm_dtypes_ok(lw, node, vm.inputs, acc in vm.bools):
        raise Unsupported("dtype")
    vm.finish(acc)
    emit_vm(lw, vm, None, {})


def _vm_dtypes_ok(lw: Lowering, node, inputs, bool_result: bool) -> bool:
    """float32 or bool inputs (bools are 0.0 / 1.0, numpy's promotion); a float32 result, or a
    bool one when the program's result is a bool (a comparison, a logical op, isnan /
    isfinite, or mul / maximum / minimum / where of bools: and, or, select)."""
    if not all(lw.is_f32(v) or lw.is_bool(v) for v in inputs):
        return False
    return lw.is_f32(node.outputs[0]) or (lw.is_bool(node.outputs[0]) and bool_result)


#: the lowerings of ops by name (this plugin's instructions for them); `lowerings` adds the
#: text and recurrent ones and registers all of them as records
RULES = {
    "index": index_view,
    "linear": linear_rule, "fused_linear": linear_rule,
    "matmul": matmul_rule, "matmul_t": matmul_rule,
    "conv2d": conv_rule, "fused_conv2d": conv_rule, "conv1d": conv1d_rule,
    "max_pool2d": pool_rule(P.I_MAXPOOL), "avg_pool2d": pool_rule(P.I_AVGPOOL),
    "softmax": softmax_rule, "layer_norm": layer_norm_rule, "mean": mean_rule,
    "concat": concat_rule, "batch_norm": batch_norm_rule,
    "scaled_dot_product_attention": attention_rule,
    "elementwise_chain": pointwise_rule,
    "split": split_view,
}
#: the lowerings an op's traits select, by view kind (``slice`` ops have their own above)
VIEW_RULES = {"reshape": reshape_view, "permute": permuted_view, "expand": expand_view}
#: the lowering of every op declaring a pointwise formula (its key is no op name)
POINTWISE = "*pointwise"

__all__ = ["RULES", "VIEW_RULES", "POINTWISE", "pointwise_rule"]
