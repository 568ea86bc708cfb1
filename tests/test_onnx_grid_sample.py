"""ONNX's GridSample imported as ``grid_sample`` (opset 16's mode names and opset 20's, 2-D and
volumetric) against ONNX Runtime on every backend, the export back, the refusal of cubic with
border / reflection padding (where ONNX and PyTorch differ), and the op against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_export import OnnxExportError, to_onnx  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError, from_onnx  # noqa: E402

F = TP.FLOAT
rng = np.random.default_rng(11)


def _model(x_shape, grid_shape, opset=20, **attrs):
    node = h.make_node("GridSample", ["x", "grid"], ["y"], **attrs)
    return h.make_model(
        h.make_graph([node], "g", [h.make_tensor_value_info("x", F, x_shape),
                                   h.make_tensor_value_info("grid", F, grid_shape)],
                     [h.make_empty_tensor_value_info("y")]),
        opset_imports=[h.make_opsetid("", opset)])


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _feeds(x_shape, grid_shape, spread=1.3):
    return {"x": rng.standard_normal(x_shape).astype(np.float32),
            "grid": rng.uniform(-spread, spread, grid_shape).astype(np.float32)}


def _check(model, feeds, want=None):
    want = _ort(model, feeds) if want is None else want
    graph = from_onnx(model)
    assert "grid_sample" in graph.op_counts()
    for backend in om.backends():
        with om.Session(graph, backend=backend) as sess:
            got = sess.run(feeds)["y"].numpy()
            assert got.shape == want.shape and got.dtype == want.dtype, backend
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=backend)
    return graph


_COMBOS = [(m, p) for m in ("linear", "nearest", "cubic")
           for p in ("zeros", "border", "reflection") if m != "cubic" or p == "zeros"]


@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("mode,padding_mode", _COMBOS)
def test_grid_sample_2d_matches_onnxruntime(mode, padding_mode, align_corners):
    m = _model([2, 3, 4, 5], [2, 6, 7, 2], mode=mode, padding_mode=padding_mode,
               align_corners=align_corners)
    _check(m, _feeds((2, 3, 4, 5), (2, 6, 7, 2)))


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_opset_16_mode_names(mode):
    m = _model([1, 2, 3, 4], [1, 3, 3, 2], opset=16, mode=mode, align_corners=1)
    _check(m, _feeds((1, 2, 3, 4), (1, 3, 3, 2)))


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_volumetric(mode, padding_mode):
    """5-D (opset 20): ONNX Runtime, which also agrees with the point-by-point reference."""
    from .references.grid_sample import grid_sample as ref

    m = _model([1, 2, 3, 4, 2], [1, 2, 3, 2, 3], mode=mode, padding_mode=padding_mode)
    feeds = _feeds((1, 2, 3, 4, 2), (1, 2, 3, 2, 3))
    want = _ort(m, feeds)
    np.testing.assert_allclose(
        ref(feeds["x"].astype(np.float64), feeds["grid"].astype(np.float64),
            "bilinear" if mode == "linear" else mode, padding_mode), want, rtol=1e-5, atol=1e-5)
    _check(m, feeds, want)


@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
def test_cubic_with_padding_is_refused_by_name(padding_mode):
    m = _model([1, 1, 3, 3], [1, 2, 2, 2], mode="cubic", padding_mode=padding_mode)
    with pytest.raises(OnnxUnsupportedError, match=f"padding_mode='{padding_mode}'"):
        from_onnx(m)


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_exports_to_onnxruntime(mode, opset):
    x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    grid = om.Tensor.from_numpy(rng.uniform(-1.2, 1.2, (2, 3, 6, 2)).astype(np.float32))
    pad = "zeros" if mode == "bicubic" else "reflection"

    def fn(t):
        return om.ops.grid_sample(t, grid, mode=mode, padding_mode=pad, align_corners=True)

    traced = om.trace(fn, om.Tensor.from_numpy(x))
    model = to_onnx(traced.graph, opset=opset)
    assert [n.op_type for n in model.graph.node if n.op_type == "GridSample"] == ["GridSample"]
    got = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    np.testing.assert_allclose(got, fn(om.Tensor.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-5)


def test_export_refuses_what_onnx_computes_otherwise():
    x = om.Tensor.from_numpy(rng.standard_normal((1, 1, 3, 3, 3)).astype(np.float32))
    grid = om.Tensor.from_numpy(rng.uniform(-1, 1, (1, 2, 2, 2, 3)).astype(np.float32))
    vol = om.trace(lambda t: om.ops.grid_sample(t, grid), x)
    with pytest.raises(OnnxExportError, match="2-D only"):
        to_onnx(vol.graph, opset=19)
    assert to_onnx(vol.graph, opset=20) is not None
    x2 = om.Tensor.from_numpy(rng.standard_normal((1, 1, 3, 3)).astype(np.float32))
    g2 = om.Tensor.from_numpy(rng.uniform(-1, 1, (1, 2, 2, 2)).astype(np.float32))
    cubic = om.trace(lambda t: om.ops.grid_sample(t, g2, mode="bicubic", padding_mode="border"),
                     x2)
    with pytest.raises(OnnxExportError, match="padding_mode='border'"):
        to_onnx(cubic.graph)


_TORCH_COMBOS = [(m, p, a) for m in ("bilinear", "nearest", "bicubic")
                 for p in ("zeros", "border", "reflection") for a in (False, True)]


@pytest.mark.parametrize("mode,padding_mode,align_corners", _TORCH_COMBOS)
def test_grid_sample_matches_torch_with_gradients(mode, padding_mode, align_corners):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3, 4, 5))
    grid = rng.uniform(-1.4, 1.4, (2, 3, 4, 2))
    ox, og = om.Tensor.from_numpy(x).requires_grad_(), om.Tensor.from_numpy(grid).requires_grad_()
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(grid, requires_grad=True)
    got = om.ops.grid_sample(ox, og, mode=mode, padding_mode=padding_mode,
                             align_corners=align_corners)
    want = torch.nn.functional.grid_sample(tx, tg, mode=mode, padding_mode=padding_mode,
                                           align_corners=align_corners)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(want.shape)
    (got * om.Tensor.from_numpy(w)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(og.grad.numpy(), tg.grad.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_volumetric_matches_torch(mode):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((1, 2, 3, 4, 5))
    grid = rng.uniform(-1.2, 1.2, (1, 2, 3, 2, 3))
    got = om.ops.grid_sample(om.Tensor.from_numpy(x), om.Tensor.from_numpy(grid), mode=mode,
                             padding_mode="reflection")
    want = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), mode=mode,
                                           padding_mode="reflection", align_corners=False)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
