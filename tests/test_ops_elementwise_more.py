"""Issue 23's elementwise math (sin ... sign, remainder / fmod / floor_divide with ``%`` and
``//``, isclose, logical ops): PyTorch's semantics at the edges, errors naming the op and the
argument, one model of all of them traced with a symbolic batch and run on every backend, in
ONNX Runtime and imported back, and every op against torch where torch is installed. The per-op
checks (reference, gradient, trace, sessions, ONNX) are the generic ones over the records."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.errors import OneModelError

from .symbolic_model_checks import check_every_level, check_onnx_round_trip

ops = om.ops

NEW_OPS = ("sin", "cos", "tan", "atan", "asin", "acos", "log1p", "expm1", "rsqrt", "atan2",
           "floor", "ceil", "round", "sign", "remainder", "fmod", "floor_divide", "isclose",
           "logical_and", "logical_or", "logical_not")


def test_the_ops_come_from_the_basic_plugin():
    for name in NEW_OPS:
        assert om.registry.get_op(name).provider.startswith("onemodel-ops-basic"), name


# -- operators ------------------------------------------------------------------------------------
def test_floor_division_and_modulo_operators_follow_python():
    lengths = om.tensor([7, -7, 8, 0])
    assert (lengths // 2).tolist() == [3, -4, 4, 0]
    assert (lengths // 2).dtype == DType.I64
    assert (lengths % 3).tolist() == [1, 2, 2, 0]
    assert (20 // om.tensor([3, -3])).tolist() == [6, -7]
    assert (7 % om.tensor([3, -3])).tolist() == [1, -2]
    x = om.tensor([5.5, -5.5])
    np.testing.assert_array_equal((x // 2).numpy(), [2.0, -3.0])
    np.testing.assert_array_equal((x % 2).numpy(), [1.5, 0.5])
    assert (x // 2).dtype == DType.F32
    assert (lengths // 2.0).dtype == DType.F32  # a Python float makes it float, as in torch


def test_methods_have_torch_names():
    x = om.tensor([[0.25, -1.5], [2.5, 0.5]])
    np.testing.assert_array_equal(x.round().numpy(), [[0.0, -2.0], [2.0, 0.0]])  # half to even
    np.testing.assert_array_equal(x.floor_divide(0.5).numpy(), [[0.0, -3.0], [5.0, 1.0]])
    np.testing.assert_array_equal(x.remainder(-1.0).numpy(), [[-0.75, -0.5], [-0.5, -0.5]])
    np.testing.assert_array_equal(x.fmod(-1.0).numpy(), [[0.25, -0.5], [0.5, 0.5]])
    np.testing.assert_allclose(x.atan2(om.tensor(1.0)).numpy(), np.arctan2(x.numpy(), 1.0),
                               rtol=1e-6)
    assert x.isclose(x + 1e-7).all().item()
    assert x.logical_not().dtype == DType.BOOL
    assert x.sign().tolist() == [[1.0, -1.0], [1.0, 1.0]]
    assert x.sin().dtype == DType.F32 and om.tensor([1, 2]).sin().dtype == DType.F32


def test_edges_as_torch():
    nan, inf = float("nan"), float("inf")
    assert ops.sign(om.tensor([nan, -0.0, -3.0])).tolist() == [0.0, 0.0, -1.0]
    assert not np.signbit(ops.sign(om.tensor([-0.0])).numpy()).any()
    assert ops.sign(om.tensor([True, False])).dtype == DType.BOOL
    np.testing.assert_array_equal(ops.round(om.tensor([0.125, 2.5]), decimals=2).numpy(),
                                  np.array([0.12, 2.5], np.float32))
    assert ops.floor(om.tensor([3, -4])).dtype == DType.I64
    assert ops.isclose(om.tensor([1.0, inf, nan]), om.tensor([inf, inf, nan])).tolist() == [
        False, True, False]
    assert ops.isclose(om.tensor([nan]), om.tensor([nan]), equal_nan=True).tolist() == [True]
    assert ops.logical_and(om.tensor([nan, 0.0]), om.tensor([1, 1])).tolist() == [True, False]
    r = ops.remainder(om.tensor([1.0, -1.0]), om.tensor([0.0, 0.0])).numpy()
    assert np.isnan(r).all()
    assert ops.floor_divide(om.tensor([1.0, -1.0]), om.tensor(0.0)).tolist() == [inf, -inf]
    assert ops.floor_divide(om.tensor(1.0), om.tensor(0.1)).item() == 9.0  # Python's 1 // 0.1


@pytest.mark.parametrize("call, words", [
    (lambda: ops.remainder(om.tensor([True]), om.tensor([True])), "ops.remainder: a and b"),
    (lambda: om.tensor([True]) // om.tensor([True]), "ops.floor_divide: a and b"),
    (lambda: om.tensor([3, 4]) % om.tensor([1, 0]), "ops.remainder: integer division by zero"),
    (lambda: ops.fmod(om.tensor([3]), 0), "ops.fmod: integer division by zero"),
    (lambda: ops.floor(om.tensor([True])), "ops.floor: x is a bool"),
    (lambda: ops.round(om.tensor([1, 2]), decimals=1), "ops.round: decimals=1"),
    (lambda: ops.isclose(om.tensor([1.0]), om.tensor([1.0]), rtol=-1.0), "ops.isclose: rtol"),
    (lambda: ops.isclose(om.tensor([1.0]), om.tensor([1.0]), atol=float("nan")),
     "ops.isclose: atol"),
])
def test_bad_input_is_a_clear_error(call, words):
    with pytest.raises(OneModelError, match=words):
        call()


def test_round_with_decimals_of_an_int_tensor_is_refused_while_tracing():
    def fn(x):
        return ops.round(x, decimals=1)
    with pytest.raises(OneModelError, match="decimals=1"):
        om.trace(fn, Tensor.from_numpy(np.arange(6).reshape(3, 2)), "batch", None)


# -- one model of all of them: symbolic batch, every backend, ONNX --------------------------------
def _model(x):
    a = ops.sin(x) + ops.cos(x) * ops.tan(x * 0.5) + ops.atan(x)
    a = a + ops.asin(x * 0.3) + ops.acos(x * 0.3) + ops.log1p(ops.abs(x)) + ops.expm1(x * 0.1)
    a = a + ops.rsqrt(ops.abs(x) + 1.0) + ops.atan2(x, x * 0.5 - 1.0)
    b = ops.floor(x * 3.0) + ops.ceil(x * 3.0) + ops.round(x * 3.0) + ops.round(x, decimals=1)
    b = b + ops.sign(x) + (x * 5.0) % 1.5 + ops.fmod(x * 5.0, -1.5) + (x * 5.0) // 1.5
    near = ops.isclose(x, ops.round(x, decimals=1), rtol=0.0, atol=0.02)
    mask = ops.logical_or(ops.logical_and(x > 0, near), ops.logical_not(x < 1.0))
    return ops.where(mask, a, b)


@pytest.fixture(scope="module")
def traced():
    example = Tensor.from_numpy(np.random.default_rng(0).uniform(-2, 2, (3, 6)).astype(np.float32))
    return om.trace(_model, example, "batch", None)


def _feeds(batch):
    x = np.random.default_rng(batch).uniform(-2, 2, (batch, 6)).astype(np.float32)
    return x, _model(Tensor.from_numpy(x)).numpy()


@pytest.mark.parametrize("backend", om.backends())
def test_model_traced_with_a_symbolic_batch_runs_on_every_backend(traced, backend):
    check_every_level(traced, backend, _feeds)


def test_model_exports_to_onnx_and_imports_back(traced, tmp_path):
    check_onnx_round_trip(traced, tmp_path / "elementwise.onnx", _feeds)


# -- against torch, where it is installed ---------------------------------------------------------
def _torch_fn(torch, name):
    fns = {"isclose": torch.isclose, "floor_divide": torch.floor_divide}
    return fns.get(name) or getattr(torch, name)


@pytest.mark.parametrize("name", NEW_OPS)
def test_samples_match_torch(name):
    torch = pytest.importorskip("torch")
    op = om.registry.get_op(name)
    for sample in op.samples(np.random.default_rng(0)):
        args = [np.asarray(a) for a in sample.args]
        if name in ("remainder", "fmod", "floor_divide") and args[0].dtype.kind != "f" and (
                args[1] == 0).any():
            continue
        if name == "isclose" and args[0].dtype != args[1].dtype:
            continue  # torch asks for one dtype
        want = _torch_fn(torch, name)(*[torch.from_numpy(a) for a in args], **sample.params)
        got = getattr(ops, name)(*[Tensor.from_numpy(a) for a in args], **sample.params)
        want = want.numpy()
        assert got.dtype == want.dtype or (want.dtype == np.float32 and got.dtype == DType.F32), (
            name, sample.name, got.dtype, want.dtype)
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64),
                                   rtol=1e-6, atol=1e-7, equal_nan=True,
                                   err_msg=f"{name}[{sample.name}]")
