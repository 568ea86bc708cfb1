"""Native lstm / gru: the output sequence written in the caller's batch-first layout by the
step itself (rnn_rules.batch_first_dest: y_step / y_row strides, the transpose after the layer
a view), against the numpy backend, on every kernel copy."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor

TOL = dict(rtol=1e-4, atol=1e-5)


def _r(rng, *shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _rnn_instructions(session, feeds, op: str) -> list:
    """The fields of every I_LSTM / I_GRU instruction of the plan for ``feeds`` (after the
    opcode and the length), and the plan's direct-output flags."""
    from onemodel_backend_compiled import program as P
    from onemodel_backend_compiled.lower import NativeSegment

    _, env = session._check_feeds(feeds)
    plan = session._compiled.plan(env)
    fields = [[int(v) for v in ins[2:]] for seg in plan.segments
              if isinstance(seg, NativeSegment) for ins in seg.instructions
              if int(ins[0]) == getattr(P, f"I_{op}")]
    return fields, list(plan.direct)


def _check(traced, feeds):
    compiled = om.Session(traced, backend="compiled")
    got, want = compiled.run(feeds), om.Session(traced, backend="numpy").run(feeds)
    for name in want:
        np.testing.assert_allclose(got[name].numpy(), want[name].numpy(), **TOL, err_msg=name)
    plan = compiled.plan_source(feeds)
    assert "numpy: lstm" not in plan and "numpy: gru" not in plan, plan
    return compiled, got


@pytest.mark.parametrize("cls", [om.nn.LSTM, om.nn.GRU], ids=["lstm", "gru"])
@pytest.mark.parametrize("batch,hidden,states", [(16, 12, True), (14, 20, False),
                                                 (17, 12, True), (3, 9, False),
                                                 (30, 8, True)])
def test_batch_first_output_is_written_in_place(isa, cls, batch, hidden, states):
    """batch_first=True, one direction: the instruction writes step t of row b at
    b * seq * H + t * H of the caller's array (y_step H, y_row seq * H), fused (batch 14, 16,
    30) and on the GEMM rows (3, 17), hidden sizes not multiples of 8 or 16, with and without
    initial states; the output is the caller's array (direct)."""
    om.manual_seed(batch)
    size, seq = 5, 6
    m = cls(size, hidden, batch_first=True).eval()
    lstm = cls is om.nn.LSTM
    rng = np.random.default_rng(batch + hidden)
    x = _r(rng, batch, seq, size, scale=1.0)
    st = [_r(rng, 1, batch, hidden) for _ in range(2 if lstm else 1)] if states else []

    def fn(x, *s):
        hx = None if not s else (tuple(s) if lstm else s[0])
        out, fin = m(x, hx)
        return (out, *(fin if lstm else (fin,)))

    traced = om.trace(fn, {f"in{i}": (Tensor.from_numpy(a), *(None,) * a.ndim)
                           for i, a in enumerate([x, *st])})
    feeds = dict(zip(traced.input_names, [x, *st]))
    compiled, _ = _check(traced, feeds)
    fields, direct = _rnn_instructions(compiled, feeds, "LSTM" if lstm else "GRU")
    assert [(f[10], f[11]) for f in fields] == [(hidden, seq * hidden)], fields
    assert direct[0], direct


@pytest.mark.parametrize("cls", [om.nn.LSTM, om.nn.GRU], ids=["lstm", "gru"])
def test_batch_first_output_read_by_another_node(isa, cls):
    """The transposed output feeds a linear layer (not the caller's array): the rows go to
    an arena buffer in batch-first order and the linear layer reads them as they are."""
    om.manual_seed(4)
    rnn, lin = cls(6, 12, batch_first=True).eval(), om.nn.Linear(12, 3)
    x = _r(np.random.default_rng(4), 16, 5, 6, scale=1.0)

    def fn(x):
        return lin(rnn(x)[0])

    traced = om.trace(fn, Tensor.from_numpy(x), None, None, None)
    feeds = {traced.input_names[0]: x}
    compiled, _ = _check(traced, feeds)
    fields, _ = _rnn_instructions(compiled, feeds, "LSTM" if cls is om.nn.LSTM else "GRU")
    assert [(f[10], f[11]) for f in fields] == [(12, 5 * 12)], fields


