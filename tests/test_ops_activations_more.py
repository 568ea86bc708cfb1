"""Issue 23's activations (softplus, silu, mish, elu, selu, leaky_relu, prelu, relu6, hardtanh,
glu, log_sigmoid, softsign): provided by onemodel-ops-nn itself (silu no longer means the example
package's swish), PyTorch's semantics at the edges, errors naming the op and the argument, a model
of all of them traced with a symbolic batch on every backend, through ONNX Runtime and back, the
ONNX nodes exporters write imported, and every sample against torch where it is installed."""
from __future__ import annotations

import math

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.errors import OneModelError

from .symbolic_model_checks import check_every_level, check_onnx_round_trip

ops = om.ops
F32 = np.float32

NEW_OPS = ("softplus", "silu", "mish", "elu", "selu", "leaky_relu", "prelu", "relu6",
           "hardtanh", "glu", "log_sigmoid", "softsign")


def test_the_ops_come_from_the_nn_plugin():
    for name in NEW_OPS:
        assert om.registry.get_op(name).provider.startswith("onemodel-ops-nn"), name
    assert om.registry.get_op("silu").name == "silu"


def test_edges_as_torch():
    big = om.tensor([-1000.0, 0.0, 1000.0])
    assert np.isfinite(ops.softplus(big).numpy()).all()
    assert np.isfinite(ops.log_sigmoid(big).numpy()).all()
    np.testing.assert_allclose(ops.log_sigmoid(big).numpy(), [-1000.0, -math.log(2.0), 0.0],
                               rtol=1e-6)
    # threshold: x itself above it (in beta * x), not log1p(exp(x)) / beta
    assert ops.softplus(om.tensor([21.0]), beta=1.0, threshold=20.0).item() == 21.0
    np.testing.assert_allclose(ops.softplus(om.tensor([1.0]), beta=2.0, threshold=1.0).item(),
                               1.0)
    np.testing.assert_allclose(ops.softplus(om.tensor([0.25]), beta=2.0).item(),
                               math.log1p(math.exp(0.5)) / 2, rtol=1e-6)
    assert ops.relu6(om.tensor([-1, 3, 9])).tolist() == [0, 3, 6]  # ints stay ints
    assert ops.relu6(om.tensor([-1, 3, 9])).dtype == DType.I64
    assert ops.hardtanh(om.tensor([-2.0, 0.5, 2.0]), -1.5, 1.0).tolist() == [-1.5, 0.5, 1.0]
    g = ops.glu(om.tensor([[1.0, 2.0, 0.0, 100.0]]))
    np.testing.assert_allclose(g.numpy(), [[0.5, 2.0]])
    x = om.tensor([[[-2.0]], [[4.0]]]).reshape(1, 2, 1)
    np.testing.assert_allclose(ops.prelu(x, om.tensor([0.5, 0.1])).numpy(), [[[-1.0], [4.0]]])
    np.testing.assert_allclose(ops.selu(om.tensor([-1.0])).item(),
                               1.0507009873554805 * 1.6732632423543772 * math.expm1(-1.0),
                               rtol=1e-6)


def test_glu_takes_dim_and_methods_exist():
    x = om.tensor(np.arange(12, dtype=F32).reshape(2, 6) - 5)
    np.testing.assert_allclose(ops.glu(x, dim=0).numpy(), ops.glu(x, axis=0).numpy())
    assert x.glu(dim=1).shape == (2, 3)
    assert x.prelu(Tensor.from_numpy(WEIGHT)).shape == (2, 6)
    for name in ("softplus", "silu", "mish", "elu", "selu", "leaky_relu", "relu6", "hardtanh",
                 "log_sigmoid", "softsign"):
        assert getattr(x, name)().shape == (2, 6), name


@pytest.mark.parametrize("call, words", [
    (lambda: ops.silu(om.tensor([1, 2])), "ops.silu expects floating-point"),
    (lambda: ops.leaky_relu(om.tensor([1])), "ops.leaky_relu expects floating-point"),
    (lambda: ops.hardtanh(om.tensor([1.0]), 2.0, 1.0), "ops.hardtanh: min_val"),
    (lambda: ops.relu6(om.tensor([True])), "ops.relu6: expects a numeric"),
    (lambda: ops.softplus(om.tensor([1.0]), beta=0.0), "ops.softplus: beta"),
    (lambda: ops.glu(om.tensor([[1.0, 2.0, 3.0]])), "ops.glu: axis -1 has size 3"),
    (lambda: ops.glu(om.tensor(1.0)), "ops.glu: x must have at least one axis"),
    (lambda: ops.prelu(om.tensor(np.ones((2, 3), F32)), om.tensor(np.ones(2, F32))),
     "ops.prelu: weight has 2 values"),
    (lambda: ops.prelu(om.tensor(np.ones((2, 3), F32)), om.tensor(np.ones((1, 3), F32))),
     "ops.prelu: weight must be a scalar or 1-D"),
    (lambda: ops.prelu(om.tensor(np.ones((2, 3), F32)), om.tensor(np.ones(3))),
     "ops.prelu: weight is f64"),
])
def test_bad_input_is_a_clear_error(call, words):
    with pytest.raises(OneModelError, match=words):
        call()


