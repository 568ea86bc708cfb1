"""Sizes that simplify end to end (issue 25): what the engine proves lets the next op accept a
size, in a trace and in an ONNX import, checked against numpy and ONNX Runtime."""
import numpy as np

import onemodel as om
from onemodel import DType, Tensor
from onemodel.core.symbolic import Dim, evaluate
from onemodel.registry import REGISTRY

F32 = DType.F32


def backends():
    return sorted(REGISTRY.tables().backends)


W1 = Tensor.randn(F32, 4, 2, 3, seed=1)
W2 = Tensor.randn(F32, 4, 4, 3, seed=2)
LIN = Tensor.randn(F32, 4, 5, seed=3)


def two_stride2_convs_then_linear(x):
    h = om.ops.conv1d(x, W1, stride=2)
    h = om.ops.conv1d(h.relu(), W2, stride=2)
    b, _, t = h.shape
    return h.transpose(1, 2).reshape(b, t, -1) @ LIN      # -1 must be the 4 channels


def _numpy_reference(x):
    def conv(v, w):
        k = w.shape[2]
        n = (v.shape[2] - k) // 2 + 1
        cols = np.stack([v[:, :, 2 * i:2 * i + k] for i in range(n)], axis=2)  # (N, C, n, k)
        return np.einsum("ncik,ock->noi", cols, w)
    h = np.maximum(conv(x, W1.numpy()), 0)
    h = conv(h, W2.numpy())
    return h.transpose(0, 2, 1) @ LIN.numpy()


def test_reshape_minus_one_after_two_stride2_convs_traces():
    traced = om.trace(two_stride2_convs_then_linear, Tensor.randn(F32, 3, 2, 20), "batch", None,
                      "seq")
    g = traced.graph
    shape = g.output_value(g.output_names[0]).type.shape
    seq = Dim.symbol("seq")
    assert shape[2] == 5                                   # the matmul accepted the -1
    assert shape[1] == ((seq - 3) // 2 + 1 - 3) // 2 + 1   # the same expression, however built
    for n in range(7, 80):
        assert evaluate(shape[1], {"seq": n}) == ((n - 3) // 2 + 1 - 3) // 2 + 1
    for backend in backends():
        session = traced.create_session(backend=backend)
        for n in (11, 24):
            x = np.random.default_rng(n).standard_normal((2, 2, n)).astype(np.float32)
            got = session.run({"input": x})[traced.output_names[0]].numpy()
            np.testing.assert_allclose(got, _numpy_reference(x), rtol=1e-4,
                                       atol=1e-5, err_msg=f"{backend} at length {n}")
