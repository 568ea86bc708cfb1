"""ONNX import of DFT, STFT and MelWeightMatrix (issue 25): DFT as one einsum with a constant
transform tensor, so every backend runs it (a one-sided DFT over an axis fed at run time, STFT
and MelWeightMatrix as kinds of ``sized_from_data``). Each model runs on every backend against
numpy's FFT and against ONNX Runtime (onnx's reference evaluator where ONNX Runtime refuses the
node); a size fed at run time is run at two values by one session."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError, from_onnx  # noqa: E402

F, D, I64, I32 = TP.FLOAT, TP.DOUBLE, TP.INT64, TP.INT32
rng = np.random.default_rng(11)


def _model(node, inputs, opset):
    return h.make_model(h.make_graph([node], "g", [h.make_tensor_value_info(n, t, s)
                                                   for n, t, s in inputs],
                                     [h.make_empty_tensor_value_info(o) for o in node.output]),
                        opset_imports=[h.make_opsetid("", opset)])


def _runtime(model, feeds, reference=False):
    """ONNX Runtime, or onnx's reference evaluator where ONNX Runtime refuses the model (or
    where it departs from the ONNX spec: ``reference``)."""
    try:
        if reference:
            raise NotImplementedError("the reference evaluator follows the spec here")
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        sess.run(None, feeds)
        return lambda feeds: sess.run(None, feeds)
    except Exception:  # noqa: BLE001 - ORT lacks this form: the reference evaluator decides
        ref = ReferenceEvaluator(model)
        return lambda feeds: ref.run(None, feeds)


def _check(model, feed_sets, numpy_refs, rtol=1e-4, atol=1e-4, reference=False):
    runtime = _runtime(model, feed_sets[0], reference)
    graph = from_onnx(model)
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            for feeds, ref in zip(feed_sets, numpy_refs):
                want = runtime(feeds)[0]
                got = sess.run(feeds)[graph.outputs[0][0]].numpy()
                assert got.shape == want.shape == ref.shape, (backend, got.shape, want.shape)
                assert got.dtype == want.dtype, (backend, got.dtype, want.dtype)
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=backend)
                np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, err_msg=backend)


def _complex(x):
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0]


def _split(z):
    return np.stack([z.real, z.imag], -1).astype(np.float32)


def _np_dft(x, axis, length=None, inverse=False, onesided=False):
    z = _complex(x.astype(np.float64))
    if inverse and onesided:
        return np.fft.irfft(z, n=length, axis=axis)[..., None].astype(np.float32)
    y = (np.fft.ifft if inverse else np.fft.fft)(z, n=length, axis=axis)
    if onesided:
        n = y.shape[axis] // 2 + 1
        y = np.take(y, np.arange(n), axis=axis)
    return _split(y)


@pytest.mark.parametrize("axis", [1, 2, -2, -3])
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("onesided", [0, 1])
def test_dft_forward_opset17(axis, channels, onesided):
    m = _model(h.make_node("DFT", ["x"], ["y"], axis=axis, onesided=onesided),
               [("x", F, [2, 6, 5, channels])], 17)
    x = rng.standard_normal((2, 6, 5, channels)).astype(np.float32)
    _check(m, [{"x": x}], [_np_dft(x, axis % 4, onesided=bool(onesided))])


@pytest.mark.parametrize("axis", [1, 2])
@pytest.mark.parametrize("channels", [1, 2])
def test_dft_inverse_opset17(axis, channels):
    m = _model(h.make_node("DFT", ["x"], ["y"], axis=axis, inverse=1),
               [("x", F, [2, 6, 5, channels])], 17)
    x = rng.standard_normal((2, 6, 5, channels)).astype(np.float32)
    _check(m, [{"x": x}], [_np_dft(x, axis, inverse=True)])


@pytest.mark.parametrize("bins", [4, 5])
def test_dft_inverse_onesided_is_irfft(bins):
    """A one-sided spectrum of n bins gives 2 * (n - 1) real samples."""
    m = _model(h.make_node("DFT", ["x"], ["y"], axis=1, inverse=1, onesided=1),
               [("x", F, [3, bins, 2])], 17)
    x = rng.standard_normal((3, bins, 2)).astype(np.float32)
    _check(m, [{"x": x}], [_np_dft(x, 1, inverse=True, onesided=True)])


@pytest.mark.parametrize("length", [4, 6, 9, 10])
@pytest.mark.parametrize("inverse,onesided", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_dft_length_truncates_or_pads(length, inverse, onesided):
    """dft_length below the axis size drops samples, above it pads zeros (an initializer). For
    the inverse one-sided transform with more or fewer bins than ``L // 2 + 1`` ONNX Runtime
    1.x departs from the spec (and numpy's irfft, which the reference evaluator follows)."""
    node = h.make_node("DFT", ["x", "n"], ["y"], axis=1, inverse=inverse, onesided=onesided)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("x", F, [2, 6, 2])],
                         [h.make_empty_tensor_value_info("y")],
                         initializer=[h.make_tensor("n", I64, [], [length])])
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    x = rng.standard_normal((2, 6, 2)).astype(np.float32)
    _check(m, [{"x": x}], [_np_dft(x, 1, length, bool(inverse), bool(onesided))],
           reference=bool(inverse and onesided and length != 10))


