"""Addresses in the compiled program count bytes (issue 26): ``(buffer << 40) | byte offset``,
made in one place (`program.addr`, from an element offset and its dtype), so that an int8 or
bf16 kernel can address its operands as the float32 ones do. Int64 data (token ids, an int mask,
constant indices) is addressed by its own 8-byte elements, not as two floats; the arena counts
bytes in 64-byte slots; plan_check bounds every address in bytes and refuses one that is not at
a multiple of its element's size. Numbers are checked against numpy formulas written here."""
from __future__ import annotations

import attrs
import numpy as np
import pytest
from onemodel_backend_compiled import plan_check
from onemodel_backend_compiled import program as P
from onemodel_backend_compiled.arena import Arena
from onemodel_backend_compiled.lowered import Loc, NativeSegment

from program_helpers import gemm_program

import onemodel as om
from onemodel.core.graph import GraphBuilder
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType

F32, I64 = om.DType.F32, om.DType.I64
B = Dim.symbol("batch")
OFF_MASK = (1 << P.BUF_SHIFT) - 1


def test_an_address_is_a_buffer_and_a_byte_offset():
    assert P.addr(1, 3) == (1 << P.BUF_SHIFT) | 12
    assert P.addr(2, 3, np.int64) == (2 << P.BUF_SHIFT) | 24
    assert P.addr(2, 3, "int64") == P.addr(2, 6)  # the same byte: 3 int64s are 6 floats
    assert Loc(2, 5, (4,), (1,), None, "int64").addr == (2 << P.BUF_SHIFT) | 40
    assert Loc(2, 5, (4,), (1,)).addr == (2 << P.BUF_SHIFT) | 20
    loc = Loc(3, 2, (4,), (1,), None, "int64").with_view((2,), (2,), 3)
    assert (loc.dtype, loc.off, loc.addr & OFF_MASK) == ("int64", 3, 24)


def test_the_arena_gives_64_byte_slots_in_bytes():
    a = Arena()
    first, second = a.alloc(4), a.alloc(100)
    assert (first, second) == (0, 64)
    assert a.size == 64 + 128
    a.release(first, 4)
    assert a.alloc(64) == 0  # the freed slot, reused


def _ids_graph():
    """take(table, ids) and a cast of ids[:, ::2] (ids of 7 a row, so that the rows do not
    merge into one run): the VM reads int64 elements at a stride of 2 elements (16 bytes)."""
    gb = GraphBuilder()
    gb.add_input("ids", TensorType(I64, (B, 7)))
    table = np.random.default_rng(0).standard_normal((9, 5)).astype(np.float32)
    gb.add_initializer("table", table)
    e, = gb.add_node("take", ["table", "ids"], [TensorType(F32, (B, 7, 5))], {"axis": 0})
    ev, = gb.add_node("index", ["ids"], [TensorType(I64, (B, 4))],
                      {"index": (("slice", None, None, None), ("slice", None, None, 2))})
    c, = gb.add_node("cast", [ev.name], [TensorType(F32, (B, 4))], {"dtype": F32})
    return gb.finish([("emb", e.name), ("ev", c.name)]), table


def _instructions(prog):
    return [ins for seg in prog.segments if isinstance(seg, NativeSegment)
            for ins in seg.instructions]


@pytest.mark.parametrize("b", [1, 3])
def test_int64_ids_are_addressed_by_their_own_elements(b, isa):
    graph, table = _ids_graph()
    s = om.Session(graph, backend="compiled", optimization="none")
    ids = np.random.default_rng(b).integers(0, 9, (b, 7)).astype(np.int64)
    assert " 0 on numpy" in s.plan_source({"ids": ids}), s.plan_source({"ids": ids})
    out = {k: v.numpy() for k, v in s.run({"ids": ids}).items()}
    np.testing.assert_array_equal(out["emb"], table[ids])
    np.testing.assert_array_equal(out["ev"], ids[:, ::2].astype(np.float32))
    prog = s._compiled.plan({"batch": b}, None).program
    ins = _instructions(prog)
    assert next(i for i in ins if i[0] == P.I_GATHER)[2 + 4] == P.addr(2, 0, np.int64)
    vm = next(i for i in ins if i[0] == P.I_VM)
    f = vm[2:]
    assert f[0] == 1 and f[10] == P.addr(2, 0, np.int64)
    # the strides of ids[:, ::2] in int64 elements (7 a row, 2 a step), not in floats
    assert tuple(f[11:15]) == ((0, 0, 7, 2) if b > 1 else (0, 0, 0, 2)), f[11:15]
    loc = prog.locs["ids"]
    assert (loc.dtype, loc.strides) == ("int64", (7, 1))


