"""What the native executor may trust from a plan: every instruction checked against the
buffers of the run that will execute it, before any native code runs it.

The executor (csrc/om_kernels.h and the headers it includes) checks nothing: an address past its
buffer, a negative size, a VM register past the end or a stride that walks off a buffer crashes
the process or writes over memory. A plan lowered in this process is right by construction; a
plan read from the on-disk cache (plan_cache.py) is data from a file, so `check` is called on it
(plan_codec's decode), and a plan that fails raises `UnsafePlan` (a `plan_codec.BadEntry`: the
entry is discarded and the signature lowered anew). With $ONEMODEL_CHECK_LOWERED_PLANS set to 1
(the test suites do) every plan lowered is checked too, which is how the tests show that no plan
the lowering makes is refused.

Per instruction: the length its opcode has and every field by its kind, both from the
instruction table (instructions.py: every count in [1, MAX_COUNT], every stride and padding in
[0, MAX_COUNT], every code one its field allows, every address in a buffer of the run at a
multiple of its element's size (addresses count bytes; strides and sizes count elements), -1
only where the field may be none); then one check function per opcode (`GEOMETRY`): every
address inside its buffer with the whole extent the C kernel reads or writes through it (rows,
columns, strides, channels, windows, groups, heads, the scratch each kernel lays out, including
the slack its vector loops read past a row), for the sizes of THIS run in bytes: the weight
block's used part, the arena the plan declares, each feed and each output as the run's shapes
make them (a plan stored for another batch reads past the feeds and is refused); the geometry of
windows (an output size that is what the input, window, stride, padding and dilation give);
activation, mode and flag codes that the kernels know; VM registers, inputs and constants in
range. The arena itself must be an int in [0, MAX_ARENA_BYTES] (checked before anything is
allocated).
"""
from __future__ import annotations

import math
import os

import numpy as np

from onemodel.errors import OneModelError

from . import instructions as T
from . import program as P
from .instructions import CONV_ACTS, GEMM_ACTS
from .plan_codec import BadEntry

#: the largest scratch arena a plan may declare, in bytes (16 GiB)
MAX_ARENA_BYTES = 1 << 34
#: the largest count, stride or padding in an instruction (an offset's 40 bits)
MAX_COUNT = (1 << P.BUF_SHIFT) - 1
#: a pool's window per axis (a convolution's is bounded by its scratch)
MAX_WINDOW = 1 << 16
#: the VM's limits and opcodes (the instruction table)
VM_MAXREG, VM_MAXIN, VM_MAXCONST = T.VM_MAXREG, T.VM_MAXIN, T.VM_MAXCONST
VM_OPCODES = frozenset(T.VM_OPCODES.values())
VM_LOAD, VM_CONST, VM_LOADI64 = (T.VM_OPCODES[n] for n in ("LOAD", "CONST", "LOADI64"))
#: set to 1 to check every plan lowered in this process as well (the tests do)
ENV_FLAG = "ONEMODEL_CHECK_LOWERED_PLANS"


class UnsafePlan(BadEntry, OneModelError):
    """A plan the native executor must not run (names the instruction and the field)."""


def lowered_checks_enabled() -> bool:
    return os.environ.get(ENV_FLAG, "") == "1"