def test_time_major_output_also_returned_keeps_its_layout(isa):
    """Where the time-major sequence itself is an output beside its transpose, the layer
    writes it time-major (y_step batch * H) and the transpose stays a view of it."""
    rng = np.random.default_rng(5)
    size, h, seq, batch = 4, 8, 5, 16
    w = [Tensor.from_numpy(_r(rng, 4 * h, n)) for n in (size, h)]
    x = _r(rng, seq, batch, size, scale=1.0)

    def fn(x):
        y, hn, cn = om.ops.lstm(x, *w)
        return y, y.transpose(0, 1)

    traced = om.trace(fn, Tensor.from_numpy(x), None, None, None)
    feeds = {traced.input_names[0]: x}
    compiled, got = _check(traced, feeds)
    fields, _ = _rnn_instructions(compiled, feeds, "LSTM")
    assert [(f[10], f[11]) for f in fields] == [(batch * h, h)], fields
    a, b = (got[n].numpy() for n in traced.output_names)
    np.testing.assert_array_equal(a.transpose(1, 0, 2), b)


def _copies(session, feeds) -> int:
    """How many I_COPY instructions the plan for ``feeds`` runs."""
    from onemodel_backend_compiled import program as P
    from onemodel_backend_compiled.lower import NativeSegment

    _, env = session._check_feeds(feeds)
    plan = session._compiled.plan(env)
    return sum(int(ins[0]) == P.I_COPY for seg in plan.segments
               if isinstance(seg, NativeSegment) for ins in seg.instructions)


@pytest.mark.parametrize("gates,lbr", [(4, True), (3, True), (3, False)],
                         ids=["lstm", "gru", "gru-reset-first"])
@pytest.mark.parametrize("batch", [16, 14, 30, 3, 17])
def test_batch_first_input_is_read_in_place(isa, gates, lbr, batch):
    """A batch-first input (the transpose of the caller's (batch, seq, I) array) is read where
    it lies: fused (batch 14, 16, 30) the step reads x_t at pre_step I, pre_row seq * I; on the
    GEMM rows (3, 17) the projection runs over the caller's batch * seq rows and the step
    reads it at pre_step G * H, pre_row seq * G * H. No copy instruction in either plan."""
    rng = np.random.default_rng(batch + gates)
    size, h, seq = 6, 12, 5
    w = [Tensor.from_numpy(_r(rng, *s)) for s in ((gates * h, size), (gates * h, h),
                                                  (gates * h,), (gates * h,))]
    x = _r(rng, batch, seq, size, scale=1.0)

    def fn(x):
        xt = om.ops.transpose(x, 0, 1)
        if gates == 4:
            return om.ops.lstm(xt, *w)[0]
        return om.ops.gru(xt, *w, linear_before_reset=lbr)[0]

    traced = om.trace(fn, Tensor.from_numpy(x), None, None, None)
    feeds = {traced.input_names[0]: x}
    compiled, _ = _check(traced, feeds)
    fields, _ = _rnn_instructions(compiled, feeds, "LSTM" if gates == 4 else "GRU")
    fused = batch in (14, 16, 30)
    want = (size, seq * size) if fused else (gates * h, seq * gates * h)
    assert [(f[17], f[18]) for f in fields] == [want], fields
    assert _copies(compiled, feeds) == 0


@pytest.mark.parametrize("batch", [16, 3])
def test_input_with_strided_rows_is_copied_first(isa, batch):
    """An input whose rows are not unit-stride (every other feature) is copied into a
    contiguous sequence first, and the result is unchanged."""
    rng = np.random.default_rng(batch)
    size, h, seq = 4, 8, 3
    w = [Tensor.from_numpy(_r(rng, *s)) for s in ((4 * h, size), (4 * h, h))]
    x = _r(rng, seq, batch, 2 * size, scale=1.0)

    def fn(x):
        return om.ops.lstm(x[:, :, ::2], *w)[0]

    traced = om.trace(fn, Tensor.from_numpy(x), None, None, None)
    feeds = {traced.input_names[0]: x}
    compiled, _ = _check(traced, feeds)
    fields, _ = _rnn_instructions(compiled, feeds, "LSTM")
    want = (batch * size, size) if batch == 16 else (batch * 4 * h, 4 * h)
    assert [(f[17], f[18]) for f in fields] == [want], fields
    assert _copies(compiled, feeds) == 1
