"""The eager fast path (onemodel/core/eager_cache.py): a call whose signature was seen before skips
binding and inference, and must behave exactly like the full path — results, autograd, errors —
and step aside while a tracer records. Speed is measured in benchmarks/test_bench_eager.py."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel.core import TensorType, eager_cache
from onemodel.registry import OpDef, Param, Sample, hookimpl

ops = om.ops


@pytest.fixture(autouse=True)
def fresh_cache():
    eager_cache.clear()
    yield
    eager_cache.clear()


def _t(*shape, seed=0):
    return om.Tensor.from_numpy(np.random.default_rng(seed).standard_normal(shape)
                                .astype(np.float32))


def test_a_repeated_signature_is_stored_once_and_replayed():
    x, y = _t(3, 4), _t(3, 4, seed=1)
    ops.add(x, y)
    assert eager_cache.size() == 1
    for _ in range(3):
        got = ops.add(y, x)
    assert eager_cache.size() == 1
    np.testing.assert_array_equal(got.numpy(), y.numpy() + x.numpy())
    ops.add(_t(2, 4), _t(2, 4))  # another shape: another signature
    assert eager_cache.size() == 2


def test_same_object_twice_is_not_two_objects():
    x, y = _t(2, 3), _t(2, 3, seed=1)
    np.testing.assert_array_equal((x * x).numpy(), x.numpy() ** 2)
    np.testing.assert_array_equal((x * y).numpy(), x.numpy() * y.numpy())
    np.testing.assert_array_equal((y * y).numpy(), y.numpy() ** 2)
    np.testing.assert_array_equal((x * y).numpy(), x.numpy() * y.numpy())


def test_scalars_params_and_keywords_are_part_of_the_signature():
    x = _t(3, 4)
    a = x.numpy()
    for k in (2.0, 3.0, 2.0, 2, True):
        np.testing.assert_allclose((x * k).numpy(), a * k)
    assert np.signbit((x * 0.0).numpy()[a < 0]).all()
    assert not np.signbit((x * -0.0).numpy()[a < 0]).any()  # -0.0 is a different constant
    for axis in (0, 1, 0, -1):
        np.testing.assert_allclose(ops.sum(x, axis=axis).numpy(), a.sum(axis=axis), rtol=1e-6)
        np.testing.assert_allclose(ops.sum(x, axis).numpy(), a.sum(axis=axis), rtol=1e-6)
    np.testing.assert_allclose(ops.sum(x, axis=1, keepdims=True).numpy(),
                               a.sum(axis=1, keepdims=True), rtol=1e-6)


def test_pytorch_dim_keyword_through_the_cache():
    x = _t(3, 4)
    for _ in range(2):
        np.testing.assert_allclose(ops.sum(x, dim=1).numpy(), x.numpy().sum(axis=1), rtol=1e-6)
        np.testing.assert_allclose(ops.sum(x, dim=0).numpy(), x.numpy().sum(axis=0), rtol=1e-6)


def test_arrays_lists_and_numpy_scalars_as_inputs():
    x = _t(2, 3)
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(2):
        np.testing.assert_array_equal(ops.add(x, arr).numpy(), x.numpy() + arr)
        np.testing.assert_array_equal(ops.add(x, [1.0, 2.0, 3.0]).numpy(),
                                      x.numpy() + np.float32([1, 2, 3]))
        np.testing.assert_array_equal(ops.mul(x, np.float32(3)).numpy(), x.numpy() * 3)
    arr2 = arr + 1  # same signature, other values: read from this call, not the first
    np.testing.assert_array_equal(ops.add(x, arr2).numpy(), x.numpy() + arr2)


def test_variadic_inputs():
    x, y = _t(2, 3), _t(2, 3, seed=1)
    for a, b in ((x, y), (y, x), (x, x)):
        np.testing.assert_array_equal(ops.concat([a, b], axis=0).numpy(),
                                      np.concatenate([a.numpy(), b.numpy()]))


def test_autograd_is_the_same_on_a_replayed_call():
    grads = []
    for _ in range(3):
        x = om.tensor(np.array([[1.0, -2.0], [3.0, 0.5]]), requires_grad=True)
        (ops.relu(x) * x).sum().backward()
        grads.append(x.grad.numpy())
    want = np.where(np.array([[1.0, -2.0], [3.0, 0.5]]) > 0, 2 * np.array([[1.0, -2.0],
                                                                            [3.0, 0.5]]), 0)
    for g in grads:
        np.testing.assert_allclose(g, want)
    with om.GradMode.no_grad():
        assert not ops.relu(om.tensor([1.0], requires_grad=True)).requires_grad


def _plugin(op):
    class P:
        @hookimpl
        def onemodel_ops(self):
            return [op]
    return P()


def test_a_kernel_that_goes_wrong_later_gets_the_same_error(registered):
    calls = []

    def kernel(x):
        calls.append(1)
        return x * 2 if len(calls) == 1 else np.zeros(5)

    registered(_plugin(OpDef(name="cache_flaky", inputs=("x",), kernel=kernel,
                             infer=lambda t: TensorType(t.dtype, t.shape), vjp=None,
                             samples=lambda rng: [Sample(args=(np.ones(2),))])), "test-flaky")
    x = _t(3)
    ops.cache_flaky(x)
    with pytest.raises(om.OpError, match="returned shape \\(5,\\), but its inference gives"):
        ops.cache_flaky(x)


def test_a_kernel_result_of_another_dtype_is_still_cast(registered):
    registered(_plugin(OpDef(name="cache_f64", inputs=("x",), kernel=lambda x: x.astype(np.float64),
                             infer=lambda t: TensorType(t.dtype, t.shape), vjp=None,
                             samples=lambda rng: [Sample(args=(np.ones(2),))])), "test-f64")
    for _ in range(2):
        assert ops.cache_f64(_t(3)).dtype == om.DType.F32


def test_mutable_params_and_tensors_in_params_are_not_cached(registered):
    registered(_plugin(OpDef(name="cache_pick", inputs=("x",),
                             params={"where": Param(kind="any")},
                             kernel=lambda x, where: x[np.asarray(where, dtype=np.int64)],
                             infer=lambda t, where: TensorType(t.dtype, (len(where),)),
                             vjp=None, samples=lambda rng: [Sample(args=(np.ones(2),))])),
               "test-pick")
    x = om.tensor(np.array([10.0, 20.0, 30.0]))
    where = [0, 1]
    np.testing.assert_array_equal(ops.cache_pick(x, where).numpy(), [10.0, 20.0])
    where[1] = 2  # the same list object, changed: a cached params dict would still say 1
    np.testing.assert_array_equal(ops.cache_pick(x, where).numpy(), [10.0, 30.0])
    np.testing.assert_array_equal(ops.cache_pick(x, (2, 0)).numpy(), [30.0, 10.0])
    np.testing.assert_array_equal(ops.cache_pick(x, (2, 0)).numpy(), [30.0, 10.0])


def test_unknown_argument_types_take_the_full_path():
    class Weird:
        pass

    with pytest.raises(om.OpError, match="must be a Tensor, an array or a number"):
        ops.add(_t(2), Weird())
    assert eager_cache.size() == 0
    with pytest.raises(om.OpError, match="must be a Tensor, an array or a number"):
        ops.add(_t(2), Weird())


def test_bad_calls_are_never_cached():
    x = _t(2, 3)
    for _ in range(2):
        with pytest.raises(om.OpError):
            ops.sum(x, axis=5)
        with pytest.raises(om.OpError):
            ops.add(x, _t(4, 5))
    assert eager_cache.size() == 0


def test_bypassed_while_tracing():
    x = _t(3, 4)
    ops.relu(x * 2.0)  # warm the cache with the same signatures

    def fn(t):
        return ops.relu(t * 2.0)

    traced = om.trace(fn, x, "batch", None)
    assert [n.op for n in traced.graph.nodes] == ["mul", "relu"]
    y = _t(5, 4, seed=3)
    np.testing.assert_allclose(traced(y).numpy(), fn(y).numpy())


def test_the_table_is_bounded(monkeypatch):
    monkeypatch.setattr(eager_cache, "MAX_ENTRIES", 8)
    x = _t(2, 2)
    for k in range(50):
        np.testing.assert_allclose((x + float(k)).numpy(), x.numpy() + k)
        assert eager_cache.size() <= 8


def test_an_entry_is_only_for_its_own_op_record():
    x = _t(2)
    ops.relu(x)
    slots: list = []
    relu = om.registry.get_op("relu")
    key = eager_cache.key(relu, (x,), {}, slots)
    assert eager_cache.lookup(key, relu).op is relu
    assert eager_cache.lookup(key, om.registry.get_op("neg")) is None