def test_a_gather_by_a_slice_of_fed_ids_reads_their_bytes(isa):
    """ids[:, 2:] at batch 1 is one run of int64s starting 16 bytes into the feed."""
    gb = GraphBuilder()
    gb.add_input("ids", TensorType(I64, (1, 6)))
    table = np.random.default_rng(1).standard_normal((9, 3)).astype(np.float32)
    gb.add_initializer("table", table)
    sl, = gb.add_node("index", ["ids"], [TensorType(I64, (1, 4))],
                      {"index": (("slice", None, None, None), ("slice", 2, None, None))})
    e, = gb.add_node("take", ["table", sl.name], [TensorType(F32, (1, 4, 3))], {"axis": 0})
    graph = gb.finish([("emb", e.name)])
    s = om.Session(graph, backend="compiled", optimization="none")
    ids = np.array([[1, 2, 3, 4, 5, 8]], np.int64)
    np.testing.assert_array_equal(s.run({"ids": ids})["emb"].numpy(), table[ids[:, 2:]])
    prog = s._compiled.plan({}, None).program
    gather = next(i for i in _instructions(prog) if i[0] == P.I_GATHER)
    assert gather[2 + 4] == (2 << P.BUF_SHIFT) | 16
    assert prog.locs[sl.name].dtype == "int64" and prog.locs[sl.name].strides == (6, 1)


def _gather(idx):
    return P.assemble([P.instruction(P.I_GATHER, P.addr(0, 0), 1, 4, 2, idx, 3, P.addr(3, 0),
                                     0)])


def test_plan_check_bounds_addresses_in_bytes():
    sizes = [1 << 12, 1 << 12, 4 * 4 * 8, 4 * 4 * 16]  # A is 4x8 floats, C 4x16: bytes
    assert plan_check.check_program(gemm_program(), sizes) == 1
    with pytest.raises(plan_check.UnsafePlan, match=r"C \(field 10\) spans bytes \[0, 256\)"):
        plan_check.check_program(gemm_program(), sizes[:3] + [255])
    with pytest.raises(plan_check.UnsafePlan, match=r"A \(field 0\) spans bytes \[4, 132\)"):
        plan_check.check_program(gemm_program(a=P.addr(2, 1)), sizes)


@pytest.mark.parametrize("byte", [1, 2, 3])
def test_an_address_off_its_float_element_is_refused(byte):
    with pytest.raises(plan_check.UnsafePlan,
                       match=r"instruction 0 \(gemm\): a \(field 0\) is at byte %d of "
                             r"buffer 2, not a multiple of its element's 4 bytes" % byte):
        plan_check.check_program(gemm_program(a=P.addr(2, 0) + byte), [1 << 12] * 4)
    with pytest.raises(plan_check.UnsafePlan, match=r"bias \(field 6\) is at byte"):
        plan_check.check_program(gemm_program(bias=P.addr(0, 4) + byte), [1 << 12] * 4)


def test_an_int64_address_must_be_at_a_multiple_of_8_bytes():
    sizes = [1 << 12] * 4
    assert plan_check.check_program(_gather(P.addr(2, 1, np.int64)), sizes) == 1
    with pytest.raises(plan_check.UnsafePlan,
                       match=r"\(gather\): idx \(field 4\) is at byte 4 of buffer 2, not a "
                             r"multiple of its element's 8 bytes"):
        plan_check.check_program(_gather(P.addr(2, 1)), sizes)
    with pytest.raises(plan_check.UnsafePlan,
                       match=r"indices \(field 4\) spans bytes \[8, 32\)"):
        plan_check.check_program(_gather(P.addr(2, 1, np.int64)), sizes[:2] + [31, sizes[3]])


def test_a_location_of_the_wrong_element_type_is_refused():
    """A stored plan's int64 value seen as float32 (or the other way) would be read at the
    wrong bytes by numpy: refused."""
    graph, _ = _ids_graph()
    s = om.Session(graph, backend="compiled", optimization="none")
    env = {"batch": 2}
    plan = s._compiled.plan(env, None)
    prog = plan.program
    plan_check.check(prog, graph, s._compiled.weights)
    for name, loc in prog.locs.items():
        flipped = "float32" if loc.dtype == "int64" else "int64"
        bad = attrs.evolve(prog, locs={**prog.locs, name: attrs.evolve(loc, dtype=flipped)})
        with pytest.raises(plan_check.UnsafePlan, match=f"value {name!r}: a location of"):
            plan_check.check(bad, graph, s._compiled.weights)