@pytest.mark.parametrize("inverse", [0, 1])
def test_dft_axis_fed_at_run_time(inverse):
    """Opset 20: one session, the axis (negative too) chosen by the data."""
    m = _model(h.make_node("DFT", ["x", "", "axis"], ["y"], inverse=inverse),
               [("x", F, [2, 4, 4, 2]), ("axis", I64, [])], 20)
    x = rng.standard_normal((2, 4, 4, 2)).astype(np.float32)
    feeds = [{"x": x, "axis": np.array(a, np.int64)} for a in (1, 2, -4)]
    _check(m, feeds, [_np_dft(x, a % 4, inverse=bool(inverse)) for a in (1, 2, -4)])


@pytest.mark.parametrize("inverse,onesided,channels", [(0, 1, 1), (0, 1, 2), (1, 1, 2)])
def test_dft_one_sided_axis_fed_at_run_time(inverse, onesided, channels):
    """The output shape depends on the axis value: sizes read at run time (sized_from_data)."""
    m = _model(h.make_node("DFT", ["x", "", "axis"], ["y"], inverse=inverse, onesided=onesided),
               [("x", F, [2, 5, 6, channels]), ("axis", I64, [])], 20)
    x = rng.standard_normal((2, 5, 6, channels)).astype(np.float32)
    axes = (1, -2, 0)
    _check(m, [{"x": x, "axis": np.array(a, np.int64)} for a in axes],
           [_np_dft(x, a % 4, inverse=bool(inverse), onesided=bool(onesided)) for a in axes])


def test_dft_one_sided_axis_fed_with_a_length():
    node = h.make_node("DFT", ["x", "n", "axis"], ["y"], onesided=1)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("x", F, [2, 5, 6, 1]),
                                       h.make_tensor_value_info("axis", I64, [])],
                         [h.make_empty_tensor_value_info("y")],
                         initializer=[h.make_tensor("n", I64, [], [8])])
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 20)])
    x = rng.standard_normal((2, 5, 6, 1)).astype(np.float32)
    _check(m, [{"x": x, "axis": np.array(a, np.int64)} for a in (1, 2)],
           [_np_dft(x, a, 8, onesided=True) for a in (1, 2)])


def test_dft_float64_and_constant_axis_opset20():
    node = h.make_node("DFT", ["x", "", "axis"], ["y"], onesided=1)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("x", D, [3, 8, 1])],
                         [h.make_empty_tensor_value_info("y")],
                         initializer=[h.make_tensor("axis", I64, [], [-2])])
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 20)])
    x = rng.standard_normal((3, 8, 1))
    ref = np.fft.rfft(x[..., 0], axis=1)
    _check(m, [{"x": x}], [np.stack([ref.real, ref.imag], -1)], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case,match", [
    ("length_fed", "dft_length fed at run time"),
    ("symbolic_axis_fed", "symbolic sizes"),
    ("bad_axis", "DFT axis 3 for a rank-4 input"),
    ("last_axis", r"last axis must be 1 \(real\) or 2"),
])
def test_dft_refusals_name_the_reason(case, match):
    if case == "length_fed":
        m = _model(h.make_node("DFT", ["x", "n"], ["y"]), [("x", F, [2, 4, 1]), ("n", I64, [])],
                   17)
    elif case == "symbolic_axis_fed":
        m = _model(h.make_node("DFT", ["x", "", "a"], ["y"]),
                   [("x", F, ["n", 4, 6, 1]), ("a", I64, [])], 20)
    elif case == "bad_axis":
        m = _model(h.make_node("DFT", ["x"], ["y"], axis=3), [("x", F, [1, 4, 6, 1])], 17)
    else:
        m = _model(h.make_node("DFT", ["x"], ["y"]), [("x", F, [1, 4, 3])], 17)
    with pytest.raises(OnnxUnsupportedError, match=match):
        from_onnx(m)


