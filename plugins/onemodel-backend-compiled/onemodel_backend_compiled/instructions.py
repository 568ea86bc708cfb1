"""The instruction table: the one source of truth for the native executor's instruction set.

Each `Instruction` has its opcode, its C name (``I_<key>`` in csrc/om_program.h), the name a
plan's source prints, its typed fields (None for a variable-length one: the VM loop, concat) and
the scratch floats its kernel lays out, as a formula of its fields. From this table come
program.py's opcodes and names, plan_check's field counts, typed field checks and scratch sizes,
and csrc/om_program.h itself, written by ``tools/gen_program_header.py`` (a test checks that the
committed header is what the tool writes). The VM's opcodes (pointwise.py) are here too.

Adding an instruction: a row here, then run the tool; its kernel in csrc/ and its entry in the
kind table (csrc/om_kinds.h), its rule, its geometry check in plan_check.py and a model in
tests/hostile_entries.py (see docs/guide/backends.md, "Adding an instruction").
"""
from __future__ import annotations

import textwrap
from typing import Callable

import attrs

#: field kinds: an address (``(buffer << 40) | offset`` in bytes, ``ADDR_OPT`` also -1 for
#: none), a count (>= 1), a stride or padding (>= 0, in elements of the operand it walks), a
#: code (one of the field's ``codes``), a float's bits (anything)
ADDR, ADDR_OPT, COUNT, STRIDE, CODE, FLOAT = "addr", "addr?", "count", "stride", "code", "float"
KINDS = (ADDR, ADDR_OPT, COUNT, STRIDE, CODE, FLOAT)

#: activations of the GEMM's epilogue (store_tile / store16, om_kernels.h)
GEMM_ACTS = frozenset(range(6))
#: activations of the convolutions' epilogue (act_rows, with parameters p0, p1)
CONV_ACTS = frozenset(range(10))


#: the element types an address may point at, by name: their sizes in bytes (an address's
#: offset is a multiple of its element's size)
ELEMENTS = {"f32": 4, "i64": 8}


@attrs.frozen
class Field:
    name: str
    kind: str = attrs.field(validator=attrs.validators.in_(KINDS))
    codes: frozenset | None = None  # the values a CODE field may hold
    #: an address's element type (ELEMENTS): what the kernel reads or writes through it
    element: str = attrs.field(default="f32", validator=attrs.validators.in_(ELEMENTS))

    @property
    def itemsize(self) -> int:
        return ELEMENTS[self.element]


@attrs.frozen
class Instruction:
    key: str                     # the C name is I_<key>
    opcode: int
    name: str                    # what a plan's source prints
    fields: tuple | None         # Field per field; None: variable length (checked by hand)
    #: the scratch field's index and the floats the kernel needs there, from the fields (the
    #: direct convolution's is the least its ``scratch_floats`` field may say)
    scratch: tuple[int, Callable[[list], int]] | None = None
    comment: str = ""            # for the header


