"""PyTorch's Tensor habits (issue 23): iteration and unpacking, ``view``/``size``/``dim``/``.T``,
``new_*``, ``*_as``, ``numel()``, ``.to('cpu')`` and ``.cpu()``, torch tensors given to ops."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.errors import OneModelError, TraceException


@pytest.fixture
def a():
    return np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 5 - 1


@pytest.fixture
def x(a):
    return Tensor.from_numpy(a.copy())


# -- indexing past the end, iteration, unpacking --------------------------------------------------
def test_indexing_past_the_end_is_an_index_error(x):
    with pytest.raises(IndexError, match="index 3 is out of range for axis 0 of size 2"):
        x[3]
    with pytest.raises(OneModelError):
        x[-3]
    with pytest.raises(IndexError):
        x[0, 5]


def test_iteration_is_over_axis_0(x, a):
    rows = [r.numpy() for r in x]
    assert len(rows) == 2 and len(x) == 2
    for r, expected in zip(rows, a):
        np.testing.assert_array_equal(r, expected)
    assert [v.item() for v in Tensor.from_list([1, 2, 3])] == [1, 2, 3]


def test_unpacking(x, a):
    q, k = x
    np.testing.assert_array_equal(k.numpy(), a[1])
    qkv = Tensor.from_numpy(np.arange(12.0).reshape(3, 4))
    q, k, v = qkv
    assert v.tolist() == [8.0, 9.0, 10.0, 11.0]
    with pytest.raises(ValueError):
        q, k = qkv


def test_iterating_a_0d_tensor_is_a_type_error():
    with pytest.raises(TypeError, match="0-d"):
        iter(om.tensor(1.0))


def test_iteration_keeps_the_gradient():
    w = om.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    first, second = w
    (first * 2 + second * 3).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[2.0, 2.0], [3.0, 3.0]])


def test_unpacking_a_fixed_axis_traces():
    def split_heads(x):          # x: batch x 3 x 4, the 3 fixed
        q, k, v = x.transpose(0, 1)
        return q * k + v

    example = Tensor.randn(DType.F32, 2, 3, 4, seed=0)
    traced = om.trace(split_heads, example, "batch", None, None)
    x = Tensor.randn(DType.F32, 5, 3, 4, seed=1)
    np.testing.assert_allclose(traced(x).numpy(), split_heads(x).numpy(), rtol=1e-6)


def test_iterating_a_symbolic_axis_is_refused():
    def rows(x):
        return om.ops.concat([r * 2 for r in x], axis=0)

    with pytest.raises(TraceException, match="iterat.*symbolic"):
        om.trace(rows, Tensor.zeros(DType.F32, 3, 2), "batch", None)


# -- torch's shape methods ------------------------------------------------------------------------
def test_view_size_dim(x, a):
    assert x.view(6, -1).shape == (6, 4) and x.view((4, 6)).shape == (4, 6)
    assert x.view(-1).shape == (24,)
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert x.size(dim=0) == 2
    assert x.dim() == 3
    assert x.contiguous() is x
    with pytest.raises(OneModelError):
        x.size(3)


def test_transposes(a):
    m = Tensor.from_numpy(a[0].copy())
    np.testing.assert_array_equal(m.T.numpy(), a[0].T)
    np.testing.assert_array_equal(m.t().numpy(), a[0].T)
    v = Tensor.from_list([1.0, 2.0])
    assert v.T.shape == (2,) and v.t().shape == (2,)
    x3 = Tensor.from_numpy(a.copy())
    np.testing.assert_array_equal(x3.mT.numpy(), np.swapaxes(a, -1, -2))
    np.testing.assert_array_equal(x3.T.numpy(), a.transpose(2, 1, 0))
    with pytest.raises(OneModelError, match="t\\(\\).*2-D"):
        x3.t()
    with pytest.raises(OneModelError, match="mT"):
        v.mT


def test_new_factories_keep_the_dtype(x):
    z = x.new_zeros(2, 5)
    assert z.dtype == DType.F32 and z.shape == (2, 5) and not z.numpy().any()
    o = x.new_ones((3,))
    assert o.tolist() == [1.0, 1.0, 1.0]
    f = x.new_full((2,), 7)
    assert f.dtype == DType.F32 and f.tolist() == [7.0, 7.0]
    t = x.new_tensor([1, 2])
    assert t.dtype == DType.F32 and t.tolist() == [1.0, 2.0]
    assert x.new_zeros(2, dtype=DType.I64).dtype == DType.I64


def test_as_methods(x, a):
    other = Tensor.zeros(DType.F64, 4, 6)
    assert x.view_as(other).shape == (4, 6) and x.reshape_as(other).shape == (4, 6)
    assert x.type_as(other).dtype == DType.F64
    row = Tensor.from_list([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(row.expand_as(x).numpy(), np.broadcast_to(row.numpy(), a.shape))


def test_numel_is_a_property_and_a_method(x):
    assert x.numel == 24 and x.numel() == 24
    assert x.numel + 1 == 25 and isinstance(x.numel, int)


def test_shape_habits_trace():
    def f(x):
        n = x.size(0)
        return x.view(n, -1).T.t() + x.new_ones(x.size(1), 1).view(1, -1)

    traced = om.trace(f, Tensor.randn(DType.F32, 3, 2, 1, seed=0), "batch", None, None)
    x = Tensor.randn(DType.F32, 7, 2, 1, seed=1)
    np.testing.assert_allclose(traced(x).numpy(), f(x).numpy(), rtol=1e-6)


# -- devices ------------------------------------------------------------------------------------------
def test_to_cpu_is_a_no_op_and_other_devices_are_refused(x):
    assert x.to("cpu") is x and x.cpu() is x
    assert x.to("cpu", DType.F64).dtype == DType.F64
    assert x.to("cpu", dtype="float16").dtype == DType.F16
    assert x.to(dtype=DType.I64).dtype == DType.I64
    assert x.to(Tensor.zeros(DType.I32, 1)).dtype == DType.I32
    with pytest.raises(OneModelError, match="'cuda'.*only on the CPU"):
        x.to("cuda")
    with pytest.raises(OneModelError, match="cuda:0"):
        x.to("cuda:0")
    with pytest.raises(OneModelError, match="unknown dtype name .cpux."):
        x.to("cpux")


def test_item_and_casts(x):
    assert Tensor.from_list([2.5]).item() == 2.5
    assert x.int().dtype == DType.I32 and x.bool().dtype == DType.BOOL
    assert x.double().dtype == DType.F64 and x.half().dtype == DType.F16


# -- methods from the reduce ops, where installed ---------------------------------------------------
@pytest.mark.parametrize("name, call, expected", [
    ("std", lambda t: t.std(dim=1), lambda a: a.std(axis=1, ddof=1)),
    ("var", lambda t: t.var(), lambda a: a.var(ddof=1)),
    ("norm", lambda t: t.norm(), lambda a: np.sqrt((a * a).sum())),
    ("masked_fill", lambda t: t.masked_fill(t > 0, 0.0), lambda a: np.where(a > 0, 0, a)),
    ("chunk", lambda t: t.chunk(3, dim=2)[1], lambda a: a[:, :, 2:4]),
])
def test_reduction_methods_where_installed(x, a, name, call, expected):
    if name not in om.registry.ops():
        pytest.skip(f"no installed plugin provides the op {name!r} (issue 23's ops work adds it)")
    np.testing.assert_allclose(call(x).numpy(), expected(a), rtol=1e-5, atol=1e-6)


# -- torch tensors given to OneModel --------------------------------------------------------------
class _TorchLike:
    """Stands in for ``torch.Tensor`` where torch is not installed: the same module and class
    name, and ``numpy()`` refusing as torch does (grad, another device, bfloat16)."""

    __module__ = "torch"

    def __init__(self, array, requires_grad=False, device="cpu"):
        self._array, self.requires_grad, self.device = array, requires_grad, device

    def numpy(self):
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad.")
        if self.device != "cpu":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy.")
        return self._array

    def __array__(self, dtype=None, copy=None):
        return self.numpy()


_TorchLike.__name__ = _TorchLike.__qualname__ = "Tensor"


def _torch_tensors():
    """The real torch when installed, else the stand-in."""
    try:
        import torch
    except ImportError:
        return lambda a, requires_grad=False, device="cpu": _TorchLike(a, requires_grad, device)
    return lambda a, requires_grad=False, device="cpu": torch.tensor(
        a, requires_grad=requires_grad, device=device)


def test_a_cpu_torch_tensor_is_taken_as_its_numpy_view(x, a):
    make = _torch_tensors()
    t = make(a)
    np.testing.assert_allclose(om.ops.add(x, t).numpy(), a + a)
    np.testing.assert_allclose((x * t).numpy(), a * a)
    assert om.tensor(t).dtype == DType.F32 and om.tensor(t).shape == a.shape
    assert Tensor.from_numpy(t).shape == a.shape


def test_a_torch_tensor_that_requires_grad_is_refused_saying_how(x, a):
    t = _torch_tensors()(a, requires_grad=True)
    with pytest.raises(OneModelError, match="ops.add: input 'b' is a torch.Tensor that "
                                            "requires grad.*t.detach"):
        om.ops.add(x, t)
    with pytest.raises(OneModelError, match="torch.Tensor that requires grad"):
        om.tensor(t)


def test_a_torch_tensor_on_another_device_is_refused():
    t = _TorchLike(np.zeros(2, np.float32), device="cuda:0")
    with pytest.raises(OneModelError, match="torch.Tensor on 'cuda:0'.*t.cpu\\(\\)"):
        om.ops.relu(t)


def test_an_unknown_input_type_is_named_with_its_module():
    class Thing:
        pass

    with pytest.raises(OneModelError, match="got tests\\..*Thing"):
        om.ops.relu(Thing())
