"""U16, U32 and U64 (issue 16): numpy's promotion, ops, sessions and ONNX both ways."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.core.dtype import promote_types

INTS = [DType.I8, DType.I16, DType.I32, DType.I64, DType.U8, DType.U16, DType.U32, DType.U64]


@pytest.mark.parametrize("a,b", list(itertools.product(INTS, INTS)))
def test_integer_promotion_is_numpys(a, b):
    want = np.result_type(np.zeros(1, a.numpy), np.zeros(1, b.numpy))
    assert promote_types(a, b).numpy == want


@pytest.mark.parametrize("u", [DType.U16, DType.U32, DType.U64])
def test_unsigned_tensors_compute_and_keep_their_dtype(u):
    x = Tensor.from_numpy(np.array([1, 2, 60000], u.numpy))
    y = x + Tensor.from_numpy(np.array([3, 4, 5], u.numpy))
    assert y.dtype == u and y.numpy().tolist() == [4, 6, 60005]
    assert (x + 1.5).dtype == DType.F32  # a float wins, PyTorch's rule
    assert DType.parse(u.value) is u and DType.from_numpy(u.numpy) is u


@pytest.mark.parametrize("u", [DType.U16, DType.U32, DType.U64])
def test_unsigned_inputs_through_onnx_and_every_backend(u, tmp_path):
    pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator  # onnxruntime lacks most u16 kernels

    def fn(x):
        return om.ops.maximum(x, x * 2)

    traced = om.trace(fn, Tensor.from_numpy(np.arange(6, dtype=u.numpy).reshape(3, 2)),
                      "batch", None)
    path = tmp_path / "u.onnx"
    traced.save_onnx(path)
    x = np.array([[7, 1], [2, 9], [4, 4], [0, 3]], u.numpy)
    want = np.maximum(x, x * 2)
    np.testing.assert_array_equal(ReferenceEvaluator(str(path)).run(None, {"input": x})[0], want)
    back = om.load_onnx(path)
    for backend in om.backends():
        with back.create_session(backend=backend) as s:
            out = s.run({"input": x})["output"].numpy()
            assert out.dtype == u.numpy
            np.testing.assert_array_equal(out, want)
