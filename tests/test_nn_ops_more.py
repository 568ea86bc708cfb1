"""The newer nn ops beyond the generic registry tests: PyTorch's argument checks, symbolic
lengths and sizes in traces, and PyTorch itself as a second reference where it is installed."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor


def randn(*shape, seed=0):
    return Tensor.from_numpy(np.random.default_rng(seed).standard_normal(shape)
                             .astype(np.float32))


@pytest.mark.parametrize("call,names", [
    (lambda: om.ops.conv1d(randn(1, 2, 8), randn(3, 2, 3), stride=0), ("conv1d", "stride")),
    (lambda: om.ops.conv1d(randn(1, 2, 8), randn(3, 2, 3), padding=(1, 1)),
     ("conv1d", "padding")),
    (lambda: om.ops.conv1d(randn(1, 3, 8), randn(3, 2, 3)), ("conv1d", "channel")),
    (lambda: om.ops.max_pool1d(randn(1, 2, 8), 2, padding=2), ("max_pool1d", "padding")),
    (lambda: om.ops.avg_pool1d(randn(1, 2, 8, 1), 2), ("avg_pool1d", "(N, C, L)")),
    (lambda: om.ops.adaptive_avg_pool2d(randn(1, 2, 8, 8), (2, 0)),
     ("adaptive_avg_pool2d", "output_size")),
    (lambda: om.ops.adaptive_max_pool2d(randn(1, 2, 8, 8), (2, 2, 2)),
     ("adaptive_max_pool2d", "output_size")),
    (lambda: om.ops.nll_loss(randn(3, 4), randn(3)), ("nll_loss", "target")),
    (lambda: om.ops.nll_loss(randn(3, 4), Tensor.from_list([0, 9, 1], 3, dtype=DType.I64)),
     ("nll_loss", "target 9")),
    (lambda: om.ops.nll_loss(randn(3, 4), Tensor.from_list([0, 1, 1], 3, dtype=DType.I64),
                             weight=randn(3)), ("nll_loss", "weight")),
    (lambda: om.ops.binary_cross_entropy(randn(3, 4).sigmoid(), randn(4).sigmoid()),
     ("binary_cross_entropy", "target")),
    (lambda: om.ops.binary_cross_entropy(randn(3) + 5.0, randn(3).sigmoid()),
     ("binary_cross_entropy", "input")),
    (lambda: om.ops.binary_cross_entropy_with_logits(randn(3, 4), randn(3, 4),
                                                      pos_weight=randn(3)),
     ("binary_cross_entropy_with_logits", "pos_weight")),
    (lambda: om.ops.kl_div(randn(3), randn(3), reduction="avg"), ("kl_div", "reduction")),
    (lambda: om.ops.smooth_l1_loss(randn(3), randn(3), beta=-1.0), ("smooth_l1_loss", "beta")),
    (lambda: om.ops.huber_loss(randn(3), randn(3), delta=-1.0), ("huber_loss", "delta")),
])
def test_bad_arguments_name_the_op_and_the_argument(call, names):
    with pytest.raises(om.OneModelError) as info:
        call()
    for name in names:
        assert name in str(info.value)


def test_conv1d_and_pools_trace_over_a_symbolic_length():
    w = randn(4, 3, 3, seed=1)

    def net(x):
        y = om.ops.conv1d(x, w, padding=1).relu()
        y = om.ops.max_pool1d(y, 2)
        y = om.ops.avg_pool1d(y, 3, stride=2, padding=1)
        return om.ops.adaptive_avg_pool1d(y, 1)

    traced = om.trace(net, randn(2, 3, 16), "batch", None, "length")
    assert [n.op for n in traced.graph.nodes][:4] == ["conv1d", "relu", "max_pool1d",
                                                      "avg_pool1d"]
    for backend in om.backends():
        with traced.create_session(backend=backend) as s:
            for length in (9, 23):
                x = randn(3, 3, length, seed=length)
                np.testing.assert_allclose(s.run({"input": x})["output"].numpy(),
                                           net(x).numpy(), rtol=1e-5, atol=1e-6)


def test_conv_transpose_traces_over_symbolic_height_and_width(tmp_path):
    w = randn(3, 2, 3, 3, seed=4)

    def up(x):
        return om.ops.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1)

    traced = om.trace(up, randn(2, 3, 5, 6), "batch", None, "h", "w")
    out_shape = traced.graph.values[traced.graph.outputs[0][1]].type.shape
    assert [str(d) for d in out_shape] == ["batch", "2", "h*2", "w*2"]
    x = randn(1, 3, 7, 4, seed=9)
    for backend in om.backends():
        with traced.create_session(backend=backend) as s:
            np.testing.assert_allclose(s.run({"input": x})["output"].numpy(), up(x).numpy(),
                                       rtol=1e-5, atol=1e-5)
    pytest.importorskip("onnx")
    traced.save_onnx(tmp_path / "up.onnx")
    back = om.load_onnx(tmp_path / "up.onnx")
    assert [n.op for n in back.graph.nodes] == ["conv_transpose2d"]
    np.testing.assert_allclose(back(x).numpy(), up(x).numpy(), rtol=1e-5, atol=1e-5)


def test_a_too_short_length_is_refused_by_the_window_guard():
    w = randn(4, 3, 5, seed=1)
    traced = om.trace(lambda x: om.ops.conv1d(x, w), randn(2, 3, 16), "batch", None, "length")
    with traced.create_session() as s:
        with pytest.raises(om.OneModelError, match="conv1d"):
            s.run({"input": randn(2, 3, 3)})


def test_adaptive_pools_trace_over_symbolic_height_and_width(tmp_path):
    def net(x):
        return om.ops.adaptive_avg_pool2d(x, (2, 3)) + om.ops.adaptive_max_pool2d(x, 1)

    traced = om.trace(net, randn(2, 3, 9, 10), "batch", None, "h", "w")
    assert traced.graph.outputs and str(traced.graph.values[traced.graph.outputs[0][1]].type)
    for hw in ((5, 7), (12, 6)):
        x = randn(1, 3, *hw, seed=hw[0])
        with traced.create_session() as s:
            np.testing.assert_allclose(s.run({"input": x})["output"].numpy(), net(x).numpy(),
                                       rtol=1e-5, atol=1e-6)


def test_conv1d_onnx_imports_back_as_conv1d(tmp_path):
    pytest.importorskip("onnx")
    w = randn(4, 3, 3, seed=1)
    traced = om.trace(lambda x: om.ops.conv1d(x, w, stride=2), randn(2, 3, 16), "batch", None,
                      "length")
    traced.save_onnx(tmp_path / "m.onnx")
    back = om.load_onnx(tmp_path / "m.onnx")
    assert [n.op for n in back.graph.nodes] == ["conv1d"]
    x = randn(3, 3, 11, seed=5)
    np.testing.assert_allclose(back(x).numpy(), om.ops.conv1d(x, w, stride=2).numpy(),
                               rtol=1e-5, atol=1e-6)


# -- PyTorch as a second reference --------------------------------------------------------------
def _torch_cases():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 11)).astype(np.float32)
    x4 = rng.standard_normal((2, 3, 7, 9)).astype(np.float32)
    p = rng.uniform(0.05, 0.95, (4, 5)).astype(np.float32)
    t = rng.uniform(0, 1, (4, 5)).astype(np.float32)
    logits = rng.standard_normal((4, 5)).astype(np.float32)
    cls = np.array([1, 0, -100, 4], dtype=np.int64)
    w5 = rng.uniform(0.5, 2, 5).astype(np.float32)
    yield "conv1d", (x, rng.standard_normal((4, 3, 3)).astype(np.float32)), \
        {"stride": 2, "padding": 1, "dilation": 2}
    yield "max_pool1d", (x,), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}
    yield "avg_pool1d", (x,), {"kernel_size": 3, "stride": 2, "padding": 1,
                               "count_include_pad": False}
    yield "adaptive_avg_pool1d", (x,), {"output_size": 4}
    yield "adaptive_avg_pool2d", (x4,), {"output_size": (3, 4)}
    yield "adaptive_max_pool2d", (x4,), {"output_size": (3, 5)}
    yield "conv_transpose2d", (x4, rng.standard_normal((3, 2, 3, 2)).astype(np.float32)), \
        {"stride": (2, 3), "padding": 1, "output_padding": (1, 0), "dilation": (1, 2)}
    yield "conv_transpose1d", (x, rng.standard_normal((3, 4, 3)).astype(np.float32)), \
        {"stride": 2, "padding": 1, "output_padding": 1, "groups": 1}
    yield "interpolate", (x4,), {"scale_factor": 2.0}
    yield "interpolate", (x4,), {"size": (5, 13), "mode": "bilinear"}
    yield "interpolate", (x4,), {"scale_factor": (1.5, 0.5), "mode": "bilinear",
                                 "align_corners": True}
    yield "interpolate", (x,), {"size": 4, "mode": "linear"}
    yield "interpolate", (x,), {"scale_factor": 1.7}
    yield "pixel_shuffle", (rng.standard_normal((2, 8, 3, 5)).astype(np.float32),), \
        {"upscale_factor": 2}
    yield "pixel_unshuffle", (x4[:, :, :6],), {"downscale_factor": 3}
    yield "group_norm", (rng.standard_normal((2, 6, 3, 4)).astype(np.float32), 3), \
        {"weight": rng.standard_normal(6).astype(np.float32)}
    yield "instance_norm", (x4,), {"bias": rng.standard_normal(3).astype(np.float32)}
    yield "rms_norm", (x4, (7, 9)), {}
    yield "normalize", (x4,), {"p": 3.0, "dim": 2}
    yield "cosine_similarity", (x4, x4[:1] + 0.5), {"dim": 1}
    yield "binary_cross_entropy", (p, t), {"weight": w5}
    yield "binary_cross_entropy_with_logits", (logits, t), {"pos_weight": w5,
                                                           "reduction": "sum"}
    yield "nll_loss", (logits, cls), {"weight": w5}
    yield "l1_loss", (logits, t), {}
    yield "smooth_l1_loss", (logits * 3, t), {"beta": 0.7}
    yield "huber_loss", (logits * 3, t), {"delta": 1.3, "reduction": "none"}
    yield "kl_div", (np.log(p), t), {"reduction": "batchmean"}
    yield "kl_div", (np.log(p), np.log(t)), {"reduction": "sum", "log_target": True}


@pytest.mark.parametrize("name,args,kwargs", list(_torch_cases()),
                         ids=[c[0] for c in _torch_cases()])
def test_matches_torch_forward_and_gradient(name, args, kwargs):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    targs = [torch.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray)
             else a for a in args]
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    want = getattr(F, name)(*targs, **tkw)
    oargs = [Tensor.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
    for t in oargs:
        if isinstance(t, Tensor) and t.dtype.is_float:
            t.requires_grad_(True)
    okw = {k: Tensor.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    got = getattr(om.ops, name)(*oargs, **okw)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    want.sum().backward()
    got.sum().backward()
    for o, t in zip(oargs, targs):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_interpolate_traces_over_symbolic_sizes():
    def up(x):
        return om.ops.interpolate(x, scale_factor=2, mode="bilinear") + \
            om.ops.interpolate(x, size=(x.shape[2] * 2, x.shape[3] * 2))

    traced = om.trace(up, randn(2, 3, 5, 6), "batch", None, "h", "w")
    x = randn(1, 3, 4, 9, seed=2)
    with traced.create_session() as s:
        np.testing.assert_allclose(s.run({"input": x})["output"].numpy(), up(x).numpy(),
                                   rtol=1e-5, atol=1e-6)
    with pytest.raises(om.OneModelError, match="scale_factor"):
        om.trace(lambda t: om.ops.interpolate(t, scale_factor=1.5), randn(2, 3, 5, 6), "batch",
                 None, "h", "w")


@pytest.mark.parametrize("op_type,mode", [("DepthToSpace", "DCR"), ("DepthToSpace", "CRD"),
                                          ("SpaceToDepth", None)])
def test_depth_space_imports_match_onnxruntime(op_type, mode):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    shape = [2, 8, 3, 4] if op_type == "DepthToSpace" else [2, 2, 6, 4]
    attrs = {"blocksize": 2} | ({"mode": mode} if mode else {})
    graph = helper.make_graph([helper.make_node(op_type, ["x"], ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    from onemodel.formats.onnx_import import from_onnx

    got = om.core.interpreter.run_graph(from_onnx(model), {"x": x})
    np.testing.assert_array_equal(list(got.values())[0], want)