def test_prelu_weight_gets_its_gradient():
    x = Tensor.from_numpy(np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, -6.0]], F32))
    w = Tensor.from_numpy(np.array([0.1, 0.2, 0.3], F32)).requires_grad_()
    ops.prelu(x, w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [-1.0, -5.0, -9.0])


# -- one model of all of them: symbolic batch, every backend, ONNX --------------------------------
WEIGHT = np.array([0.1, 0.2, 0.3, 0.05, 0.15, 0.25], F32)


def _model(x):
    a = ops.softplus(x) + ops.softplus(x, beta=2.0, threshold=1.5) + ops.silu(x) + ops.mish(x)
    a = a + ops.elu(x) + ops.elu(x, alpha=0.5) + ops.selu(x) + ops.leaky_relu(x)
    a = a + ops.leaky_relu(x, 0.2) + ops.relu6(x * 4.0) + ops.hardtanh(x, -0.5, 0.75)
    a = a + ops.log_sigmoid(x) + ops.softsign(x) + ops.prelu(x, Tensor.from_numpy(WEIGHT))
    return ops.glu(a, dim=1)


@pytest.fixture(scope="module")
def traced():
    example = Tensor.from_numpy(np.random.default_rng(0).uniform(-3, 3, (3, 6)).astype(F32))
    return om.trace(_model, example, "batch", None)


def _feeds(batch):
    x = np.random.default_rng(batch).uniform(-3, 3, (batch, 6)).astype(F32)
    return x, _model(Tensor.from_numpy(x)).numpy()


@pytest.mark.parametrize("backend", om.backends())
def test_model_traced_with_a_symbolic_batch_runs_on_every_backend(traced, backend):
    check_every_level(traced, backend, _feeds)


@pytest.mark.parametrize("opset", [17, 18])
def test_model_exports_to_onnx_and_imports_back(traced, tmp_path, opset):
    check_onnx_round_trip(traced, tmp_path / "activations.onnx", _feeds, opset=opset)


# -- the ONNX nodes exporters write ---------------------------------------------------------------
def _import_and_compare(node, x, inits=(), opset=18):
    from onnx import TensorProto, helper

    from .onnx_build import init, model, ort_run

    m = model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))],
              [init(k, v) for k, v in inits], opset=opset)
    want = ort_run(m, {"x": x})[0]
    g = om.formats.onnx_import.from_onnx(m)
    got = om.core.interpreter.run_graph(g, {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return [n.op for n in g.nodes]


@pytest.mark.parametrize("op_type, attrs, expect", [
    ("Softplus", {}, "softplus"),
    ("Softsign", {}, "softsign"),
    ("Mish", {}, "mish"),
    ("Elu", {"alpha": 0.7}, "elu"),
    ("LeakyRelu", {"alpha": 0.3}, "leaky_relu"),
    ("Selu", {}, "selu"),
    ("Selu", {"alpha": 1.2, "gamma": 0.9}, "elu"),
])
def test_onnx_activation_nodes_import(op_type, attrs, expect):
    from onnx import helper

    pytest.importorskip("onnxruntime")
    x = np.random.default_rng(0).uniform(-30, 30, (2, 3, 4)).astype(F32)
    ops_used = _import_and_compare(helper.make_node(op_type, ["x"], ["y"], **attrs), x)
    assert expect in ops_used


@pytest.mark.parametrize("slope_shape, expect", [((3, 1, 1), "prelu"), ((1,), "prelu"),
                                                 ((4,), "where")])
def test_onnx_prelu_slopes_import(slope_shape, expect):
    from onnx import helper

    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 5, 4)).astype(F32)
    slope = rng.uniform(0.05, 0.5, slope_shape).astype(F32)
    ops_used = _import_and_compare(helper.make_node("PRelu", ["x", "slope"], ["y"]), x,
                                   [("slope", slope)])
    assert expect in ops_used


# -- against torch, where it is installed ---------------------------------------------------------
_TORCH_NAMES = {"log_sigmoid": "logsigmoid"}
_TORCH_PARAMS = {"glu": {"axis": "dim"}}


@pytest.mark.parametrize("name", NEW_OPS)
def test_samples_match_torch(name):
    torch = pytest.importorskip("torch")
    fn = getattr(torch.nn.functional, _TORCH_NAMES.get(name, name))
    op = om.registry.get_op(name)
    for sample in op.samples(np.random.default_rng(0)):
        args = [np.asarray(a) for a in sample.args]
        params = {_TORCH_PARAMS.get(name, {}).get(k, k): v for k, v in sample.params.items()}
        want = fn(*[torch.from_numpy(a) for a in args], **params).numpy()
        got = getattr(ops, name)(*[Tensor.from_numpy(a) for a in args], **sample.params)
        assert got.dtype == want.dtype, (name, sample.name, got.dtype, want.dtype)
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64),
                                   rtol=1e-6, atol=1e-7, equal_nan=True,
                                   err_msg=f"{name}[{sample.name}]")
