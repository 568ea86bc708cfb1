"""max_pool1d / max_pool2d / adaptive_max_pool2d with return_indices=True: torch's indices
(each window's first maximum, a flat index into its own (H, W) plane), eagerly, traced with a
symbolic batch on every backend, and exported to ONNX (MaxPool's Indices output). The
registry samples run the generic checks; this file adds torch itself and the edges."""
import pathlib

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from tests.references.nn import max_pool2d as max_pool2d_reference
from tests.references.nn_more import _adaptive_max_indices

ops = om.ops
F = om.nn.functional

CASES_2D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2)),
    dict(kernel_size=2, stride=1, dilation=2),
    dict(kernel_size=3, stride=2, ceil_mode=True),
]


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _ties(*shape):
    return np.random.default_rng(1).integers(0, 3, shape).astype(np.float32)  # many equal maxima


@pytest.mark.parametrize("kw", CASES_2D, ids=str)
@pytest.mark.parametrize("make", [_x, _ties], ids=["random", "ties"])
def test_max_pool2d_indices_match_the_reference(kw, make):
    x = make(2, 3, 7, 8)
    values, indices = ops.max_pool2d(Tensor.from_numpy(x), return_indices=True, **kw)
    want_v, want_i = max_pool2d_reference(x, return_indices=True, **kw)
    np.testing.assert_array_equal(values.numpy(), want_v)
    assert indices.dtype == om.DType.I64
    np.testing.assert_array_equal(indices.numpy(), want_i)
    # each index reads its value back from the input plane
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(
        np.take_along_axis(flat, indices.numpy().reshape(2, 3, -1), -1).reshape(values.shape),
        values.numpy())


@pytest.mark.parametrize("kw", CASES_2D, ids=str)
@pytest.mark.parametrize("make", [_x, _ties], ids=["random", "ties"])
def test_pool_indices_match_torch(kw, make):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = make(2, 3, 7, 8)
    got = F.max_pool2d(Tensor.from_numpy(x), return_indices=True, **kw)
    want = tf.max_pool2d(torch.from_numpy(x), return_indices=True, **kw)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    kw1 = {k: (v[1] if isinstance(v, tuple) else v) for k, v in kw.items()}
    got = F.max_pool1d(Tensor.from_numpy(x[:, :, 0]), return_indices=True, **kw1)
    want = tf.max_pool1d(torch.from_numpy(x[:, :, 0]), return_indices=True, **kw1)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("size", [(3, 4), (2, 4), 1, (None, 3)])
def test_adaptive_max_pool2d_indices(size):
    x = _ties(2, 3, 7, 8)
    values, indices = ops.adaptive_max_pool2d(Tensor.from_numpy(x), size, return_indices=True)
    np.testing.assert_array_equal(indices.numpy(), _adaptive_max_indices(x, size))
    np.testing.assert_array_equal(values.numpy(), ops.adaptive_max_pool2d(
        Tensor.from_numpy(x), size).numpy())
    try:
        import torch
    except ImportError:
        return
    want = torch.nn.functional.adaptive_max_pool2d(torch.from_numpy(x), size, True)
    np.testing.assert_array_equal(indices.numpy(), want[1].numpy())


def test_the_values_gradient_is_the_same_with_indices():
    x = _x(2, 2, 6, 6)
    grads = []
    for flag in (False, True):
        t = Tensor.from_numpy(x).requires_grad_()
        out = ops.max_pool2d(t, 3, 2, 1, return_indices=flag)
        (out[0] if flag else out).sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_pool_with_indices_traces_with_a_symbolic_batch_on_every_backend():
    def fn(x):
        v, i = ops.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
        v1, i1 = ops.max_pool1d(x[:, :, 0], 2, return_indices=True)
        return v, i, i1

    traced = om.trace(fn, Tensor.from_numpy(_x(2, 3, 6, 8)), "batch", None, None, None)
    x = Tensor.from_numpy(_ties(5, 3, 6, 8))
    want = [t.numpy() for t in fn(x)]
    for backend in om.backends():
        with traced.create_session(backend=backend) as session:
            got = session.run({"input": x})
            for name, w in zip(traced.output_names, want):
                np.testing.assert_array_equal(got[name].numpy(), w, err_msg=backend)


def test_indices_export_to_onnx_maxpool(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    traced = om.trace(lambda x: ops.max_pool2d(x, 3, 2, 1, return_indices=True),
                      Tensor.from_numpy(_x(2, 3, 6, 8)), "batch", None, None, None)
    path = str(pathlib.Path(tmp_path) / "pool.onnx")
    traced.save_onnx(path)
    x = _ties(4, 3, 6, 8)
    got = ort.InferenceSession(path).run(None, {"input": x})
    want = ops.max_pool2d(Tensor.from_numpy(x), 3, 2, 1, return_indices=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w.numpy())
    # the import names what it cannot take yet (ONNX counts over the whole tensor)
    with pytest.raises(om.OneModelError, match="MaxPool with an Indices output"):
        om.load_onnx(path)


def test_uneven_adaptive_indices_do_not_export_and_say_why(tmp_path):
    pytest.importorskip("onnx")
    traced = om.trace(lambda x: ops.adaptive_max_pool2d(x, (3, 4), return_indices=True),
                      Tensor.from_numpy(_x(2, 3, 7, 6)), "batch", None, None, None)
    with pytest.raises(om.OneModelError, match=r"return_indices.*divide evenly"):
        traced.save_onnx(str(pathlib.Path(tmp_path) / "a.onnx"))
