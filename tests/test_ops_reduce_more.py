"""PyTorch semantics of the reductions, scans and sorts from issue 23 that the generic tests do
not pin down: dtypes, PyTorch's spellings of arguments, tuples of outputs, and errors that name
the op and the argument."""
import math

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.errors import OneModelError

ops = om.ops


def t(a, dtype=None):
    return Tensor.from_numpy(np.array(a, dtype=dtype))


def test_scans_and_prod_of_ints_give_i64_as_torch():
    assert ops.cumsum(t([1, 2, 3], np.int32), 0).dtype == om.DType.I64
    assert t([True, True, False]).cumsum(dim=0).numpy().tolist() == [1, 2, 2]
    assert ops.prod(t([[2, 3], [4, 5]], np.int32), dim=1).numpy().tolist() == [6, 20]
    assert ops.prod(t([True, False])).dtype == om.DType.I64


def test_var_and_std_take_correction_and_unbiased():
    x = t([[1.0, 2.0, 4.0], [3.0, 3.0, 9.0]])
    a = x.numpy()
    np.testing.assert_allclose(x.var(dim=1).numpy(), a.var(axis=1, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(x.var(dim=1, correction=0).numpy(), a.var(axis=1), rtol=1e-6)
    np.testing.assert_allclose(x.std(dim=0, unbiased=False).numpy(), a.std(axis=0), rtol=1e-6)
    np.testing.assert_allclose(x.std(1, True).numpy(), a.std(axis=1, ddof=1), rtol=1e-6)
    assert x.var(dim=1, keepdim=True).shape == (2, 1)


@pytest.mark.parametrize("call, words", [
    (lambda: ops.var(t([1, 2, 3]), dim=0), ["ops.var", "x", "float"]),
    (lambda: ops.std(t([1.0, 2.0]), correction=1, unbiased=True), ["ops.std", "correction",
                                                                     "unbiased"]),
    (lambda: ops.norm(t([[1.0]]), p="nuc"), ["ops.norm", "'p'", "nuc"]),
    (lambda: ops.norm(t([1.0]), p=None), ["ops.norm", "'p'"]),
    (lambda: ops.topk(t([1.0, 2.0]), 3), ["ops.topk", "'k'", "3"]),
    (lambda: ops.cumsum(t([[1.0]]), dim=2), ["ops.cumsum", "2"]),
    (lambda: ops.sort(t([1.0]), dim=1), ["ops.sort", "1"]),
    (lambda: ops.argmin(t(np.zeros((0, 2)))), ["ops.argmin", "empty"]),
    (lambda: ops.amax(t([[1.0]]), dim=(0, 0)), ["ops.amax", "repeats"]),
])
def test_bad_arguments_name_the_op_and_the_argument(call, words):
    with pytest.raises(OneModelError) as info:
        call()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_norm_orders():
    x = t([[3.0, -4.0], [0.0, 1.0]])
    assert x.norm().item() == pytest.approx(math.sqrt(26.0))
    assert x.norm(p="fro", dim=(0, 1)).item() == pytest.approx(math.sqrt(26.0))
    assert ops.norm(x, p=1, dim=1).numpy().tolist() == [7.0, 1.0]
    assert ops.norm(x, p=math.inf, dim=1).numpy().tolist() == [4.0, 1.0]
    assert ops.norm(x, p=0, dim=1).numpy().tolist() == [2.0, 1.0]


def test_logsumexp_does_not_overflow_and_keeps_minus_inf():
    x = t([[1000.0, 1000.0], [-np.inf, -np.inf]])
    np.testing.assert_allclose(x.logsumexp(dim=1).numpy(), [1000.0 + math.log(2.0), -np.inf])


def test_sort_and_topk_return_values_and_indices():
    x = t([[3.0, 1.0, 3.0, 2.0]])
    values, indices = x.sort(dim=-1, descending=True)
    assert values.numpy().tolist() == [[3.0, 3.0, 2.0, 1.0]]
    assert indices.numpy().tolist() == [[0, 2, 3, 1]] and indices.dtype == om.DType.I64
    values, indices = x.topk(2, largest=False)
    assert values.numpy().tolist() == [[1.0, 2.0]] and indices.numpy().tolist() == [[1, 3]]
    assert x.argsort(dim=1, stable=True).numpy().tolist() == [[1, 3, 0, 2]]


def test_sort_gradient_goes_back_to_the_positions():
    x = t([2.0, -1.0, 5.0]).requires_grad_()
    values, _ = x.sort(descending=True)
    (values * t([1.0, 10.0, 100.0])).sum().backward()
    assert x.grad.numpy().tolist() == [10.0, 100.0, 1.0]


def test_amax_amin_argmin_with_torch_spellings():
    x = t([[1.0, 5.0], [7.0, -2.0]])
    assert x.amax(dim=0).numpy().tolist() == [7.0, 5.0]
    assert x.amin(dim=1, keepdim=True).numpy().tolist() == [[1.0], [-2.0]]
    assert x.argmin(dim=1).numpy().tolist() == [0, 1] and x.argmin().item() == 3
