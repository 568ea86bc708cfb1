"""Scratch canaries: every instruction whose kernel lays out a scratch area (the instruction
table's scratch formula) gets, in a copy of its lowered program, a buffer of its own holding
exactly the floats the formula gives, fenced by canaries on both sides; the program runs on
every kernel copy and must leave the canaries as they were and give the same result. The
outputs are fenced the same way. A kernel
that writes past what instructions.py says it needs (the arena would then overwrite a
neighbour's data: a wrong number, not a crash) fails here, whichever of its paths the shapes
take: the convolutions of test_conv_lanes.py's cases with the channels-in-lanes kernel forced
on, the same with the copy's own choices (the direct, implicit-GEMM and 1x1 paths), narrow
maps, depthwise maps (dw_small and dw_direct, strided too), attention and an LSTM. (It
found the direct kernel's compaction and fused pool storing a row's last vector past the
output's end on maps under 8 wide.)"""
from __future__ import annotations

import attrs
import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel_backend_compiled import _native, heuristics
from onemodel_backend_compiled import program as P
from onemodel_backend_compiled.instructions import BY_OPCODE, DIRECT_DW_SMALL, DIRECT_PLAIN
from onemodel_backend_compiled.lower import NativeSegment

from test_conv_lanes import CASES, _model, force_lanes

GUARD = 256  # canary floats on each side
CANARY = np.array([0x7FC0DEAD], np.uint32).view(np.float32)[0]  # a NaN with a payload


def _fenced(n: int) -> np.ndarray:
    return np.full(n + 2 * GUARD, CANARY, np.float32)


def _intact(fenced: np.ndarray, n: int) -> bool:
    """The canaries on both sides of the n floats at GUARD are as written."""
    bits = fenced.view(np.uint32)
    return bool(np.all(np.concatenate([bits[:GUARD], bits[GUARD + n:]])
                       == CANARY.view(np.uint32)))


def _run_fenced(plan, arrays, program, extra=()):
    """Run ``program`` with the plan's outputs as views into canary-fenced arrays (a kernel
    writing past its output fails here, not later as a corrupted heap): the outputs."""
    bufs, outs = plan.buffers(arrays, plan._arena())
    fences = [None if o is None else _fenced(o.size) for o in outs]
    views = [None if f is None else f[GUARD:GUARD + o.size].reshape(o.shape)
             for f, o in zip(fences, outs)]
    bufs = (*bufs[:len(bufs) - len(outs)], *views, *extra)
    assert _native.run(program, bufs) < 0
    for f, o in zip(fences, outs):
        assert f is None or _intact(f, o.size), "a kernel wrote past its output"
    return [v for v in views if v is not None], len(bufs) - len(extra)


def _guarded_runs(session, feeds):
    """For each instruction with a scratch formula: (its name, canaries intact, same output)."""
    arrays, env = session._check_feeds(feeds)
    plan = session._compiled.plan(env)
    segs = [s for s in plan.segments if isinstance(s, NativeSegment)]
    assert len(segs) == 1 and len(plan.segments) == 1, "a plan of one native segment"
    instructions = [list(i) for i in segs[0].instructions]
    want, nbufs = _run_fenced(plan, arrays, P.assemble(instructions))
    results = []
    for k, ins in enumerate(instructions):
        spec = BY_OPCODE[ins[0]]
        if spec.scratch is None:
            continue
        at, formula = spec.scratch
        fields = list(ins[2:])
        need = formula(fields)
        if ins[0] in (P.I_CONV_DIRECT, P.I_CONV_LANES):
            fields[28] = need  # the floats the kernel may use: exactly the formula's
        guard = _fenced(need)
        fields[at] = P.addr(nbufs, GUARD)
        moved = instructions[:k] + [P.instruction(ins[0], *fields)] + instructions[k + 1:]
        got, _ = _run_fenced(plan, arrays, P.assemble(moved), (guard,))
        results.append((P.NAMES[ins[0]], _intact(guard, need),
                        all(np.array_equal(a, b, equal_nan=True) for a, b in zip(got, want))))
    return results


@pytest.mark.parametrize("lanes", [True, False], ids=["lanes forced", "own choice"])
@pytest.mark.parametrize("case", CASES, ids=[str(c[:6]) for c in CASES])
def test_convolution_scratch_stays_inside_its_formula(case, lanes, isa, monkeypatch):
    if lanes:
        force_lanes(monkeypatch)
    rng = np.random.default_rng(case[0] + case[1])
    traced, *_ = _model(case, rng)
    cin, (h, w) = case[0], case[9]
    for batch in (1, 2):
        x = rng.standard_normal((batch, cin, h, w)).astype(np.float32)
        session = om.Session(traced, backend="compiled")
        runs = _guarded_runs(session, {"input": x})
        assert runs, session.plan_source({"input": x})
        for name, fenced, same in runs:
            assert fenced, f"{name} wrote outside its scratch (b{batch})"
            assert same, f"{name} gave another result from its own scratch (b{batch})"