def _ceil(a: int, b: int) -> int:
    return -(-a // b) * b


def _f(spec: str, codes=None) -> tuple:
    """Fields from ``"name:kind name:kind ..."`` (every one of ``codes`` for a CODE; an
    address of another element than float32 as ``name:addr:i64``)."""
    out = []
    for item in spec.split():
        name, kind, *element = item.split(":")
        out.append(Field(name, kind, frozenset(codes[name]) if kind == CODE else None,
                         *element))
    return tuple(out)


def dw_small_scratch(hp: int, wp: int, kh: int, kw: int, ho: int, wo: int) -> int:
    """The floats dw_small (om_kernels.h) needs: the padded input, the taps and the output,
    8 channels a position; the kernel checks that the instruction's scratch holds them."""
    return (hp * wp + kh * kw + ho * wo) * 8


def dw_direct_scratch(w: int, pw: int, s: int) -> int:
    """om_dw.h's dw_direct_scratch: 17 row slots (the ring and a zero row), the stride-2 split
    buffer, and the taps."""
    ws = -(-((w + 2 * pw + 1) // s + 24) // 8) * 8
    return 17 * s * ws + 2 * s * ws + 96


def conv_direct_scratch(f: list) -> int:
    """The floats of scratch conv_direct_range (om_kernels.h) touches for these fields."""
    n_, cin, h, w, cout, kh, kw, ph, pw = f[1:10]
    g, ho, wo, mode, sh, sw = f[12], f[13], f[14], f[20], f[21], f[22]
    cig, cog = cin // g, cout // g
    k = cig * kh * kw
    hp = h + 2 * ph
    strided = sh != 1 or sw != 1
    if not strided:
        wp = w + pw
        plane = hp * wp + pw
    else:
        wp = -(-(w + 2 * pw) // sw)
        plane = -(-hp // sh) * wp
    nq = (ho - 1) * wp + wo
    nqr = _ceil(nq, 24)
    xpn = cig * sh * sw * plane + 24 + wp
    koff_end = _ceil(xpn, 16) + _ceil(cog, 4) * nqr + 32 + 2 * k
    general = koff_end + (wp * sw + 16 if strided else 0)  # + the phase planes' row buffer
    if mode == DIRECT_DW_SMALL:
        return max(general, dw_small_scratch(hp, w + 2 * pw, kh, kw, ho, wo))
    if cig == 1 and cog == 1 and mode == DIRECT_PLAIN and f[25] == -1:  # dw_direct's rows
        return max(general, dw_direct_scratch(w, pw, sh))
    return general


#: positions of a group of rows in om_conv_lanes.h (OM_CL_ROWS_POSITIONS)
LANES_ROWS_POSITIONS = 128


def lanes_group_rows(wo: int, pool: int) -> int:
    """om_conv_lanes.h's cl_group_rows: output rows a group computes before its epilogue."""
    gr = max(1, LANES_ROWS_POSITIONS // wo)
    return max(2, gr // 2 * 2) if pool else gr


def conv_lanes_scratch(f: list) -> int:
    """The floats conv_lanes_range (om_conv_lanes.h) lays out: the padded input planes (none
    when it reads x in place), koff, a group's [positions][32], its pooled form and its
    channels-first copy, each by whole 8s of positions."""
    cin, h, w, kh, kw, ph, pw = f[2], f[3], f[4], f[6], f[7], f[8], f[9]
    wo, pool = f[14], f[20]
    inplace = ph == 0 and pw == 0 and f[25] == -1
    xpn = 0 if inplace else _ceil(cin * (h + 2 * ph) * (w + 2 * pw), 16)
    gr = lanes_group_rows(wo, pool)
    gp = _ceil(gr * wo, 8)
    return xpn + _ceil(2 * cin * kh * kw, 16) + 2 * gp * 32 \
        + (_ceil((gr // 2) * (wo // 2), 8) * 32 if pool else 0)


def _conv1x1_scratch(f: list) -> int:
    """om_conv1x1.h: channels first, x's panels and C when a panel may span two images;
    positions first, the transposed input and C."""
    n, cin, hw, cout = f[1:5]
    if not f[15]:
        return _ceil(n * hw * cin, 16) + n * hw * cout
    s = _ceil(hw, 16)
    return n * s * (cin + (cout if hw % 16 else 0))


def _conv_gemm_scratch(f: list) -> int:
    n, cin, h, w, cout, kh, kw, ph, pw = f[1:10]
    ho, wo = f[14], f[15]
    padded = ph != 0 or pw != 0 or any(f[23 + j] != -1 for j in range(3))
    k, m = cin * kh * kw, n * ho * wo
    xpn = _ceil(n * cin * (h + 2 * ph) * (w + 2 * pw), 16) if padded else 0
    if f[26]:  # channels first: one panel, and C unless the map is whole panels
        return xpn + 16 * k + (cout * _ceil(m, 16) if (ho * wo) % 16 else 0)
    mb = min(m, max(6, 98304 // max(k, 1) // 6 * 6))  # om_conv_gemm.h's conv_gemm_rows
    return xpn + _ceil(_ceil(mb, 6) * k, 16) + _ceil(m * cout, 2) + 2 * kh * kw


def _attention_scratch(f: list) -> int:
    sq, sk, d, dv = f[2], f[3], f[4], f[5]
    return _ceil(sk, 16) * d + sq * sk + _ceil(dv, 16) * sk + sq


#: the direct convolutions' fields (conv2d_direct, and conv2d_lanes with one group)
_CONV_DIRECT = ("x:addr n:count cin:count h:count w:count cout:count kh:count kw:count "
                "ph:stride pw:stride dh:count dw:count groups:count ho:count wo:count "
                "wpacked:addr bias:addr? act:code out:addr scratch:addr mode:code sh:count "
                "sw:count p0:float p1:float mean:addr? scale:addr? shift:addr? "
                "scratch_floats:count")
#: conv2d_direct's mode: plain, a fused 2x2 max pool, or a depthwise convolution on the
#: small-map kernel (om_kernels.h dw_small; the lowering's heuristics choose it); conv2d_lanes
#: takes the first two
DIRECT_PLAIN, DIRECT_POOL, DIRECT_DW_SMALL = 0, 1, 2
_DIRECT_CODES = {"act": CONV_ACTS, "mode": (DIRECT_PLAIN, DIRECT_POOL, DIRECT_DW_SMALL)}
_LANES_CODES = {"act": CONV_ACTS, "mode": (DIRECT_PLAIN, DIRECT_POOL)}
_ACT = {"act": GEMM_ACTS}
_CONV_ACT = {"act": CONV_ACTS}
_ATTN = ("nb0:count nb1:count sq:count sk:count d:count dv:count scale:float "
         "q:addr q_s0:stride q_s1:stride q_row:stride k:addr k_s0:stride k_s1:stride "
         "k_row:stride v:addr v_s0:stride v_s1:stride v_row:stride o:addr o_s0:stride "
         "o_s1:stride o_row:stride scratch:addr")
_POOL = ("x:addr nc:count h:count w:count kh:count kw:count sh:count sw:count ph:stride "
         "pw:stride ho:count wo:count out:addr")
_RNN = ("steps:count batch:count hidden:count pre:addr w:addr w_n:addr? bias:addr? h0:addr? "
        "c0:addr? y:addr y_step:stride y_row:stride hn:addr cn:addr? flags:code scratch:addr "
        "input:count pre_step:stride pre_row:stride")

TABLE: tuple[Instruction, ...] = (
    Instruction("GEMM", 1, "gemm", _f(
        "a:addr lda:stride m:count k:count n:count bp:addr bias:addr? bias_mode:code "
        "resid:addr? ldr:stride c:addr ldc:stride act:code", {**_ACT, "bias_mode": (0, 1, 2)})),
    Instruction("VM", 2, "pointwise", None),
    Instruction("SOFTMAX", 3, "softmax", _f("x:addr y:addr rows:count cols:count")),
    Instruction("LAYERNORM", 4, "layer_norm", _f(
        "x:addr y:addr rows:count cols:count gamma:addr? beta:addr? eps:float")),
    Instruction("ATTN", 5, "attention", _f(_ATTN), (23, _attention_scratch),
                "6: was im2col conv"),
    Instruction("MAXPOOL", 7, "max_pool2d", _f(_POOL)),
    Instruction("AVGPOOL", 8, "avg_pool2d", _f(_POOL)),
    Instruction("COPY", 9, "copy", _f(
        "src:addr dst:addr " + " ".join(f"shape{j}:count" for j in range(6)) + " "
        + " ".join(f"stride{j}:stride" for j in range(6)))),
    Instruction("BMM", 10, "matmul", _f(
        "nb:count a:addr sa:stride lda:stride b:addr sb:stride bk:stride bn:stride c:addr "
        "so:stride m:count k:count n:count act:code scratch:addr", _ACT),
        (14, lambda f: _ceil(f[12], 16) * f[11])),
    Instruction("CONV_DIRECT", 11, "conv2d_direct", _f(_CONV_DIRECT, _DIRECT_CODES),
                (19, conv_direct_scratch)),
    Instruction("CONV1X1", 12, "conv2d_1x1_gemm", _f(
        "x:addr n:count cin:count hw:count cout:count w:addr bias:addr? act:code "
        "out:addr scratch:addr p0:float p1:float mean:addr? scale:addr? shift:addr? "
        "layout:code", {**_CONV_ACT, "layout": (0, 1)}), (9, _conv1x1_scratch)),
    Instruction("MEAN_ROWS", 13, "mean", _f("x:addr rows:count cols:count out:addr")),
    Instruction("CONCAT", 14, "concat", None),
    Instruction("CONV_GEMM", 20, "conv2d_gemm", _f(
        "x:addr n:count cin:count h:count w:count cout:count kh:count kw:count ph:stride "
        "pw:stride dh:count dw:count sh:count sw:count ho:count wo:count wpanels:addr "
        "bias:addr? act:code out:addr scratch:addr p0:float p1:float mean:addr? "
        "scale:addr? shift:addr? layout:code", {**_CONV_ACT, "layout": (0, 1)}),
        (20, _conv_gemm_scratch),
        "20-29: convolution paths"),
    Instruction("CONV_LANES", 21, "conv2d_lanes", _f(_CONV_DIRECT, _LANES_CODES),
                (19, conv_lanes_scratch), "conv2d_direct's fields; one group"),
    Instruction("GATHER", 30, "gather", _f(
        "x:addr outer:count n:count inner:count idx:addr:i64 nidx:count out:addr negative:code",
        {"negative": (0, 1)}), comment="the text helper's range: 30-39"),
    Instruction("ATTN_MASK", 31, "attention", _f(
        _ATTN + " mask:addr m_s0:stride m_s1:stride m_row:stride m_col:stride is_bool:code",
        {"is_bool": (0, 1)}), (23, _attention_scratch)),
    Instruction("LSTM", 40, "lstm", _f(_RNN, {"flags": (0, 1, 4, 5)}),
                (15, lambda f: 16 * (3 * f[2] + 2 * f[16]) if f[14] & 4 else f[1] * 6 * f[2]),
                "40-49: recurrent layers (om_rnn.h)"),
    Instruction("GRU", 41, "gru", _f(_RNN, {"flags": tuple(range(8))}),
                (15, lambda f: 16 * ((2 if f[14] & 2 else 5) * f[2] + 2 * f[16]) if f[14] & 4
                 else f[1] * 5 * f[2])),
    Instruction("FAIL", 99, "fail", None, comment="stops the run (the plan names the node)"),
)

BY_OPCODE = {ins.opcode: ins for ins in TABLE}
assert len(BY_OPCODE) == len(TABLE), "two instructions share an opcode"
#: the native kind table's size (om_kind.h): opcodes are 0 .. OPCODE_LIMIT - 1
OPCODE_LIMIT = 100
assert all(0 < op < OPCODE_LIMIT for op in BY_OPCODE), "an opcode outside the kind table"

#: the pointwise VM's opcodes (pointwise.py, csrc/om_kernels.h ``vm_block``), by range:
#: (first opcode, names, comment)
VM_RANGES = (
    (1, ("LOAD", "CONST", "ADD", "SUB", "MUL", "DIV", "MAX", "MIN", "POW", "NEG", "ABS", "EXP",
         "LOG", "SQRT", "TANH", "SIGMOID", "RELU", "ERF", "GELU", "GELU_TANH", "SQUARE",
         "RECIP", "SWISH", "COPY"), ""),
    (30, ("LOADI64", "ISNAN", "WHERE", "EQ", "NE", "LT", "LE"),
     "masks (om_masks.h): an int64 load, bools as 0.0 / 1.0, where reads its condition from "
     "the destination register"),
    (40, ("SIN", "COS", "TAN", "ASIN", "ACOS", "ATAN", "ATAN2", "FLOOR", "CEIL", "RINT", "LOG1P",
          "EXPM1", "FMOD", "REMAINDER", "FLOORDIV", "AND", "OR", "NOT", "ISFINITE"),
     "om_vmath.h: trigonometry, rounding, log1p / expm1, float division's remainders, "
     "logical ops on 0.0 / 1.0"),
)
VM_OPCODES = {name: first + i for first, names, _ in VM_RANGES for i, name in enumerate(names)}
#: the VM's limits: registers (of 64 floats), inputs, constants
VM_MAXREG, VM_MAXIN, VM_MAXCONST = 16, 16, 32
#: an address's offset bits: ``(buffer << BUF_SHIFT) | offset`` in bytes (so that a kernel of
#: any element type, int8 or bf16 too, addresses its operands the same way)
BUF_SHIFT = 40



def _wrap(items: list[str], indent: str, width: int = 96) -> list[str]:
    """C enum items, comma separated, filled into lines of at most ``width``."""
    lines, line = [], indent
    for item in items:
        piece = item + ","
        if line.strip() and len(line) + 1 + len(piece) > width:
            lines.append(line.rstrip())
            line = indent
        line += ("" if not line.strip() else " ") + piece
    if line.strip():
        lines.append(line.rstrip())
    return lines


def header_text() -> str:
    """csrc/om_program.h as ``tools/gen_program_header.py`` writes it."""
    out = ["/* GENERATED by tools/gen_program_header.py from instructions.py: do not edit.",
           " * The instruction format shared with program.py: each instruction is",
           " * [opcode, length, fields...] of int64; an address is (buffer << OM_BUF_SHIFT) |"
           " offset in",
           " * bytes, -1 for none. Buffers: 0 weights, 1 arena, then the feeds and outputs of"
           " the run. */",
           "#ifndef OM_PROGRAM_H", "#define OM_PROGRAM_H",
           f"#define OM_BUF_SHIFT {BUF_SHIFT}",
           "#define OM_OFF_MASK ((((int64_t)1) << OM_BUF_SHIFT) - 1)",
           "/* the pointer an address gives, to elements of type T (NULL for -1); OM_ADDR: to"
           " floats */",
           "#define OM_PTR(T, bufs, x) ((x) < 0 ? (T *)0 \\",
           "    : (T *)(void *)((char *)(bufs)[(x) >> OM_BUF_SHIFT] + ((x) & OM_OFF_MASK)))",
           "#define OM_ADDR(bufs, x) OM_PTR(float, bufs, x)",
           "enum {"]
    for ins in TABLE:
        fields = "variable" if ins.fields is None else f"{len(ins.fields)} fields"
        note = f"; {ins.comment}" if ins.comment else ""
        out.append(f"    I_{ins.key} = {ins.opcode},  /* {ins.name}: {fields}{note} */")
    out.append("};")
    out.append("/* the fields of each fixed-length instruction */")
    for ins in TABLE:
        if ins.fields is not None:
            out.append(f"#define I_{ins.key}_FIELDS {len(ins.fields)}")
    out.append(f"#define OM_OPCODE_LIMIT {OPCODE_LIMIT}  /* opcodes are 0 .. this - 1 */")
    out.append("/* the kind table's rows (om_kinds.h): X(opcode, key), key the C name in lower case"
               " */")
    out.append("#define OM_KINDS(X) \\")
    out += [f"    X(I_{ins.key}, {ins.key.lower()})" + (" \\" if i < len(TABLE) - 1 else "")
            for i, ins in enumerate(TABLE)]
    out.append("enum {")
    for first, names, comment in VM_RANGES:
        if comment:
            text = textwrap.wrap(comment, 88)
            out += [("    /* " if i == 0 else "     * ") + t
                    + (" */" if i == len(text) - 1 else "") for i, t in enumerate(text)]
        items = [f"VM_{names[0]} = {first}"] + [f"VM_{n}" for n in names[1:]]
        out.extend(_wrap(items, "    "))
    out.append("};")
    out += [f"#define VM_MAXREG {VM_MAXREG}", f"#define VM_MAXIN {VM_MAXIN}",
            f"#define VM_MAXCONST {VM_MAXCONST}", "#endif"]
    return "\n".join(out) + "\n"


__all__ = ["header_text", "TABLE", "BY_OPCODE", "Instruction", "Field", "VM_OPCODES",
           "VM_RANGES", "VM_MAXREG", "VM_MAXIN", "VM_MAXCONST", "BUF_SHIFT", "ELEMENTS",
           "GEMM_ACTS", "CONV_ACTS", "KINDS", "conv_direct_scratch", "conv_lanes_scratch",
           "dw_direct_scratch",
           "dw_small_scratch", "OPCODE_LIMIT"]
