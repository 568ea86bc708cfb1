"""What a PyTorch user types first gets an answer that works or says how: ``dim`` for ``axis``,
factories with the dtype first, numpy dtype names and comparisons, casting methods, ``bool(x)``."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.errors import ArgumentError, OneModelError, OpError


@pytest.fixture
def x():
    return Tensor.from_numpy(np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7 - 1)


# -- dim for axis ---------------------------------------------------------------------------------
@pytest.mark.parametrize("call, expected", [
    (lambda t: t.sum(dim=1), lambda a: a.sum(axis=1)),
    (lambda t: t.sum(dim=(0, 2), keepdim=True), lambda a: a.sum(axis=(0, 2), keepdims=True)),
    (lambda t: t.mean(dim=-1), lambda a: a.mean(axis=-1)),
    (lambda t: t.max(dim=0), lambda a: a.max(axis=0)),
    (lambda t: om.ops.min(t, dim=2, keepdim=True), lambda a: a.min(axis=2, keepdims=True)),
    (lambda t: t.argmax(dim=1), lambda a: a.argmax(axis=1)),
    (lambda t: t.transpose(dim0=0, dim1=2), lambda a: np.swapaxes(a, 0, 2)),
    (lambda t: t.permute(dims=(2, 0, 1)), lambda a: np.transpose(a, (2, 0, 1))),
    (lambda t: t.flatten(start_dim=1), lambda a: a.reshape(2, 12)),
    (lambda t: t.flatten(start_dim=0, end_dim=1), lambda a: a.reshape(6, 4)),
    (lambda t: t.unsqueeze(dim=1), lambda a: a[:, None]),
    (lambda t: t[:, :1].squeeze(dim=1), lambda a: a[:, 0]),
    (lambda t: om.ops.concat([t, t], dim=1), lambda a: np.concatenate([a, a], axis=1)),
    (lambda t: om.ops.split(t, (1, 3), dim=2)[1], lambda a: a[:, :, 1:]),
    (lambda t: om.ops.softmax(t, dim=-1),
     lambda a: np.exp(a) / np.exp(a).sum(axis=-1, keepdims=True)),
    (lambda t: om.ops.log_softmax(t, dim=1),
     lambda a: a - np.log(np.exp(a).sum(axis=1, keepdims=True))),
])
def test_dim_is_accepted_wherever_axis_is(x, call, expected):
    np.testing.assert_allclose(call(x).numpy(), expected(x.numpy()), rtol=1e-5, atol=1e-6)


def test_every_axis_param_has_its_pytorch_spelling(x):
    """Each op param named after an axis is accepted under PyTorch's name (a generic check over
    the registry, so a new op cannot forget it)."""
    from onemodel.core.dispatch import bind, torch_name

    checked = 0
    for op in om.registry.ops().values():
        for pname in op.params:
            alias = torch_name(pname)
            if alias is None or "axis" not in pname and "axes" not in pname:
                continue
            if alias in op.params:  # the op's own param has that name: no torch-facing op
                assert op.torch is None, f"{op.name}: param {alias!r} hides torch's {pname!r}"
                continue
            args = ([x, x],) if op.variadic else (x,) * len(op.inputs)
            inputs = {}
            if op.signature:  # another positional order (index_select(x, dim, index)): by name
                args, inputs = (), {i.rstrip("?*"): x for i in op.inputs}
            with pytest.raises(OpError, match=f"got parameter {pname!r} twice.*{alias!r}"):
                bind(op, args, {**inputs, pname: 0, alias: 0})
            checked += 1
    assert checked >= 10


def test_axis_and_dim_together_is_an_error(x):
    with pytest.raises(OpError, match="'axis' twice.*'dim' is PyTorch's name"):
        x.sum(axis=1, dim=1)
    with pytest.raises(OpError, match="'axis' twice"):
        x.sum(1, dim=1)
    with pytest.raises(OpError, match="unknown argument 'dmi'; did you mean dim"):
        x.sum(dmi=1)


def test_dim_works_while_tracing():
    traced = om.trace(lambda t: om.ops.softmax(t, dim=-1).sum(dim=1), Tensor.zeros(DType.F32, 3, 5),
                      "batch", None)
    a = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(traced(Tensor.from_numpy(a)).numpy(), np.ones(4), rtol=1e-5)


# -- factories ------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, shown", [
    (lambda: Tensor.zeros(2, 3), "Tensor.zeros(DType.F32, 2, 3)"),
    (lambda: Tensor.ones((2, 3)), "Tensor.ones(DType.F32, (2, 3))"),
    (lambda: Tensor.randn(4), "Tensor.randn(DType.F32, 4)"),
    (lambda: Tensor.rand(2, 2, seed=1), "Tensor.rand(DType.F32, 2, 2)"),
    (lambda: Tensor.full(2, 3, 1.5), "Tensor.full(DType.F32, 0.5, 2, 3)"),
    (lambda: Tensor.arange(5), "Tensor.arange(DType.F32, 5)"),
])
def test_factory_with_a_size_first_says_the_dtype_comes_first(make, shown):
    with pytest.raises(ArgumentError) as info:
        make()
    assert "the dtype comes first" in str(info.value) and shown in str(info.value)


# -- dtypes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, dtype", [
    ("float32", DType.F32), ("float16", DType.F16), ("float64", DType.F64), ("int8", DType.I8),
    ("int16", DType.I16), ("int32", DType.I32), ("int64", DType.I64), ("uint8", DType.U8),
    ("bool", DType.BOOL), ("f32", DType.F32), ("F32", DType.F32), ("i64", DType.I64),
])
def test_dtype_parse_takes_numpy_names(name, dtype):
    assert DType.parse(name) is dtype


def test_dtype_parse_message_lists_only_what_it_takes():
    with pytest.raises(OneModelError) as info:
        DType.parse("float")
    listed = str(info.value).split("known: ")[1].replace("(or numpy's names:", ",").rstrip(")")
    names = [n.strip() for n in listed.split(",") if n.strip()]
    assert "float32" in names and "f32" in names
    for n in names:
        assert isinstance(DType.parse(n), DType), n


def test_dtype_compares_equal_to_numpy_dtypes():
    t = Tensor.zeros(DType.F32, 2)
    assert t.dtype == np.float32 and np.float32 == t.dtype
    assert t.dtype == np.dtype("float32") and np.dtype("float32") == t.dtype
    assert t.dtype != np.float64 and not (t.dtype == np.int32)
    assert DType.I64 == np.int64 and DType.BOOL == np.bool_
    assert t.dtype != "banana" and t.dtype == DType.F32 and t.dtype != DType.F64
    assert {DType.F32: 1}[t.dtype] == 1  # still hashable as an enum member
    assert np.zeros(2, dtype=DType.F16).dtype == np.float16


# -- casting methods ------------------------------------------------------------------------------
@pytest.mark.parametrize("method, dtype", [
    ("half", DType.F16), ("float", DType.F32), ("double", DType.F64), ("char", DType.I8),
    ("short", DType.I16), ("int", DType.I32), ("long", DType.I64), ("byte", DType.U8),
    ("bool", DType.BOOL),
])
def test_casting_methods(method, dtype):
    a = np.array([[1.75, -2.5], [0.0, 3.0]])
    t = getattr(Tensor.from_numpy(a), method)()
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), a.astype(dtype.numpy))
    assert getattr(Tensor, method).__doc__  # on the class, documented


def test_to_and_float_keep_the_gradient():
    w = Tensor.from_list([1.0, 2.0], dtype=DType.F64).requires_grad_()
    (w.float() * 3).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])
    assert w.to("float16").dtype == DType.F16 and w.to(np.float32).dtype == DType.F32


def test_casting_methods_trace():
    traced = om.trace(lambda t: t.double() * 2, Tensor.zeros(DType.F32, 3, 2), "batch", None)
    out = traced(Tensor.ones(DType.F32, 5, 2))
    assert out.dtype == DType.F64 and out.shape == (5, 2)


# -- bool(x) --------------------------------------------------------------------------------------
def test_bool_of_many_elements_names_methods_that_exist():
    t = Tensor.from_list([0.0, 1.0])
    with pytest.raises(OpError, match="ambiguous") as info:
        bool(t)
    for method in ("any", "all"):
        assert f"x.{method}()" in str(info.value)
        assert callable(getattr(t, method))


@pytest.mark.parametrize("values, axis", [
    ([[0.0, 1.0], [0.0, 0.0]], None), ([[0.0, 1.0], [0.0, 0.0]], 1),
    ([[True, True], [False, True]], 0), ([[3, 0], [1, 2]], (0, 1)), ([[np.nan, 0.0]], 1),
])
def test_any_all_match_numpy(values, axis):
    a = np.array(values)
    t = Tensor.from_numpy(a)
    for name in ("any", "all"):
        got = getattr(t, name)() if axis is None else getattr(t, name)(dim=axis)
        assert got.dtype == DType.BOOL
        np.testing.assert_array_equal(got.numpy(), getattr(np, name)(a, axis=axis))
