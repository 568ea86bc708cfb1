"""API.md's Tensors section: factories, data access, operators, indexing, in-place methods and
autograd, checked against numpy."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.errors import OneModelError, OpError


def close(t, expected, dtype=None):
    assert isinstance(t, Tensor)
    expected = np.asarray(expected)
    assert t.shape == expected.shape, (t.shape, expected.shape)
    if dtype is not None:
        assert t.dtype == dtype
    np.testing.assert_allclose(t.numpy().astype(np.float64), expected.astype(np.float64),
                               rtol=1e-6, atol=1e-6)


# -- factories ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape_args", [(2, 3), ((2, 3),), ([2, 3],)])
def test_zeros_ones_full_shape_as_ints_or_tuple(shape_args):
    z = Tensor.zeros(DType.F32, *shape_args)
    o = Tensor.ones(DType.I32, *shape_args)
    f = Tensor.full(DType.F64, 2.5, *shape_args)
    assert z.shape == o.shape == f.shape == (2, 3)
    assert (z.dtype, o.dtype, f.dtype) == (DType.F32, DType.I32, DType.F64)
    close(z, np.zeros((2, 3)))
    close(o, np.ones((2, 3)))
    close(f, np.full((2, 3), 2.5))


def test_factories_scalar_and_dtype_names():
    assert Tensor.zeros(DType.F32).shape == ()
    assert Tensor.ones("f64", 3).dtype == DType.F64
    assert Tensor.zeros(np.int64, 2).dtype == DType.I64
    with pytest.raises(OneModelError):
        Tensor.zeros(DType.F32, -1)


def test_arange():
    close(Tensor.arange(DType.I64, 5), np.arange(5), DType.I64)
    close(Tensor.arange(DType.I32, 2, 9, 3), [2, 5, 8], DType.I32)
    close(Tensor.arange(DType.F32, 0, 1, 0.25), [0, 0.25, 0.5, 0.75], DType.F32)
    close(Tensor.arange(DType.F64, 3, 0, -1), [3, 2, 1], DType.F64)
    with pytest.raises(OneModelError):
        Tensor.arange(DType.I64, 0, 3, 0)


def test_randn_rand_seed_and_manual_seed():
    a = Tensor.randn(DType.F32, 3, 4, seed=7)
    b = Tensor.randn(DType.F32, (3, 4), seed=7)
    assert a.shape == (3, 4) and a.dtype == DType.F32
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    u = Tensor.rand(DType.F64, 1000, seed=1)
    assert u.dtype == DType.F64 and 0 <= u.numpy().min() and u.numpy().max() < 1
    om.manual_seed(123)
    r1, u1 = Tensor.randn(DType.F32, 5).numpy().copy(), Tensor.rand(DType.F32, 5).numpy().copy()
    om.manual_seed(123)
    r2, u2 = Tensor.randn(DType.F32, 5).numpy(), Tensor.rand(DType.F32, 5).numpy()
    np.testing.assert_array_equal(r1, r2)
    np.testing.assert_array_equal(u1, u2)
    assert not np.array_equal(Tensor.randn(DType.F32, 5).numpy(), r2)  # the stream moves on
    with pytest.raises(OneModelError):
        Tensor.randn(DType.I64, 2)


def test_from_list_flat_and_nested_and_default_dtypes():
    x = Tensor.from_list([0.5, -0.5, 1, 2, 3, 4], 3, 2)
    assert x.shape == (3, 2) and x.dtype == DType.F32  # a mix of floats and ints -> f32
    close(x, [[0.5, -0.5], [1, 2], [3, 4]])
    assert Tensor.from_list([1, 2, 3, 4], (2, 2)).dtype == DType.I64
    assert Tensor.from_list([1.0, 2.0]).dtype == DType.F32
    assert Tensor.from_list([True, False]).dtype == DType.BOOL
    n = Tensor.from_list([[1, 2, 3], [4, 5, 6]])
    assert n.shape == (2, 3) and n.dtype == DType.I64
    assert Tensor.from_list([1, 2], dtype=DType.F64).dtype == DType.F64
    assert Tensor.from_list([1, 2], 2, dtype="f16").dtype == DType.F16
    with pytest.raises(OneModelError):
        Tensor.from_list([1, 2, 3], 2, 2)


def test_from_numpy_shares_memory():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = Tensor.from_numpy(arr)
    assert t.dtype == DType.F32 and t.shape == (2, 3)
    assert np.shares_memory(t.numpy(), arr)
    arr[0, 0] = 42
    assert t.numpy()[0, 0] == 42
    assert Tensor.from_numpy(np.zeros(2, np.float64)).dtype == DType.F64
    with pytest.raises(OneModelError):
        Tensor.from_numpy([1, 2])


def test_om_tensor():
    assert om.tensor([1, 2]).dtype == DType.I64
    assert om.tensor([1.5, 2]).dtype == DType.F32
    assert om.tensor(3.0).shape == () and om.tensor(3.0).dtype == DType.F32
    assert om.tensor(7).item() == 7
    assert om.tensor([1, 2], dtype=DType.F64).dtype == DType.F64
    arr = np.ones(3, np.float64)
    t = om.tensor(arr, requires_grad=True)
    assert t.requires_grad and t.dtype == DType.F64 and t.is_leaf
    assert not np.shares_memory(t.numpy(), arr)  # om.tensor copies, like torch.tensor
    with pytest.raises(OneModelError):
        om.tensor([1, 2], requires_grad=True)  # ints cannot require grad


# -- properties and data ----------------------------------------------------------------------------
def test_properties_and_data():
    x = Tensor.from_list([1.0, 2, 3, 4, 5, 6], 2, 3)
    assert x.shape == (2, 3) and isinstance(x.shape, tuple)
    assert x.dtype == DType.F32 and x.ndim == 2 and x.numel == 6 and len(x) == 2
    assert x.requires_grad is False and x.grad is None
    assert isinstance(x.numpy(), np.ndarray) and x.numpy().dtype == np.float32
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert x[1, 2].item() == 6.0 and isinstance(x[1, 2].item(), float)
    assert Tensor.from_list([3]).item() == 3
    with pytest.raises(OneModelError):
        x.item()
    assert float(x[0, 0]) == 1.0 and int(x[0, 1]) == 2 and bool(x[0, 0])
    assert "tensor(" in repr(x)


# -- operators --------------------------------------------------------------------------------------
A = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], dtype=np.float32)
B = np.array([0.5, 2.0, -1.0], dtype=np.float32)


@pytest.mark.parametrize("fn", [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
    lambda a, b: a ** 2, lambda a, b: abs(a) ** b, lambda a, b: -a, lambda a, b: abs(a),
    lambda a, b: a + 1, lambda a, b: 1 + a, lambda a, b: 3 - a, lambda a, b: 2 * a,
    lambda a, b: 2 / b, lambda a, b: a / 4, lambda a, b: 2 ** b, lambda a, b: a - 0.5,
])
def test_arithmetic_matches_numpy(fn):
    expected = fn(A.astype(np.float64), B.astype(np.float64))
    got = fn(Tensor.from_numpy(A.copy()), Tensor.from_numpy(B.copy()))
    assert got.dtype == DType.F32  # Python scalars are weak: they keep the tensor's dtype
    close(got, expected)


def test_operators_with_numpy_arrays_both_sides():
    x = Tensor.from_numpy(A.copy())
    for got, exp in [(x + B, A + B), (B + x, B + A), (x - B, A - B), (B - x, B - A),
                     (x * B, A * B), (B * x, B * A), (x / B, A / B), (B / x, B / A),
                     (abs(x) ** B, np.abs(A) ** B), (np.abs(B) ** x, np.abs(B) ** A)]:
        assert isinstance(got, Tensor)
        close(got, exp, DType.F32)
    m = np.ones((3, 2), np.float32)
    close(x @ m, A @ m)
    close(np.ones((4, 2), np.float32) @ x, np.ones((4, 2)) @ A)
    close(x @ Tensor.from_numpy(B), A @ B)
    assert (x + np.ones(3)).dtype == DType.F64  # a numpy array counts as a tensor, not a scalar


def test_matmul_shapes():
    r = np.random.default_rng(0)
    for sa, sb in [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 2)), ((2, 3, 4), (4,)),
                   ((2, 1, 3, 4), (5, 4, 2))]:
        a, b = r.standard_normal(sa), r.standard_normal(sb)
        close(om.tensor(a) @ om.tensor(b), a @ b)
        close(om.tensor(a).matmul(om.tensor(b)), np.matmul(a, b))
    with pytest.raises(OpError, match="matmul"):
        om.tensor(np.ones((2, 3))) @ om.tensor(np.ones((2, 3)))


def test_promotion_rules():
    i = Tensor.from_list([1, 2, 3])
    f = Tensor.from_list([1.0, 2.0, 3.0])
    assert (i + f).dtype == DType.F32
    assert (i + 1).dtype == DType.I64
    assert (i + 1.5).dtype == DType.F32
    assert (i / 2).dtype == DType.F32
    close(i / 2, [0.5, 1.0, 1.5])
    assert (f.cast(DType.F16) * 2.0).dtype == DType.F16
    assert (i.cast(DType.I32) + Tensor.from_list([1], dtype=DType.I64)).dtype == DType.I64
    assert (i * True).dtype == DType.I64
    b = Tensor.from_list([True, False])
    assert (b + 1).dtype == DType.I64 and (b * 1.5).dtype == DType.F32


def test_comparisons():
    x = Tensor.from_numpy(A.copy())
    for got, exp in [(x < 1, A < 1), (x <= 1, A <= 1), (x > B, A > B), (x >= B, A >= B),
                     (x == 3, A == 3), (x != 3, A != 3), (2 < x, 2 < A), (2 >= x, 2 >= A),
                     (B < x, B < A), (B == x, B == A)]:
        assert got.dtype == DType.BOOL
        np.testing.assert_array_equal(got.numpy(), exp)
    close(x.less(0), A < 0)
    close(x.gt(0), A > 0)
    close(x.eq(3), A == 3)
    with pytest.raises(OpError, match=r"\[2,3\].*\[2\]"):
        x < Tensor.from_list([1.0, 2.0])


def test_binary_shape_error_names_op_and_shapes():
    with pytest.raises(OpError) as info:
        Tensor.zeros(DType.F32, 2, 3) + Tensor.zeros(DType.F32, 4)
    msg = str(info.value)
    assert "add" in msg and "[2,3]" in msg and "[4]" in msg


def test_methods_mirror_ops():
    x = Tensor.from_numpy(A.copy())
    close(x.relu(), np.maximum(A, 0))
    close(x.reshape(3, -1), A.reshape(3, -1))
    close(x.reshape((-1,)), A.ravel())
    close(x.sum(axis=1), A.sum(1))
    close(x.sum(1, True), A.sum(1, keepdims=True))
    close(x.sum(), A.sum())
    close(x.mean(axis=(0, 1)), A.mean())
    close(x.max(axis=0), A.max(0))
    close(x.min(), A.min())
    close(x.argmax(1), A.argmax(1), DType.I64)
    close(x.transpose(0, 1), A.T)
    close(x.permute(1, 0), A.T)
    close(x.exp(), np.exp(A))
    close(abs(x).sqrt(), np.sqrt(np.abs(A)))
    close(abs(x).log(), np.log(np.abs(A)))
    close(x.tanh(), np.tanh(A))
    close(x.sigmoid(), 1 / (1 + np.exp(-A)))
    close(x.abs(), np.abs(A))
    close(x.pow(2), A ** 2)
    close(x.clip(-1, 2), np.clip(A, -1, 2))
    close(x.clamp(min=0), np.maximum(A, 0))
    close(x.flatten(), A.ravel())
    close(x.unsqueeze(1).squeeze(1), A)
    close(x.unsqueeze(0), A[None])
    close(x.expand(4, 2, 3), np.broadcast_to(A, (4, 2, 3)))
    close(x[:, :1].expand(-1, 3), np.broadcast_to(A[:, :1], (2, 3)))
    assert x.cast(DType.I64).dtype == DType.I64
    close(x.cast(DType.I64), A.astype(np.int64))
    close(x.maximum(0), np.maximum(A, 0))
    close(x.minimum(B), np.minimum(A, B))
    close(x.gather(Tensor.from_list([[2, 0], [1, 1]]), 1), [[3, 1], [5, 5]])
    close(x.take(Tensor.from_list([-1, 0]), 1), A[:, [-1, 0]])
    parts = x.split(2, 1)
    assert [p.shape for p in parts] == [(2, 2), (2, 1)]
    parts = x.split([1, 2], axis=1)
    close(parts[1], A[:, 1:])
    c = x.clone()
    assert not np.shares_memory(c.numpy(), x.numpy())
    close(c, A)
    close(om.ops.concat([x, x], axis=-1), np.concatenate([A, A], -1))
    close(om.ops.where(x > 0, x, 0.0), np.where(A > 0, A, 0))
    close(om.ops.erf(x), [[0.8427008, -0.9953223, 0.9999779], [1.0, 1.0, -1.0]])


# -- indexing ---------------------------------------------------------------------------------------
X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("key", [
    0, -1, (1, 2), (1, -1, -2), slice(None), slice(1, None), (slice(None), 1), (Ellipsis, 0),
    (None, 0), (0, None, slice(None, None, 2)), (slice(-2, None), slice(None, -1)),
    (Ellipsis, slice(None, None, -1)), (Ellipsis, None), (slice(None), slice(5, 10)),
    (1, Ellipsis, 3), (slice(0, 1), Ellipsis, slice(-3, -1, 1)), (), Ellipsis, None,
])
def test_getitem_matches_numpy(key):
    close(Tensor.from_numpy(X.copy())[key], X[key], DType.F32)


def test_getitem_errors():
    x = Tensor.from_numpy(X.copy())
    with pytest.raises(OneModelError):
        x[2]
    with pytest.raises(OneModelError):
        x[0, 0, 0, 0]
    with pytest.raises(OneModelError):
        x[..., ...]
    with pytest.raises(OneModelError):
        x[Tensor.from_list([0])]


def test_setitem():
    x = Tensor.from_numpy(X.copy())
    ref = X.copy()
    for key, value, np_value in [
            ((0, 1), 7.0, 7.0),
            ((slice(None), 0), Tensor.from_list([1.0, 2, 3, 4]), np.array([1.0, 2, 3, 4])),
            ((Ellipsis, -1), np.full((2, 3), -1.0), np.full((2, 3), -1.0)),
            ((1, slice(None, None, 2)), Tensor.from_list([[5.0], [6.0]]), np.array([[5.0], [6.0]])),
            ((1, 2), Tensor.from_list([[9.0, 8, 7, 6]]), np.array([[9.0, 8, 7, 6]])),
            ((), 0.5, 0.5)]:
        x[key] = value
        ref[key] = np_value
        close(x, ref, DType.F32)
    with pytest.raises(OneModelError):
        x[0] = Tensor.from_list([1.0, 2.0])
    i = Tensor.from_list([1, 2, 3])
    i[1] = 9.7
    assert i.tolist() == [1, 9, 3] and i.dtype == DType.I64


# -- in place ---------------------------------------------------------------------------------------
def test_inplace_methods():
    x = Tensor.from_list([1.0, 2.0, 3.0])
    data = x.numpy()
    assert x.add_(1) is x
    close(x, [2, 3, 4])
    x.sub_(Tensor.from_list([1.0, 1.0, 2.0]))
    close(x, [1, 2, 2])
    x.mul_(3)
    close(x, [3, 6, 6])
    x += 1
    x -= 2
    x *= 2
    close(x, [4, 10, 10])
    assert x.zero_() is x
    close(x, [0, 0, 0])
    x.fill_(2.5)
    close(x, [2.5, 2.5, 2.5])
    x.copy_(np.array([1, 2, 3]))
    close(x, [1, 2, 3], DType.F32)
    x.copy_(Tensor.from_list([7.0]))
    close(x, [7, 7, 7])
    assert np.shares_memory(x.numpy(), data)  # really in place
    with pytest.raises(OneModelError):
        x.copy_(Tensor.from_list([1.0, 2.0]))
    with pytest.raises(OneModelError):
        x.add_(Tensor.zeros(DType.F32, 2, 3))  # the result cannot be written back


def test_inplace_on_leaf_requiring_grad_raises():
    w = om.tensor([1.0, 2.0], requires_grad=True)
    for fn in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.zero_(), lambda: w.fill_(1),
               lambda: w.copy_(np.zeros(2)), lambda: w.__setitem__(0, 1.0)):
        with pytest.raises(OneModelError, match="leaf"):
            fn()
    with om.GradMode.no_grad():
        w.mul_(2)
    close(w, [2, 4])
    assert w.requires_grad


# -- autograd ---------------------------------------------------------------------------------------
def test_backward_simple_chain():
    x = om.tensor([[1.0, -2.0, 3.0]], requires_grad=True)
    y = ((x * x).sum() + x.relu().sum() * 2) / 2
    y.backward()
    close(x.grad, x.numpy() + np.where(x.numpy() > 0, 1.0, 0.0))


def test_backward_needs_scalar_or_grad():
    x = om.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    with pytest.raises(OneModelError):
        y.backward()
    y.backward(Tensor.from_list([1.0, 0.5]))
    close(x.grad, [3, 1.5])
    with pytest.raises(OneModelError):
        Tensor.from_list([1.0]).backward()


def test_gradient_accumulates_and_detach():
    x = om.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    close(x.grad, 2 * np.array([1.0, 2.0]) + 3)
    d = x.detach()
    assert not d.requires_grad and np.shares_memory(d.numpy(), x.numpy())
    z = (d * x).sum()
    x.grad = None
    z.backward()
    close(x.grad, [1, 2])
    y = Tensor.from_list([1.0, 2.0])
    assert y.requires_grad_() is y and y.requires_grad
    y.requires_grad_(False)
    assert not y.requires_grad


def test_broadcasting_is_reduced_in_grads():
    w = om.tensor(np.ones((2, 3)), requires_grad=True)
    b = om.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    c = om.tensor(np.ones((2, 1)), requires_grad=True)
    s = om.tensor(2.0, dtype=DType.F64, requires_grad=True)
    ((w * b + c) * s).sum().backward()
    close(b.grad, [4, 4, 4])
    close(c.grad, [[2 * 3], [2 * 3]])
    close(w.grad, np.broadcast_to([2, 4, 6], (2, 3)))
    assert s.grad.shape == () and s.grad.item() == pytest.approx(2 * 6 + 2 * 3)
    assert b.grad.dtype == DType.F64


def test_grads_through_indexing_and_setitem():
    x = om.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    (x[1, ::2] * 3).sum().backward()
    close(x.grad, [[0, 0, 0], [3, 0, 3]])
    x.grad = None
    v = om.tensor([10.0, 20.0], dtype=DType.F64, requires_grad=True)
    y = x * 2
    y[:, 0] = v
    (y * y).sum().backward()
    close(v.grad, [20, 40])
    close(x.grad, [[0, 8, 16], [0, 32, 40]])  # d(2x)^2/dx = 8x outside column 0


def test_grads_through_split_concat_max_and_views():
    x = om.tensor(np.array([[1.0, 5.0, 5.0], [2.0, 0.0, -1.0]]), requires_grad=True)
    a, b = x.split([1, 2], axis=1)
    (b * 2).sum().backward()
    close(x.grad, [[0, 2, 2], [0, 2, 2]])
    x.grad = None
    x.max(axis=1).sum().backward()
    close(x.grad, [[0, 0.5, 0.5], [1, 0, 0]])  # ties share the gradient
    x.grad = None
    om.ops.concat([x, x.transpose(0, 1).reshape(2, 3)], axis=0).sum().backward()
    close(x.grad, np.full((2, 3), 2.0))


def test_no_grad():
    x = om.tensor([1.0, 2.0], requires_grad=True)
    assert om.GradMode.is_enabled()
    with om.GradMode.no_grad():
        assert not om.GradMode.is_enabled()
        y = x * 2
    assert om.GradMode.is_enabled()
    assert not y.requires_grad
    with pytest.raises(OneModelError):
        y.sum().backward()
    assert (x * 2).requires_grad


def test_int_results_carry_no_grad():
    x = om.tensor([1.5, -2.0], requires_grad=True)
    assert not (x > 0).requires_grad
    assert not x.argmax().requires_grad
    assert not x.cast(DType.I64).requires_grad
    assert x.cast(DType.F64).requires_grad


def test_version_check_catches_changes_after_use():
    x = om.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = (y * y).sum()
    y.mul_(2)
    with pytest.raises(OneModelError, match="in place"):
        z.backward()