#: the direct kernel's compaction and fused pool on maps under 8 wide (their last vectors)
NARROW = [
    (3, 5, (1, 3), 1, (0, 1), 1, None, False, False, (40, 2), (1, 2)),   # rows of 2, padded
    (4, 6, (3, 3), 1, 1, 1, "relu", False, True, (30, 5), (1, 3)),      # pooled to rows of 2
]


@pytest.mark.parametrize("case", NARROW, ids=[str(c[:6]) for c in NARROW])
def test_narrow_maps_stay_inside_their_output(case, isa):
    rng = np.random.default_rng(case[1])
    traced, *_ = _model(case, rng)
    cin, (h, w) = case[0], case[9]
    for batch in case[10]:
        x = rng.standard_normal((batch, cin, h, w)).astype(np.float32)
        session = om.Session(traced, backend="compiled")
        assert "conv2d_direct" in session.plan_source({"input": x})
        for name, fenced, same in _guarded_runs(session, {"input": x}):
            assert fenced and same, (name, fenced, same, batch)


#: depthwise, on dw_small and on dw_direct's rows, strided too (channels, kernel, stride, map)
DEPTHWISE = [(8, 3, 1, 8), (8, 3, 1, 20), (8, 3, 2, 32), (8, 5, 2, 40), (8, 3, 1, 7)]


def force_dw_small(monkeypatch, on: bool):
    """The copy in use's heuristics with every depthwise convolution on dw_small (or none)."""
    src = heuristics.source(_native.isa())
    rec = heuristics.MEASURED[src]
    most = 10 ** 6 if on else 0
    monkeypatch.setitem(heuristics.MEASURED, src, attrs.evolve(rec, conv=attrs.evolve(
        rec.conv, dw_small_max_positions=most, dw_small_max_positions_wide=most,
        dw_small_max_positions_strided=most)))


@pytest.mark.parametrize("small", [True, False], ids=["dw_small", "dw_direct"])
@pytest.mark.parametrize("case", DEPTHWISE, ids=[str(c) for c in DEPTHWISE])
def test_depthwise_scratch_stays_inside_its_formula(case, small, isa, monkeypatch):
    c, k, stride, h = case
    force_dw_small(monkeypatch, small)
    rng = np.random.default_rng(h)
    W = Tensor.from_numpy(rng.standard_normal((c, 1, k, k)).astype(np.float32))

    def fn(x):
        return om.ops.relu(om.ops.conv2d(x, W, None, stride=stride, padding=k // 2, groups=c))

    traced = om.trace(fn, Tensor.from_numpy(rng.standard_normal((3, c, h, h)).astype(
        np.float32)), "batch", None, None, None)
    for batch in (1, 2):
        x = rng.standard_normal((batch, c, h, h)).astype(np.float32)
        session = om.Session(traced, backend="compiled")
        runs = _guarded_runs(session, {"input": x})
        assert [name for name, _, _ in runs] == ["conv2d_direct"], runs
        plan = session._compiled.plan(session._check_feeds({"input": x})[1])
        mode = [ins[22] for seg in plan.segments for ins in seg.instructions]
        assert mode == [DIRECT_DW_SMALL if small else DIRECT_PLAIN], mode
        for name, fenced, same in runs:
            assert fenced and same, (name, fenced, same, batch)


def _attention_lstm():
    rng = np.random.default_rng(4)
    wq = Tensor.from_numpy((rng.standard_normal((24, 24)) / 5).astype(np.float32))
    lstm = om.nn.LSTM(24, 16, batch_first=True)

    def fn(x):
        q = om.ops.reshape(om.ops.linear(x, wq), (x.shape[0], 6, 2, 12))
        q = om.ops.permute(q, (0, 2, 1, 3))
        a = om.ops.scaled_dot_product_attention(q, q, q)
        a = om.ops.reshape(om.ops.permute(a, (0, 2, 1, 3)), (x.shape[0], 6, 24))
        return lstm(a)[0]

    x = rng.standard_normal((3, 6, 24)).astype(np.float32)
    return om.trace(fn, Tensor.from_numpy(x), "batch", None, None), rng


def test_attention_and_lstm_scratch_stays_inside_its_formula(isa):
    traced, rng = _attention_lstm()
    session = om.Session(traced, backend="compiled")
    x = rng.standard_normal((2, 6, 24)).astype(np.float32)
    runs = _guarded_runs(session, {"input": x})
    names = {name for name, _, _ in runs}
    assert "lstm" in names and "attention" in names, session.plan_source({"input": x})
    for name, fenced, same in runs:
        assert fenced and same, (name, fenced, same)
