"""The instruction table (instructions.py) is the one source of truth: csrc/om_program.h is what
tools/gen_program_header.py writes from it, program.py's and pointwise.py's opcodes and
plan_check's field counts come from it, and its scratch formulas are what plan_check asks for."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from onemodel_backend_compiled import instructions as T
from onemodel_backend_compiled import plan_check, pointwise
from onemodel_backend_compiled import program as P

from program_helpers import gemm_program

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGIN = os.path.dirname(HERE)
HEADER = os.path.join(PLUGIN, "onemodel_backend_compiled", "csrc", "om_program.h")
TOOL = os.path.join(PLUGIN, "tools", "gen_program_header.py")


def test_the_committed_header_is_what_the_tool_writes():
    with open(HEADER, encoding="utf-8") as f:
        assert f.read() == T.header_text(), "run tools/gen_program_header.py"
    done = subprocess.run([sys.executable, TOOL, "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_only_the_generated_header_decodes_an_address():
    """Addresses count bytes: one macro (OM_ADDR / OM_PTR, om_program.h) turns one into a
    pointer; a kernel header with a decoding of its own (``>> OM_BUF_SHIFT``) would read it in
    its own units."""
    csrc = os.path.dirname(HEADER)
    own = []
    for name in sorted(os.listdir(csrc)):
        with open(os.path.join(csrc, name), encoding="utf-8") as f:
            if name != "om_program.h" and "OM_BUF_SHIFT" in f.read():
                own.append(name)
    assert not own, own
    header = T.header_text()
    assert "#define OM_ADDR(bufs, x) OM_PTR(float, bufs, x)" in header
    assert "(char *)(bufs)[(x) >> OM_BUF_SHIFT] + ((x) & OM_OFF_MASK)" in header


def test_the_tool_notices_a_stale_header(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_program_header", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    stale = tmp_path / "om_program.h"
    stale.write_text(T.header_text().replace("I_GEMM = 1,", "I_GEMM = 7,"))
    monkeypatch.setattr(tool, "HEADER", str(stale))
    assert tool.main(["--check"]) == 1
    assert tool.main([]) == 0 and stale.read_text() == T.header_text()


def test_opcodes_and_names_come_from_the_table():
    assert len({i.opcode for i in T.TABLE}) == len(T.TABLE)
    assert len({i.key for i in T.TABLE}) == len(T.TABLE)
    for ins in T.TABLE:
        assert getattr(P, f"I_{ins.key}") == ins.opcode, ins.key
        assert P.NAMES[ins.opcode] == ins.name
    assert set(P.NAMES) == set(T.BY_OPCODE)
    assert P.BUF_SHIFT == T.BUF_SHIFT


def test_the_vm_opcodes_come_from_the_table():
    for name, code in T.VM_OPCODES.items():
        assert getattr(pointwise, name) == code, name
    assert (pointwise.MAXREG, pointwise.MAXIN, pointwise.MAXCONST) == (
        T.VM_MAXREG, T.VM_MAXIN, T.VM_MAXCONST)
    assert plan_check.VM_OPCODES == frozenset(T.VM_OPCODES.values())


def test_plan_check_knows_every_instruction_by_the_table():
    assert set(plan_check.CHECKS) == set(T.BY_OPCODE)
    for ins in T.TABLE:
        fields, _ = plan_check.CHECKS[ins.opcode]
        assert fields == (None if ins.fields is None else len(ins.fields)), ins.key


@pytest.mark.parametrize("ins", [i for i in T.TABLE if i.fields is not None],
                         ids=lambda i: i.key)
def test_every_field_has_a_known_kind_and_codes_where_it_is_a_code(ins):
    for f in ins.fields:
        assert f.kind in T.KINDS
        assert (f.codes is not None) == (f.kind == T.CODE), (ins.key, f.name)
    assert len({f.name for f in ins.fields}) == len(ins.fields)


def _sizes(n=1 << 20, buffers=4):
    return [n] * buffers


def test_the_typed_fields_are_checked_from_the_table():
    assert plan_check.check_program(gemm_program(), _sizes()) == 1
    for change, what in ((dict(m=0), "m (field 2)"), (dict(lda=-1), "lda (field 1)"),
                         (dict(act=6), "act (field 12)"), (dict(bias_mode=3), "bias_mode"),
                         (dict(a=-1), "a (field 0) has no address"),
                         (dict(c=P.addr(9, 0)), "names buffer 9")):
        with pytest.raises(plan_check.UnsafePlan, match=what.replace("(", r"\(").replace(
                ")", r"\)")):
            plan_check.check_program(gemm_program(**change), _sizes())


def test_scratch_is_what_the_table_says():
    """An instruction's scratch one float short of its table formula is refused."""
    ins = T.BY_OPCODE[P.I_BMM]
    f = dict(nb=2, a=P.addr(2, 0), sa=32, lda=8, b=P.addr(2, 64), sb=128, bk=16, bn=1,
             c=P.addr(3, 0), so=64, m=4, k=8, n=16, act=0, scratch=P.addr(1, 0))
    fields = [f[x.name] for x in ins.fields]
    need = ins.scratch[1](fields)
    assert need == 16 * 8
    prog = P.assemble([P.instruction(P.I_BMM, *fields)])
    plan_check.check_program(prog, [1 << 20, 4 * need, 1 << 20, 1 << 20])  # sizes in bytes
    with pytest.raises(plan_check.UnsafePlan, match="scratch"):
        plan_check.check_program(prog, [1 << 20, 4 * need - 4, 1 << 20, 1 << 20])


def _conv_direct_program(groups: int, cout: int, mode: int, prologue: bool = False):
    """One conv2d_direct, 3x3 on 8x8 with padding 1, 8 input channels."""
    ins = T.BY_OPCODE[P.I_CONV_DIRECT]
    f = dict(x=P.addr(2, 0), n=1, cin=8, h=8, w=8, cout=cout, kh=3, kw=3, ph=1, pw=1, dh=1,
             dw=1, groups=groups, ho=8, wo=8, wpacked=P.addr(0, 0), bias=-1, act=0,
             out=P.addr(3, 0), scratch=P.addr(1, 0), mode=mode, sh=1, sw=1, p0=0, p1=0,
             mean=P.addr(0, 0) if prologue else -1, scale=P.addr(0, 0) if prologue else -1,
             shift=P.addr(0, 0) if prologue else -1, scratch_floats=0)
    fields = [f[x.name] for x in ins.fields]
    fields[28] = ins.scratch[1](fields)
    return P.assemble([P.instruction(P.I_CONV_DIRECT, *fields)])


def test_the_small_map_depthwise_mode_takes_only_depthwise_convolutions():
    """conv2d_direct's mode 2 (dw_small) on a convolution that is not depthwise, or with a
    prologue dw_small does not apply, is refused: the kernel would skip it, a wrong number."""
    assert plan_check.check_program(_conv_direct_program(8, 8, T.DIRECT_DW_SMALL), _sizes()) == 1
    assert plan_check.check_program(_conv_direct_program(1, 16, T.DIRECT_POOL), _sizes()) == 1
    for groups, cout, prologue in ((1, 16, False), (4, 8, False), (8, 16, False),
                                   (8, 8, True)):
        with pytest.raises(plan_check.UnsafePlan, match="small-map depthwise kernel"):
            plan_check.check_program(
                _conv_direct_program(groups, cout, T.DIRECT_DW_SMALL, prologue), _sizes())
    with pytest.raises(plan_check.UnsafePlan, match=r"mode \(field 20\) is 3"):
        plan_check.check_program(_conv_direct_program(8, 8, 3), _sizes())
