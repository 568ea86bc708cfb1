"""Native lstm and gru (rnn_rules.py, csrc/om_rnn.h): om.nn.LSTM / GRU in every configuration,
the ops with either GRU reset form, symbolic batch and sequence axes, and ONNX imports, against
the numpy backend (the documented rtol=1e-4, atol=1e-5) and the textbook cell equations of
onemodel/testing/rnn_reference.py (float64), on both kernel copies; the plan must hold no numpy step for
them. Weights given at run time fall back, and the plan says why."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.testing.rnn_reference import gru as ref_gru
from onemodel.testing.rnn_reference import lstm as ref_lstm

TOL = dict(rtol=1e-4, atol=1e-5)


def _r(rng, *shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _trace(fn, *arrays, axes=None):
    """Trace ``fn`` on one or more arrays, every axis fixed (or ``axes`` for a single input)."""
    if len(arrays) == 1:
        return om.trace(fn, Tensor.from_numpy(arrays[0]), *(axes or (None,) * arrays[0].ndim))
    return om.trace(fn, {f"in{i}": (Tensor.from_numpy(a), *(None,) * a.ndim)
                         for i, a in enumerate(arrays)})


def _sessions(traced):
    return (om.Session(traced, backend="compiled"), om.Session(traced, backend="numpy"))


def _assert_native(session, feeds, ops=("lstm", "gru")):
    plan = session.plan_source(feeds)
    for op in ops:
        assert f"numpy: {op}" not in plan, plan
    assert any(f" {op} -> " in plan for op in ops), plan
    return plan


def _check(traced, feeds):
    compiled, numpy_ = _sessions(traced)
    got, want = compiled.run(feeds), numpy_.run(feeds)
    for name in want:
        np.testing.assert_allclose(got[name].numpy(), want[name].numpy(), **TOL,
                                   err_msg=name)
    _assert_native(compiled, feeds)
    return got


CONFIGS = [  # (cls, num_layers, bidirectional, batch_first, bias, states)
    (om.nn.LSTM, 1, False, False, True, False),
    (om.nn.LSTM, 2, True, True, True, True),
    (om.nn.LSTM, 1, True, False, False, True),
    (om.nn.LSTM, 2, False, True, False, False),
    (om.nn.GRU, 1, False, False, True, False),
    (om.nn.GRU, 2, True, True, True, True),
    (om.nn.GRU, 1, True, False, False, True),
    (om.nn.GRU, 2, False, True, False, False),
]


@pytest.mark.parametrize("batch", [1, 16])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: (
    f"{c[0].__name__}-l{c[1]}{'-bi' if c[2] else ''}{'-bf' if c[3] else ''}"
    f"{'' if c[4] else '-nobias'}{'-states' if c[5] else ''}"))
def test_nn_layers_run_natively_and_match_numpy(isa, cfg, batch):
    cls, layers, bi, bf, bias, states = cfg
    size, hidden, seq = 7, 12, 5  # hidden 12: one 8-lane block and a scalar tail
    om.manual_seed(3)
    m = cls(size, hidden, num_layers=layers, bidirectional=bi, batch_first=bf, bias=bias).eval()
    lstm = cls is om.nn.LSTM
    rng = np.random.default_rng(batch)
    x = _r(rng, *((batch, seq, size) if bf else (seq, batch, size)), scale=1.0)
    n = layers * (2 if bi else 1)
    s = [_r(rng, n, batch, hidden) for _ in range(2 if lstm else 1)]

    def fn(x, *st):
        hx = None if not st else (tuple(st) if lstm else st[0])
        out, fin = m(x, hx)
        fin = fin if lstm else (fin,)
        return (out, *fin)

    traced = _trace(fn, x, *(s if states else []))
    feeds = dict(zip(traced.input_names, [x] + (s if states else [])))
    _check(traced, feeds)


@pytest.mark.parametrize("lbr", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("batch", [1, 16])
def test_gru_ops_match_the_cell_equations(isa, lbr, reverse, batch):
    rng = np.random.default_rng(7)
    size, h, seq = 5, 9, 6
    w = [_r(rng, 3 * h, size), _r(rng, 3 * h, h), _r(rng, 3 * h), _r(rng, 3 * h)]
    h0 = _r(rng, batch, h)
    x = _r(rng, seq, batch, size, scale=1.0)

    def fn(x, h0):
        return om.ops.gru(x, *[Tensor.from_numpy(a) for a in w], h0, reverse=reverse,
                          linear_before_reset=lbr)

    traced = _trace(fn, x, h0)
    feeds = dict(zip(traced.input_names, [x, h0]))
    got = _check(traced, feeds)
    y, hn = ref_gru(x, *w, h0=h0, reverse=reverse, linear_before_reset=lbr)
    outs = [got[n].numpy() for n in traced.output_names]
    np.testing.assert_allclose(outs[0], y, **TOL)
    np.testing.assert_allclose(outs[1], hn, **TOL)


@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_op_matches_the_cell_equations(isa, reverse):
    rng = np.random.default_rng(8)
    size, h, seq, batch = 6, 20, 7, 3
    w = [_r(rng, 4 * h, size), _r(rng, 4 * h, h), _r(rng, 4 * h), None]
    h0, c0 = _r(rng, batch, h), _r(rng, batch, h)
    x = _r(rng, seq, batch, size, scale=2.0)
    consts = [None if a is None else Tensor.from_numpy(a) for a in w]

    def fn(x):
        return om.ops.lstm(x, *consts, Tensor.from_numpy(h0), Tensor.from_numpy(c0),
                           reverse=reverse)

    traced = _trace(fn, x)
    feeds = {traced.input_names[0]: x}
    got = _check(traced, feeds)
    want = ref_lstm(x, *w, h0=h0, c0=c0, reverse=reverse)
    for name, ref in zip(traced.output_names, want):
        np.testing.assert_allclose(got[name].numpy(), ref, **TOL, err_msg=name)


def test_symbolic_batch_and_sequence_run_at_other_sizes(isa):
    om.manual_seed(5)
    m = om.nn.LSTM(4, 16, num_layers=2, bidirectional=True, batch_first=True).eval()
    g = om.nn.GRU(32, 8).eval()

    def fn(x):
        y, _ = m(x)
        z, h = g(y.transpose(0, 1))
        return z, h

    traced = _trace(fn, np.zeros((2, 3, 4), np.float32), axes=("batch", "seq", None))
    compiled, numpy_ = _sessions(traced)
    rng = np.random.default_rng(0)
    for batch, seq in ((1, 1), (16, 9), (3, 32)):
        feeds = {traced.input_names[0]: _r(rng, batch, seq, 4, scale=1.0)}
        got, want = compiled.run(feeds), numpy_.run(feeds)
        for name in want:
            assert got[name].shape == want[name].shape
            np.testing.assert_allclose(got[name].numpy(), want[name].numpy(), **TOL)
        _assert_native(compiled, feeds)


@pytest.mark.parametrize("cls", [om.nn.LSTM, om.nn.GRU], ids=["LSTM", "GRU"])
def test_onnx_imports_stay_native(isa, cls, tmp_path):
    pytest.importorskip("onnx")
    om.manual_seed(1)
    m = cls(6, 10, num_layers=2, bidirectional=True).eval()

    def fn(x):
        return m(x)[0]

    traced = _trace(fn, np.zeros((5, 2, 6), np.float32), axes=("seq", "batch", None))
    path = str(tmp_path / "rnn.onnx")
    traced.save_onnx(path)
    loaded = om.load_onnx(path)
    x = _r(np.random.default_rng(2), 8, 3, 6, scale=1.0)
    feeds = {loaded.input_names[0]: x}
    want = om.Session(traced, backend="numpy").run({traced.input_names[0]: x})
    got = om.Session(loaded, backend="compiled").run(feeds)
    np.testing.assert_allclose(got[loaded.output_names[0]].numpy(),
                               want[traced.output_names[0]].numpy(), **TOL)
    plan = _assert_native(om.Session(loaded, backend="compiled"), feeds,
                          (cls.__name__.lower(),))
    assert plan.count(f" {cls.__name__.lower()} -> ") >= 4


def test_onnx_gru_default_reset_imports_natively(isa):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from onemodel.formats.onnx_import import from_onnx
    from onemodel.runtime.traced_model import TracedModel

    rng = np.random.default_rng(4)
    h, size = 6, 3
    inits = {"W": _r(rng, 2, 3 * h, size), "R": _r(rng, 2, 3 * h, h), "B": _r(rng, 2, 6 * h)}
    node = helper.make_node("GRU", ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=h,
                            direction="bidirectional")
    graph = helper.make_graph(
        [node], "gru", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 2, size])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("Y", "Y_h")],
        [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = TracedModel(from_onnx(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 14)])))
    feeds = {"X": _r(rng, 4, 2, size, scale=1.0)}
    _check(model, feeds)


@pytest.mark.parametrize("lbr", [0, 1])
def test_onnx_gru_batch_in_lanes_matches_onnxruntime(isa, lbr):
    """An ONNX GRU, bidirectional, batch 16, with and without linear_before_reset: both
    directions fused (flags 4 | 1 and the reset form's 2), against onnxruntime and numpy."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    from onemodel.formats.onnx_import import from_onnx
    from onemodel.runtime.traced_model import TracedModel

    rng = np.random.default_rng(11 + lbr)
    h, size, seq, batch = 12, 5, 7, 16
    inits = {"W": _r(rng, 2, 3 * h, size), "R": _r(rng, 2, 3 * h, h), "B": _r(rng, 2, 6 * h),
             "H0": _r(rng, 2, batch, h)}
    node = helper.make_node("GRU", ["X", "W", "R", "B", "", "H0"], ["Y", "Y_h"],
                            hidden_size=h, direction="bidirectional", linear_before_reset=lbr)
    graph = helper.make_graph(
        [node], "gru", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, batch, size])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("Y", "Y_h")],
        [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model = TracedModel(from_onnx(proto))
    feeds = {"X": _r(rng, seq, batch, size, scale=1.0)}
    got = _check(model, feeds)
    want = ort.InferenceSession(proto.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    for name, ref in zip(("Y", "Y_h"), want):
        np.testing.assert_allclose(got[name].numpy(), ref, **TOL, err_msg=name)
    flags = _rnn_flags(om.Session(model, backend="compiled"), feeds, "GRU")
    assert sorted(flags) == [4 | 2 * lbr, 5 | 2 * lbr], flags


def test_weights_given_at_run_time_fall_back_and_say_why():
    rng = np.random.default_rng(0)
    x, w_ih, w_hh = _r(rng, 3, 2, 4), _r(rng, 9, 4), _r(rng, 9, 3)
    traced = _trace(lambda x, a, b: om.ops.gru(x, a, b)[0], x, w_ih, w_hh)
    feeds = dict(zip(traced.input_names, (x, w_ih, w_hh)))
    compiled, numpy_ = _sessions(traced)
    np.testing.assert_allclose(compiled.run(feeds)[traced.output_names[0]].numpy(),
                               numpy_.run(feeds)[traced.output_names[0]].numpy(), **TOL)
    plan = compiled.plan_source(feeds)
    assert "numpy: gru" in plan and "computed at run time" in plan, plan


@pytest.mark.parametrize("cell", ["lstm", "gru", "gru_onnx_reset"])
def test_saturated_gates_and_nan_match(isa, cell):
    """Pre-activations far past where tanh and sigmoid round to +-1 / 0 / 1 (the gates' clamp),
    and a NaN in the input, which numpy spreads to every later step."""
    rng = np.random.default_rng(11)
    g = 4 if cell == "lstm" else 3
    size, h, seq, batch = 3, 11, 5, 2
    w = [_r(rng, g * h, size, scale=6.0), _r(rng, g * h, h, scale=6.0), _r(rng, g * h),
         _r(rng, g * h)]
    x = _r(rng, seq, batch, size, scale=8.0)
    consts = [Tensor.from_numpy(a) for a in w]
    params = {} if cell == "lstm" else {"linear_before_reset": cell == "gru"}

    def fn(x):
        return (om.ops.lstm if cell == "lstm" else om.ops.gru)(x, *consts, **params)

    traced = _trace(fn, x)
    name = traced.input_names[0]
    got = _check(traced, {name: x})
    ref = (ref_lstm(x, *w) if cell == "lstm" else
           ref_gru(x, *w, linear_before_reset=cell == "gru"))
    for out, want in zip(traced.output_names, ref):
        np.testing.assert_allclose(got[out].numpy(), want, **TOL, err_msg=out)
    bad = x.copy()
    bad[1, 0, 0] = np.nan
    got = _check(traced, {name: bad})
    y = got[traced.output_names[0]].numpy()
    assert np.isnan(y[1:, 0]).all() and not np.isnan(y[:, 1]).any()


def _rnn_flags(session, feeds, op: str = "LSTM") -> list:
    """The flags field (14) of every I_LSTM (or I_GRU) instruction of the plan for ``feeds``
    (after the opcode and the length)."""
    from onemodel_backend_compiled import program as P
    from onemodel_backend_compiled.lower import NativeSegment

    _, env = session._check_feeds(feeds)
    plan = session._compiled.plan(env)
    return [int(ins[2 + 14]) for seg in plan.segments if isinstance(seg, NativeSegment)
            for ins in seg.instructions if int(ins[0]) == getattr(P, f"I_{op}")]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("batch,hidden", [(14, 12), (15, 4), (16, 20), (30, 8), (70, 28),
                                          (16, 6), (17, 12), (8, 16)])
def test_lstm_batch_in_lanes_matches_the_cell_equations(isa, batch, hidden, reverse):
    """An LSTM whose batch fills 16 lanes (rnn_rules.fused_rnn) runs with the batch in the
    lanes (om_rnn.h lstm_fused): one group of 14, 15 or 16 rows, two of 16 and 14, five whose
    last has 6 (one 8-lane half empty), units past the last 8-lane block (12, 20, 28); hidden 6
    (not a multiple of 4), batch 17 and 8 keep the GEMM rows. Initial states both ways,
    against the float64 cell equations."""
    from onemodel_backend_compiled.rnn_rules import fused_rnn

    rng = np.random.default_rng(batch * 100 + hidden)
    size, seq = 5, 6
    w = [_r(rng, 4 * hidden, size), _r(rng, 4 * hidden, hidden), _r(rng, 4 * hidden),
         _r(rng, 4 * hidden)]
    h0, c0 = _r(rng, batch, hidden), _r(rng, batch, hidden)
    x = _r(rng, seq, batch, size, scale=1.5)
    consts = [Tensor.from_numpy(a) for a in w]

    def fn(x, h0, c0):
        return om.ops.lstm(x, *consts, h0, c0, reverse=reverse)

    traced = _trace(fn, x, h0, c0)
    feeds = dict(zip(traced.input_names, [x, h0, c0]))
    got = _check(traced, feeds)
    want = ref_lstm(x, *w, h0=h0, c0=c0, reverse=reverse)
    for name, ref in zip(traced.output_names, want):
        np.testing.assert_allclose(got[name].numpy(), ref, **TOL, err_msg=name)
    fused = fused_rnn(4, batch, hidden, False)
    assert fused == (batch in (14, 15, 16, 30, 70) and hidden != 6)
    flags = _rnn_flags(om.Session(traced, backend="compiled"), feeds)
    assert flags == [(4 if fused else 0) | (1 if reverse else 0)], flags


@pytest.mark.parametrize("bias", [True, False])
def test_lstm_batch_in_lanes_bidirectional_layers_without_states(isa, bias):
    """om.nn.LSTM, two bidirectional layers, batch first, no initial states, batch 15: all four
    directions fused, with and without biases."""
    om.manual_seed(9)
    m = om.nn.LSTM(6, 16, num_layers=2, bidirectional=True, batch_first=True, bias=bias).eval()
    x = _r(np.random.default_rng(9), 15, 7, 6, scale=1.0)

    def fn(x):
        out, (h, c) = m(x)
        return out, h, c

    traced = _trace(fn, x)
    feeds = {traced.input_names[0]: x}
    _check(traced, feeds)
    assert _rnn_flags(om.Session(traced, backend="compiled"), feeds) == [4, 5, 4, 5]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("lbr", [True, False])
@pytest.mark.parametrize("batch,hidden", [(14, 12), (16, 6), (30, 10), (70, 4), (16, 9),
                                          (17, 12), (16, 20), (30, 8)])
def test_gru_batch_in_lanes_matches_the_cell_equations(isa, batch, hidden, reverse, lbr):
    """A GRU whose batch fills 16 lanes runs fused: with linear_before_reset and an even
    hidden size (om_rnn.h gru_fused: pairs of units, W_hn h kept apart from W_in x), without
    it (ONNX's default) and a hidden size a multiple of 4 (gru_fused's two-pass form: r h
    first, then n over it by four units). Groups of 14 and 16, 16 + 14, a last group of 6; hidden 9 (odd),
    6 and 10 without the reset form's fours, and batch 17 keep the GEMM rows. Initial state,
    both directions, against the float64 cell equations."""
    from onemodel_backend_compiled.rnn_rules import fused_rnn

    rng = np.random.default_rng(batch * 10 + hidden)
    size, seq = 5, 6
    w = [_r(rng, 3 * hidden, size), _r(rng, 3 * hidden, hidden), _r(rng, 3 * hidden),
         _r(rng, 3 * hidden)]
    h0 = _r(rng, batch, hidden)
    x = _r(rng, seq, batch, size, scale=1.5)
    consts = [Tensor.from_numpy(a) for a in w]

    def fn(x, h0):
        return om.ops.gru(x, *consts, h0, reverse=reverse, linear_before_reset=lbr)

    traced = _trace(fn, x, h0)
    feeds = dict(zip(traced.input_names, [x, h0]))
    got = _check(traced, feeds)
    y, hn = ref_gru(x, *w, h0=h0, reverse=reverse, linear_before_reset=lbr)
    outs = [got[n].numpy() for n in traced.output_names]
    np.testing.assert_allclose(outs[0], y, **TOL)
    np.testing.assert_allclose(outs[1], hn, **TOL)
    fused = fused_rnn(3, batch, hidden, lbr)
    assert fused == (batch != 17 and hidden % (2 if lbr else 4) == 0)
    flags = _rnn_flags(om.Session(traced, backend="compiled"), feeds, "GRU")
    assert flags == [(4 if fused else 0) | (2 if lbr else 0) | (1 if reverse else 0)], flags


@pytest.mark.parametrize("bias", [True, False])
def test_gru_batch_in_lanes_bidirectional_layers_without_states(isa, bias):
    """om.nn.GRU, two bidirectional layers, batch first, no initial state, batch 16: all four
    directions fused, with and without biases."""
    om.manual_seed(10)
    m = om.nn.GRU(6, 14, num_layers=2, bidirectional=True, batch_first=True, bias=bias).eval()
    x = _r(np.random.default_rng(10), 16, 7, 6, scale=1.0)

    def fn(x):
        out, h = m(x)
        return out, h

    traced = _trace(fn, x)
    feeds = {traced.input_names[0]: x}
    _check(traced, feeds)
    assert _rnn_flags(om.Session(traced, backend="compiled"), feeds, "GRU") == [6, 7, 6, 7]