def _ceil(a: int, b: int) -> int:
    return -(-a // b) * b


class _Ins:
    """One instruction being checked: its fields, its row of the instruction table and the
    run's buffer sizes."""

    def __init__(self, fields: list, sizes: list, where: str,
                 spec: T.Instruction | None = None) -> None:
        self.f, self.sizes, self.where, self.spec = fields, sizes, where, spec

    def typed(self) -> None:
        """Every field by its kind in the instruction table (fixed-length instructions)."""
        for i, field in enumerate(self.spec.fields):
            kind = field.kind
            if kind == T.COUNT:
                self.count(i, field.name)
            elif kind == T.STRIDE:
                self.stride(i, field.name)
            elif kind == T.CODE:
                self.code(i, field.name, field.codes)
            elif kind in (T.ADDR, T.ADDR_OPT):
                self.address(i, field.name, optional=kind == T.ADDR_OPT)

    def itemsize(self, i: int) -> int:
        """The bytes of an element at the address in field ``i`` (the instruction table's
        element of the field; float32 in a variable-length instruction)."""
        if self.spec is not None and self.spec.fields is not None and i < len(self.spec.fields):
            return self.spec.fields[i].itemsize
        return 4

    def scratch(self) -> None:
        """The scratch field holds the floats the table's formula gives for these fields."""
        at, floats = self.spec.scratch
        self.flat(at, "scratch", floats(self.f))

    def fail(self, what: str):
        raise UnsafePlan(f"{self.where}: {what}")

    def count(self, i: int, name: str, lo: int = 1, hi: int = MAX_COUNT) -> int:
        v = self.f[i]
        if not lo <= v <= hi:
            self.fail(f"{name} (field {i}) is {v}, not in [{lo}, {hi}]")
        return v

    def stride(self, i: int, name: str) -> int:
        return self.count(i, name, 0)

    def code(self, i: int, name: str, allowed) -> int:
        v = self.f[i]
        if v not in allowed:
            self.fail(f"{name} (field {i}) is {v}, not one of {sorted(allowed)}")
        return v

    def address(self, i: int, name: str, optional: bool = False, itemsize: int | None = None):
        """``(buffer, byte offset)`` of the address in field ``i`` (None for -1 where
        ``optional``), at a multiple of its element's size: the executor looks its buffer up
        even where the kernel then ignores it."""
        a = self.f[i]
        if a < 0:
            if optional and a == -1:
                return None
            self.fail(f"{name} (field {i}) has no address ({a})")
        buf, off = a >> P.BUF_SHIFT, a & ((1 << P.BUF_SHIFT) - 1)
        if buf >= len(self.sizes):
            self.fail(f"{name} (field {i}) names buffer {buf} of {len(self.sizes)}")
        size = self.itemsize(i) if itemsize is None else itemsize
        if off % size:
            self.fail(f"{name} (field {i}) is at byte {off} of buffer {buf}, not a multiple "
                      f"of its element's {size} bytes")
        return buf, off

    def region(self, i: int, name: str, dims, optional: bool = False, write: bool = False,
               itemsize: int | None = None) -> None:
        """The address in field ``i`` with ``dims`` ((count, stride) in elements, ...) from
        it inside its buffer. A region written (``write``) has every element once: no kernel
        writes one twice, so its loops are bounded by its buffer."""
        size = self.itemsize(i) if itemsize is None else itemsize
        at = self.address(i, name, optional, size)
        if at is None or any(c <= 0 for c, _ in dims):
            return
        buf, off = at
        end = off + (1 + sum((c - 1) * s for c, s in dims)) * size
        if any(s < 0 for _, s in dims) or end > self.sizes[buf]:
            self.fail(f"{name} (field {i}) spans bytes [{off}, {end}) of buffer {buf}, which "
                      f"holds {self.sizes[buf]}")
        if write:
            reach = 1
            for c, s in sorted(((c, s) for c, s in dims if c > 1), key=lambda d: d[1]):
                if s < reach:
                    self.fail(f"{name} (field {i}) writes elements more than once (stride "
                              f"{s} over {c})")
                reach += (c - 1) * s

    def flat(self, i: int, name: str, n: int, optional: bool = False,
             write: bool = False) -> None:
        self.region(i, name, [(n, 1)], optional=optional, write=write)


# -- one check per opcode (the field lists of om_kernels.h, om_split.h, om_conv_gemm.h, ...) --
def _gemm(c: _Ins) -> None:
    # A, lda, M, K, N, Bp, bias, bias_mode, resid, ldr, C, ldc, act
    lda, m, k, n = c.stride(1, "lda"), c.count(2, "M"), c.count(3, "K"), c.count(4, "N")
    ldr, ldc = c.stride(9, "ldr"), c.stride(11, "ldc")
    c.region(0, "A", [(m, lda), (k, 1)])
    c.flat(5, "packed B", _ceil(n, 16) * k)
    mode = c.code(7, "bias mode", {0, 1, 2})
    if mode:
        c.flat(6, "bias", n if mode == 1 else m)
    else:
        c.address(6, "bias", optional=True)
    c.region(8, "residual", [(m, ldr), (n, 1)], optional=True)
    c.region(10, "C", [(m, ldc), (n, 1)], write=True)
    c.code(12, "activation", GEMM_ACTS)


def _bmm(c: _Ins) -> None:
    # nb, A, sa, lda, B, sb, bk, bn, C, so, M, K, N, act, scratch
    nb, m, k, n = c.count(0, "batches"), c.count(10, "M"), c.count(11, "K"), c.count(12, "N")
    sa, lda, sb, bk, bn, so = (c.stride(i, s) for i, s in (
        (2, "A batch stride"), (3, "lda"), (5, "B batch stride"), (6, "B row stride"),
        (7, "B column stride"), (9, "C batch stride")))
    c.region(1, "A", [(nb, sa), (m, lda), (k, 1)])
    c.region(4, "B", [(nb, sb), (k, bk), (n, bn)])
    c.region(8, "C", [(nb, so), (m, n), (n, 1)], write=True)
    c.code(13, "activation", GEMM_ACTS)
    c.scratch()


def _vm(c: _Ins) -> None:
    # nin, shape[4], out, ostr[4], (addr, str[4]) * nin, ncode, code * 4, nconst, consts
    f = c.f
    if len(f) < 11:
        c.fail("too short for a VM loop")
    nin = c.count(0, "inputs", 0, VM_MAXIN)
    base = 10 + 5 * nin
    if len(f) < base + 2:
        c.fail("too short for its inputs")
    ncode = c.count(base, "VM instructions", 1, len(f))
    at = base + 1 + 4 * ncode
    if len(f) <= at:
        c.fail("too short for its VM code")
    nconst = c.count(at, "constants", 0, VM_MAXCONST)
    if len(f) != at + 1 + nconst:
        c.fail(f"{len(f)} fields, its counts say {at + 1 + nconst}")
    shape = [c.count(1 + j, f"shape[{j}]") for j in range(4)]
    int_inputs = set()
    for pc in range(ncode):
        opc, d, a, b = f[base + 1 + 4 * pc: base + 5 + 4 * pc]
        name = f"VM instruction {pc}"
        if opc not in VM_OPCODES:
            c.fail(f"{name}: unknown VM opcode {opc}")
        if not (0 <= d < VM_MAXREG and 0 <= b < VM_MAXREG):
            c.fail(f"{name}: register {d if not 0 <= d < VM_MAXREG else b} past the "
                   f"{VM_MAXREG} registers")
        limit, what = ((nin, "input") if opc in (VM_LOAD, VM_LOADI64) else
                       (nconst, "constant") if opc == VM_CONST else (VM_MAXREG, "register"))
        if not 0 <= a < limit:
            c.fail(f"{name}: {what} {a} of {limit}")
        if opc == VM_LOADI64:
            int_inputs.add(a)
    c.region(5, "output", list(zip(shape, [c.stride(6 + j, f"output stride {j}")
                                           for j in range(4)])), write=True)
    for i in range(nin):
        at = 10 + 5 * i
        st = [c.stride(at + 1 + j, f"input {i} stride {j}") for j in range(4)]
        c.region(at, f"input {i}", list(zip(shape, st)), itemsize=8 if i in int_inputs else 4)


def _softmax(c: _Ins) -> None:  # x, y, rows, cols
    n = c.count(2, "rows") * c.count(3, "cols")
    c.flat(0, "x", n)
    c.flat(1, "y", n, write=True)


def _layer_norm(c: _Ins) -> None:  # x, y, rows, cols, gamma, beta, eps
    cols = c.count(3, "cols")
    n = c.count(2, "rows") * cols
    c.flat(0, "x", n)
    c.flat(1, "y", n, write=True)
    c.flat(4, "gamma", cols, optional=True)
    c.flat(5, "beta", cols, optional=True)


def _attention(c: _Ins) -> None:
    # nb0, nb1, sq, sk, d, dv, scale, q(addr, s0, s1, ss), k(..), v(..), o(..), scratch
    # [, mask(addr, s0, s1, row, col), is_bool]
    nb0, nb1, sq, sk, d, dv = (c.count(i, s) for i, s in enumerate(
        ("batch", "heads", "queries", "keys", "d", "dv")))
    for at, name, rows, cols in ((7, "q", sq, d), (11, "k", sk, d), (15, "v", sk, dv),
                                 (19, "out", sq, dv)):
        s0, s1, ss = (c.stride(at + j, f"{name} stride {j - 1}") for j in (1, 2, 3))
        c.region(at, name, [(nb0, s0), (nb1, s1), (rows, ss), (cols, 1)],
                 write=name == "out")
    c.scratch()
    if len(c.f) == 30:  # I_ATTN_MASK
        s0, s1, mr, mc = (c.stride(24 + j, f"mask stride {j - 1}") for j in (1, 2, 3, 4))
        c.region(24, "mask", [(nb0, s0), (nb1, s1), (sq, mr), (sk, mc)])
        c.code(29, "mask kind", {0, 1})


def _pool(c: _Ins) -> None:  # x, NC, H, W, kh, kw, sh, sw, ph, pw, Ho, Wo, out
    nc, h, w = c.count(1, "channels"), c.count(2, "H"), c.count(3, "W")
    kh, kw = c.count(4, "kernel height", 1, MAX_WINDOW), c.count(5, "kernel width", 1, MAX_WINDOW)
    sh, sw = c.count(6, "stride"), c.count(7, "stride")
    ph, pw = c.count(8, "padding", 0, kh), c.count(9, "padding", 0, kw)
    ho, wo = c.count(10, "Ho"), c.count(11, "Wo")
    for size, k, s, p, o, axis in ((h, kh, sh, ph, ho, "height"), (w, kw, sw, pw, wo, "width")):
        span = size + 2 * p - k
        # floor mode, or ceil mode (whose last window starts inside the input; a window
        # longer than the padded input then gives one output, its taps clipped by the kernel)
        if not max(span // s + 1, 1) <= o <= -(-span // s) + 1:
            c.fail(f"output {axis} {o} is not what a window of {k}, stride {s} and padding "
                   f"{p} give on {size}")
    c.flat(0, "x", nc * h * w)
    c.flat(12, "out", nc * ho * wo)


def _copy(c: _Ins) -> None:  # src, dst, shape[6], sstride[6] (dst contiguous)
    shape = [c.count(2 + j, f"shape[{j}]") for j in range(6)]
    st = [c.stride(8 + j, f"stride {j}") for j in range(6)]
    c.region(0, "source", list(zip(shape, st)))
    c.flat(1, "destination", math.prod(shape))


def _conv_geometry(c: _Ins, h, w, kh, kw, ph, pw, dh, dw, sh, sw, ho, wo) -> None:
    for size, k, p, d, s, o, axis in ((h, kh, ph, dh, sh, ho, "height"),
                                      (w, kw, pw, dw, sw, wo, "width")):
        span = size + 2 * p - (k - 1) * d - 1
        if span < 0 or o != span // s + 1:
            c.fail(f"output {axis} {o} is not what a kernel of {k}, dilation {d}, stride {s} "
                   f"and padding {p} give on {size}")


def _prologue(c: _Ins, at: int, channels: int) -> bool:
    """The batch norm prologue's mean, scale and shift: all three or none."""
    if all(c.f[at + j] == -1 for j in range(3)):
        return False
    for j, name in enumerate(("prologue mean", "prologue scale", "prologue shift")):
        c.flat(at + j, name, channels)
    return True


def _conv_direct(c: _Ins) -> None:
    # x, N, Cin, H, W, Cout, kh, kw, ph, pw, dh, dw, G, Ho, Wo, wpacked, bias, act, out,
    # scratch, pool, sh, sw, p0, p1, mean, scale, shift, scratch floats (conv2d_lanes too)
    lanes = c.spec.opcode == P.I_CONV_LANES
    n, cin, h, w, cout = (c.count(i, s) for i, s in ((1, "N"), (2, "Cin"), (3, "H"), (4, "W"),
                                                     (5, "Cout")))
    kh, kw = c.count(6, "kernel height"), c.count(7, "kernel width")
    ph, pw = c.stride(8, "padding"), c.stride(9, "padding")
    dh, dw, g = c.count(10, "dilation"), c.count(11, "dilation"), c.count(12, "groups")
    ho, wo = c.count(13, "Ho"), c.count(14, "Wo")
    sh, sw = c.count(21, "stride"), c.count(22, "stride")
    if cin % g or cout % g:
        c.fail(f"{g} groups do not divide {cin} -> {cout} channels")
    if lanes and (g != 1 or cout % 16 or sw > 2):
        c.fail(f"conv2d_lanes takes one group, output channels a multiple of 16 and a column "
               f"stride of 1 or 2, not {g} groups, {cout} channels, stride {sw}")
    _conv_geometry(c, h, w, kh, kw, ph, pw, dh, dw, sh, sw, ho, wo)
    mode = c.f[20]  # one of the table's codes (typed, before this)
    pool = mode == T.DIRECT_POOL
    if pool and (ho < 2 or wo < 2):
        c.fail("a fused 2x2 pool of a map smaller than 2x2")
    if mode == T.DIRECT_DW_SMALL and (cin != g or cout != g or c.f[25] != -1):
        c.fail(f"the small-map depthwise kernel takes a depthwise convolution with no "
               f"prologue, not {g} groups of {cin} -> {cout} channels")
    c.code(17, "activation", CONV_ACTS)
    c.flat(0, "x", n * cin * h * w)
    packed = cout if lanes else g * _ceil(cout // g, 4)
    c.flat(15, "packed weights", packed * (cin // g) * kh * kw)
    c.flat(16, "bias", cout, optional=True)
    c.flat(18, "out", n * cout * ((ho // 2) * (wo // 2) if pool else ho * wo))
    _prologue(c, 25, cin)
    floats = c.count(28, "scratch floats", c.spec.scratch[1](c.f))  # the table's formula
    c.flat(19, "scratch", floats)


def _conv1x1(c: _Ins) -> None:
    # x, N, Cin, HW, Cout, w, bias, act, out, scratch, p0, p1, mean, scale, shift, layout
    n, cin, hw, cout = c.count(1, "N"), c.count(2, "Cin"), c.count(3, "HW"), c.count(4, "Cout")
    c.flat(0, "x", n * cin * hw)
    channels_first = c.code(15, "layout", (0, 1))
    c.flat(5, "weights" if channels_first else "weight panels",
           cout * cin if channels_first else _ceil(cout, 16) * cin)
    c.flat(6, "bias", cout, optional=True)
    c.code(7, "activation", CONV_ACTS)
    c.flat(8, "out", n * cout * hw)
    _prologue(c, 12, cin)
    c.scratch()


def _conv_gemm(c: _Ins) -> None:
    # x, N, Cin, H, W, Cout, kh, kw, ph, pw, dh, dw, sh, sw, Ho, Wo, wpanels, bias, act, out,
    # scratch, p0, p1, mean, scale, shift, layout
    n, cin, h, w, cout = (c.count(i, s) for i, s in ((1, "N"), (2, "Cin"), (3, "H"), (4, "W"),
                                                     (5, "Cout")))
    kh, kw = c.count(6, "kernel height"), c.count(7, "kernel width")
    ph, pw = c.stride(8, "padding"), c.stride(9, "padding")
    dh, dw, sh, sw = (c.count(i, s) for i, s in ((10, "dilation"), (11, "dilation"),
                                                  (12, "stride"), (13, "stride")))
    ho, wo = c.count(14, "Ho"), c.count(15, "Wo")
    _conv_geometry(c, h, w, kh, kw, ph, pw, dh, dw, sh, sw, ho, wo)
    k = cin * kh * kw
    c.flat(0, "x", n * cin * h * w)
    channels_first = c.code(26, "layout", (0, 1))
    c.flat(16, "weights" if channels_first else "weight panels",
           cout * k if channels_first else _ceil(cout, 16) * k)
    c.flat(17, "bias", cout, optional=True)
    c.code(18, "activation", CONV_ACTS)
    c.flat(19, "out", n * cout * ho * wo)
    _prologue(c, 23, cin)
    c.scratch()


def _mean_rows(c: _Ins) -> None:  # x, rows, cols, out
    rows = c.count(1, "rows")
    c.flat(0, "x", rows * c.count(2, "cols"))
    c.flat(3, "out", rows)


def _concat(c: _Ins) -> None:  # out, outer, row, nin, (addr, len, offset) * nin
    if len(c.f) < 4:
        c.fail("too short for a concat")
    outer, row = c.count(1, "outer"), c.count(2, "row")
    nin = c.count(3, "inputs", 1)
    if len(c.f) != 4 + 3 * nin:
        c.fail(f"{len(c.f)} fields for {nin} inputs")
    at = 0
    for i in range(nin):  # the rows of the inputs side by side fill each output row
        n = c.count(5 + 3 * i, f"input {i} length")
        if c.f[6 + 3 * i] != at:
            c.fail(f"input {i} at column {c.f[6 + 3 * i]}, not {at}")
        at += n
        c.flat(4 + 3 * i, f"input {i}", outer * n)
    if at != row:
        c.fail(f"inputs fill {at} of a row of {row}")
    c.region(0, "out", [(outer, row), (row, 1)], write=True)


def _gather(c: _Ins) -> None:  # x, outer, n, inner, idx, nidx, out, negative
    outer, n, inner, nidx = (c.count(i, s) for i, s in ((1, "outer"), (2, "rows"),
                                                        (3, "inner"), (5, "indices")))
    c.flat(0, "x", outer * n * inner)
    c.flat(4, "indices", nidx)  # int64 elements (the table's element of the field)
    c.flat(6, "out", outer * nidx * inner)
    c.code(7, "negative", {0, 1})


def _rnn(gates: int):
    """I_LSTM (4 gates) and I_GRU (3): T, B, H, pre, w, w2, bias, h0, c0, y, y_step, y_row, hn,
    cn, flags, scratch, input size, pre_step, pre_row (csrc/om_rnn.h). A field the cell does
    not read must be -1."""
    def check(c: _Ins) -> None:
        t, b, h = c.count(0, "steps"), c.count(1, "batch"), c.count(2, "hidden size")
        flags = c.code(14, "flags", set(range(8)) if gates == 3 else {0, 1, 4, 5})
        lbr = bool(flags & 2)
        fused = bool(flags & 4)  # x itself, [W_hh | W_ih] and the biases by unit
        split = gates == 3 and not lbr and not fused  # W_rz and W_n as two panel sets
        size = c.count(16, "input size")
        p_step, p_row = c.stride(17, "pre step stride"), c.stride(18, "pre row stride")
        if fused:
            unit = 2 if gates == 3 and lbr else 4  # a GRU's pairs of units; fours for W_hn
            if h % unit:
                c.fail(f"hidden size (field 2) is {h}, not a multiple of {unit} (fused)")
            c.region(3, "input", [(t, p_step), (b, p_row), (size, 1)])
            c.flat(4, "weights by unit", gates * h * (h + size))
        else:
            c.region(3, "input projection", [(t, p_step), (b, p_row), (gates * h, 1)])
            c.flat(4, "recurrent weight panels", _ceil(2 * h if split else gates * h, 16) * h)
        unused = {-1}
        if split:
            c.flat(5, "n weight panels", _ceil(h, 16) * h)
        else:
            c.code(5, "n weight panels (unused)", unused)
        if fused:
            c.flat(6, "biases by unit", 4 * h, optional=True)
        elif gates == 3 and lbr:
            c.flat(6, "recurrent bias", gates * h, optional=True)
        else:
            c.code(6, "recurrent bias (unused)", unused)
        c.flat(7, "h0", b * h, optional=True)
        if gates == 4:
            c.flat(8, "c0", b * h, optional=True)
        else:
            c.code(8, "c0 (unused)", unused)
        st, row = c.stride(10, "y step stride"), c.stride(11, "y row stride")
        c.region(9, "y", [(t, st), (b, row), (h, 1)], write=True)
        c.flat(12, "final h", b * h, write=True)
        if gates == 4:
            c.flat(13, "final c", b * h, write=True)
        else:
            c.code(13, "final c (unused)", unused)
        c.scratch()
    return check


def _fail(c: _Ins) -> None:
    """I_FAIL stops the run (the plan then names the node): nothing to read."""


#: the geometry check of each opcode (after the typed fields of the instruction table)
GEOMETRY = {
    P.I_GEMM: _gemm, P.I_BMM: _bmm, P.I_VM: _vm, P.I_SOFTMAX: _softmax,
    P.I_LAYERNORM: _layer_norm, P.I_ATTN: _attention, P.I_ATTN_MASK: _attention,
    P.I_MAXPOOL: _pool, P.I_AVGPOOL: _pool, P.I_COPY: _copy, P.I_CONV_DIRECT: _conv_direct,
    P.I_CONV1X1: _conv1x1, P.I_CONV_GEMM: _conv_gemm, P.I_CONV_LANES: _conv_direct,
    P.I_MEAN_ROWS: _mean_rows,
    P.I_CONCAT: _concat, P.I_GATHER: _gather, P.I_FAIL: _fail,
    P.I_LSTM: _rnn(4), P.I_GRU: _rnn(3),
}
#: opcode -> (fields, or None when variable, check): every instruction of the table (an
#: opcode without a geometry check here fails at import)
CHECKS = {ins.opcode: (None if ins.fields is None else len(ins.fields), GEOMETRY[ins.opcode])
          for ins in T.TABLE}


def check_program(program: np.ndarray, sizes: list, where: str = "program") -> int:
    """Check every instruction of one native program against buffers of ``sizes`` bytes;
    the number of instructions."""
    if not isinstance(program, np.ndarray) or program.dtype != np.int64 or program.ndim != 1:
        raise UnsafePlan(f"{where}: not an int64 vector")
    p = program.tolist()
    pc = idx = 0
    while pc < len(p):
        if pc + 1 >= len(p):
            raise UnsafePlan(f"{where}: instruction {idx} has no length")
        op, n = p[pc], p[pc + 1]
        if not 2 <= n <= len(p) - pc:
            raise UnsafePlan(f"{where}: instruction {idx} of length {n} past the end")
        spec = CHECKS.get(op)
        name = P.NAMES.get(op, op)
        if spec is None:
            raise UnsafePlan(f"{where}: instruction {idx} has unknown opcode {op}")
        fields, fn = spec
        if fields is not None and n - 2 != fields:
            raise UnsafePlan(f"{where}: instruction {idx} ({name}) has {n - 2} fields, not "
                             f"{fields}")
        c = _Ins(p[pc + 2: pc + n], sizes, f"{where}: instruction {idx} ({name})",
                 T.BY_OPCODE[op])
        if fields is not None:
            c.typed()
        fn(c)
        pc += n
        idx += 1
    return idx


def arena_bytes(program) -> int:
    """The arena a plan declares (NativePlan allocates max(64, this)), refused when it is not
    an int in [0, MAX_ARENA_BYTES]: before anything is allocated."""
    size = getattr(program, "arena_bytes", None)
    if type(size) is not int or not 0 <= size <= MAX_ARENA_BYTES:
        raise UnsafePlan(f"arena of {size!r} bytes (at most {MAX_ARENA_BYTES})")
    return max(64, size)


#: the bytes of an element of each dtype as native code holds it (a bool as a float32 0 / 1)
_NATIVE_BYTES = {np.dtype(np.float32): 4, np.dtype(np.bool_): 4, np.dtype(np.int64): 8}


def buffer_sizes(program, types, weights) -> list:
    """The bytes of each buffer a run of ``program`` hands to native code (plan.NativePlan's
    `buffers`): the weight block's used part, the arena, the feeds as native code reads them
    (0 for one it does not get), the outputs written directly (0 for the others)."""
    sizes = [4 * int(weights.used), arena_bytes(program)]
    for f in program.feeds:
        t = types[f]
        sizes.append(_NATIVE_BYTES.get(np.dtype(t.dtype.numpy), 0) * math.prod(t.shape))
    for j, w in enumerate(program.wanted):
        sizes.append(4 * math.prod(types[w].shape) if program.direct[j] else 0)
    return sizes


def _check_loc(loc, sizes, what: str, ints: bool = False) -> None:
    """A location numpy views: of dtype int64 for an int64 value (``ints``), else float32."""
    from .lowered import Loc

    if not isinstance(loc, Loc) or type(loc.buf) is not int or type(loc.off) is not int \
            or not isinstance(loc.shape, tuple) or not isinstance(loc.strides, tuple) \
            or len(loc.shape) != len(loc.strides) \
            or not all(type(v) is int for v in loc.shape + loc.strides):
        raise UnsafePlan(f"{what}: not a location")
    want = "int64" if ints else "float32"
    if type(loc.dtype) is not str or loc.dtype != want:
        raise UnsafePlan(f"{what}: a location of {loc.dtype!r} elements, not {want}")
    if not 0 <= loc.buf < len(sizes) or loc.off < 0 or any(d < 0 for d in loc.shape):
        raise UnsafePlan(f"{what}: outside the run's buffers")
    if math.prod(loc.shape) == 0:
        return
    size = loc.itemsize
    lo = loc.off + sum((d - 1) * s for d, s in zip(loc.shape, loc.strides) if s < 0)
    hi = loc.off + 1 + sum((d - 1) * s for d, s in zip(loc.shape, loc.strides) if s > 0)
    if lo < 0 or hi * size > sizes[loc.buf]:
        raise UnsafePlan(f"{what}: spans bytes [{lo * size}, {hi * size}) of buffer "
                         f"{loc.buf}, which holds {sizes[loc.buf]}")


def check(program, graph, weights, types=None) -> None:
    """Everything of a program lowered from ``graph`` that native code (and the views over
    native memory) will trust, for the run it describes (``types``: the graph's value types
    at the program's signature, computed when not given); `UnsafePlan` names the first thing
    that is not."""
    try:
        _check(program, graph, weights, types)
    except UnsafePlan:
        raise
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        raise UnsafePlan(f"a malformed plan ({type(exc).__name__}: {exc})") from None


def _check(program, graph, weights, types) -> None:
    from .lower import signature_types
    from .lowered import NativeSegment, Program, PyStep

    if type(program) is not Program:
        raise UnsafePlan("not a program")
    if types is None:
        types = signature_types(graph, dict(program.env))
    out_map = dict(graph.outputs)
    if program.feeds != tuple(v.name for v in graph.inputs):
        raise UnsafePlan("feeds that are not the graph's inputs")
    if any(not isinstance(o, str) or o not in out_map for o in program.output_names) \
            or program.wanted != tuple(out_map[o] for o in program.output_names):
        raise UnsafePlan("outputs that are not the graph's")
    n_out = len(program.wanted)
    if len(program.direct) != n_out or len(program.fetch) != n_out or any(
            type(d) is not bool or (d and (types[w].dtype.numpy != np.float32
                                           or program.fetch[j] is not None))
            for j, (d, w) in enumerate(zip(program.direct, program.wanted))):
        raise UnsafePlan("outputs written directly that are not the plan's")
    sizes = buffer_sizes(program, types, weights)
    for j, how in enumerate(program.fetch):
        if how is None:
            if not program.direct[j]:
                raise UnsafePlan(f"output {j} fetched from nowhere")
        elif not isinstance(how, tuple) or len(how) != 2 or how[0] not in (
                "loc", "const", "feed", "py"):
            raise UnsafePlan(f"output {j}: not a way to fetch it")
        elif how[0] == "loc":
            _check_loc(how[1], sizes, f"output {j}",
                       np.dtype(types[program.wanted[j]].dtype.numpy) == np.int64)
    for s, seg in enumerate(program.segments):
        if type(seg) is NativeSegment:
            n = check_program(seg.program, sizes, f"segment {s}")
            if n != len(seg.nodes):
                raise UnsafePlan(f"segment {s}: {n} instructions, {len(seg.nodes)} nodes")
        elif type(seg) is PyStep:
            specs = [x for x in list(seg.inputs) + list(seg.outputs)
                     if isinstance(x, tuple) and x and isinstance(x[0], str)
                     and x[0].startswith("loc")]
            for spec in specs:
                _check_loc(spec[1] if len(spec) == 2 else None, sizes, f"segment {s}",
                           spec[0] == "loc_i64")
        else:
            raise UnsafePlan(f"segment {s} is neither native nor numpy")
    for name, loc in program.locs.items():
        t = types.get(name)
        _check_loc(loc, sizes, f"value {name!r}",
                   t is not None and np.dtype(t.dtype.numpy) == np.int64)
    for name in program.folded:
        if name not in graph.values:
            raise UnsafePlan(f"folded value {name!r} is not in the graph")


__all__ = ["check", "check_program", "buffer_sizes", "UnsafePlan", "MAX_ARENA_BYTES",
           "MAX_COUNT", "MAX_WINDOW", "CHECKS", "GEOMETRY", "lowered_checks_enabled", "ENV_FLAG"]
