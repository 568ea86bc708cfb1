"""ONNX BitCast (opset 26) and the ``bitcast`` op (torch's ``x.view(dtype)``): bits kept exactly,
against ONNX Runtime on every backend, both ways; a width change scales the last axis (and
exports through unsigned integers); a dtype OneModel lacks is refused by name."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel import DType, Tensor  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError, from_onnx  # noqa: E402

from .references.bitcast import REFERENCES  # noqa: E402

rng = np.random.default_rng(11)
_CODE = {np.float16: TP.FLOAT16, np.float32: TP.FLOAT, np.float64: TP.DOUBLE, np.int8: TP.INT8,
         np.int16: TP.INT16, np.int32: TP.INT32, np.int64: TP.INT64, np.uint8: TP.UINT8,
         np.uint16: TP.UINT16, np.uint32: TP.UINT32, np.uint64: TP.UINT64, np.bool_: TP.BOOL}


def _values(dt, shape):
    if dt == np.bool_:
        return rng.standard_normal(shape) > 0
    raw = rng.integers(0, 256, (*shape, np.dtype(dt).itemsize), dtype=np.uint8)
    return raw.view(dt).reshape(shape)  # every bit pattern, NaNs and infinities included


def _bits_equal(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    assert got.tobytes() == want.tobytes()


def _model(src, dst, shape):
    node = h.make_node("BitCast", ["x"], ["y"], to=_CODE[dst])
    return h.make_model(h.make_graph([node], "g", [h.make_tensor_value_info("x", _CODE[src],
                                                                            shape)],
                                     [h.make_tensor_value_info("y", _CODE[dst], shape)]),
                        opset_imports=[h.make_opsetid("", 26)])


SAME_WIDTH = [(np.float32, np.int32), (np.int32, np.float32), (np.float64, np.int64),
              (np.uint64, np.float64), (np.float16, np.uint16), (np.int16, np.float16),
              (np.uint32, np.int32), (np.int8, np.uint8), (np.uint8, np.int8)]


@pytest.mark.parametrize("src,dst", SAME_WIDTH, ids=lambda d: np.dtype(d).name)
def test_bitcast_import_matches_onnx_runtime_on_every_backend(src, dst):
    model = _model(src, dst, ["n", 5])
    sess_ort = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    graph = from_onnx(model)
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            for n in (3, 1):
                x = _values(src, (n, 5))
                (want,) = sess_ort.run(None, {"x": x})
                _bits_equal(sess.run({"x": x})["y"].numpy(), want)
                _bits_equal(want, REFERENCES["bitcast"](x, DType.from_numpy(dst)))


def test_bool_to_uint8_imports():
    """ONNX Runtime has no bool BitCast; onnx's reference evaluator is the check here."""
    from onnx.reference import ReferenceEvaluator

    model = _model(np.bool_, np.uint8, [6])
    x = np.array([True, False, True, True, False, False])
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    graph = from_onnx(model)
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            _bits_equal(sess.run({"x": x})["y"].numpy(), want)


@pytest.mark.parametrize("code,name", [(TP.BFLOAT16, "bfloat16"), (TP.FLOAT8E4M3FN, "float8"),
                                       (TP.COMPLEX64, "complex64")])
def test_a_target_onemodel_lacks_is_refused_by_name(code, name):
    node = h.make_node("BitCast", ["x"], ["y"], to=code)
    model = h.make_model(h.make_graph([node], "g", [h.make_tensor_value_info("x", TP.FLOAT16
                                                                             if code == TP.BFLOAT16
                                                                             else TP.UINT8, [4])],
                                      [h.make_empty_tensor_value_info("y")]),
                         opset_imports=[h.make_opsetid("", 26)])
    with pytest.raises(OnnxUnsupportedError, match=f"BitCast's attribute 'to'.*{name}"):
        from_onnx(model)


def test_a_target_of_another_width_is_refused_naming_the_attribute():
    node = h.make_node("BitCast", ["x"], ["y"], to=TP.INT64)
    model = h.make_model(h.make_graph([node], "g", [h.make_tensor_value_info("x", TP.FLOAT, [4])],
                                      [h.make_empty_tensor_value_info("y")]),
                         opset_imports=[h.make_opsetid("", 26)])
    with pytest.raises(OnnxUnsupportedError, match="attribute 'to' must name a type of the "
                                                   "input's width"):
        from_onnx(model)


WIDTHS = [(np.float32, np.uint8), (np.uint8, np.float32), (np.float64, np.int16),
          (np.int16, np.float64), (np.uint16, np.bool_), (np.bool_, np.int32),
          (np.float32, np.int32), (np.int8, np.bool_)]


@pytest.mark.parametrize("src,dst", WIDTHS, ids=lambda d: np.dtype(d).name)
def test_export_runs_in_onnx_runtime_and_imports_back(src, dst, tmp_path):
    """Tensor.view(dtype) traced, exported at opset 26 (another width goes through unsigned
    shifts), run by ONNX Runtime and imported back, each bit for bit with the reference."""
    x = _values(src, (2, 8))
    want = REFERENCES["bitcast"](x, DType.from_numpy(dst))
    _bits_equal(Tensor.from_numpy(x).view(DType.from_numpy(dst)).numpy(), want)
    traced = om.trace(lambda t: t.view(DType.from_numpy(dst)), Tensor.from_numpy(x), "n", None)
    path = tmp_path / "m.onnx"
    traced.save_onnx(path, opset=26)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x})
    _bits_equal(got, want)
    back = om.load_onnx(path)
    with back.create_session(backend="numpy") as s:
        _bits_equal(next(iter(s.run({"input": x}).values())).numpy(), want)


def test_export_below_opset_26_is_refused():
    traced = om.trace(lambda t: t.view(DType.I32), Tensor.from_numpy(np.ones(3, np.float32)))
    with pytest.raises(om.OneModelError, match="BitCast needs opset 26"):
        om.formats.onnx_export.to_onnx(traced, opset=21)


def test_the_last_axis_scales_and_must_divide():
    x = Tensor.from_numpy(np.arange(6, dtype=np.uint8).reshape(2, 3))
    with pytest.raises(om.OneModelError, match="multiple of 2"):
        om.ops.bitcast(x, dtype="u16")
    with pytest.raises(om.OneModelError, match="0-d tensor"):
        om.ops.bitcast(Tensor.from_numpy(np.array(1.0, np.float32)), dtype="u8")
    assert tuple(om.ops.bitcast(x, dtype="bool").shape) == (2, 3)
    y = Tensor.from_numpy(np.ones((2, 4), np.float64)).view(DType.U16)
    assert tuple(y.shape) == (2, 16)


def test_a_symbolic_last_axis_lengthens_in_a_trace():
    traced = om.trace(lambda t: t.view(DType.U8), Tensor.from_numpy(np.ones((2, 3), np.float32)),
                      None, "n")
    x = np.linspace(-2, 2, 10, dtype=np.float32).reshape(2, 5)
    for backend in om.backends():
        with traced.create_session(backend=backend) as s:
            _bits_equal(s.run({"input": x})["output"].numpy(), x.view(np.uint8))