def _np_stft(x, step, window=None, length=None, onesided=True):
    n = length or (len(window) if window is not None else x.shape[1])
    frames = 1 + (x.shape[1] - n) // step
    z = _complex(x.astype(np.float64))
    at = np.arange(frames)[:, None] * step + np.arange(n)
    z = z[:, at] * (1.0 if window is None else window.astype(np.float64))
    y = np.fft.fft(z, axis=-1)
    return _split(y[..., :n // 2 + 1] if onesided else y)


@pytest.mark.parametrize("onesided", [0, 1])
@pytest.mark.parametrize("channels", [1, 2])
def test_stft_step_and_length_fed_at_run_time(onesided, channels):
    """One session runs two frame steps and two frame lengths (data sizes)."""
    m = _model(h.make_node("STFT", ["s", "step", "", "n"], ["y"], onesided=onesided),
               [("s", F, [2, 40, channels]), ("step", I64, []), ("n", I64, [])], 17)
    s = rng.standard_normal((2, 40, channels)).astype(np.float32)
    feeds = [{"s": s, "step": np.array(st, np.int64), "n": np.array(n, np.int64)}
             for st, n in ((8, 16), (5, 9))]
    _check(m, feeds, [_np_stft(s, 8, length=16, onesided=bool(onesided)),
                      _np_stft(s, 5, length=9, onesided=bool(onesided))])


def test_stft_with_window():
    m = _model(h.make_node("STFT", ["s", "step", "w"], ["y"]),
               [("s", F, [1, 50, 1]), ("step", I64, []), ("w", F, [12])], 17)
    s = rng.standard_normal((1, 50, 1)).astype(np.float32)
    w = np.hanning(12).astype(np.float32)
    feeds = [{"s": s, "step": np.array(st, np.int64), "w": w} for st in (4, 7)]
    _check(m, feeds, [_np_stft(s, st, window=w) for st in (4, 7)])


def _np_mel(mels, length, rate, low, high):
    """The triangular filters by the formula of the ONNX spec (edges rounded down to bins)."""
    to_mel = lambda f: 2595 * np.log10(1 + f / 700)  # noqa: E731
    edges = np.linspace(to_mel(low), to_mel(high), mels + 2, endpoint=False)
    edges = np.floor((length + 1) * (700 * (10 ** (edges / 2595) - 1)) / rate).astype(int)
    out = np.zeros((length // 2 + 1, mels))
    for i in range(mels):
        lo, c, hi = edges[i:i + 3]
        for j in range(lo, c + 1):
            out[j, i] = 1.0 if c == lo else (j - lo) / (c - lo)
        for j in range(c, hi):
            out[j, i] = (hi - j) / (hi - c)
    return out.astype(np.float32)


def test_mel_weight_matrix_fed_at_run_time():
    i32 = np.int32
    m = _model(h.make_node("MelWeightMatrix", ["m", "n", "r", "lo", "hi"], ["y"]),
               [("m", I32, []), ("n", I32, []), ("r", I32, []), ("lo", F, []), ("hi", F, [])],
               17)
    sets = [(8, 16, 8192, 0.0, 4096.0), (10, 64, 16000, 100.0, 7000.0)]
    feeds = [{"m": i32(a), "n": i32(b), "r": i32(c), "lo": np.float32(d), "hi": np.float32(e)}
             for a, b, c, d, e in sets]
    feeds = [{k: np.array(v) for k, v in f.items()} for f in feeds]
    _check(m, feeds, [_np_mel(*s) for s in sets], atol=1e-6)
