"""Data-dependent ops (issue 23): nonzero, unique, masked_select and boolean-mask indexing run
eagerly, with gradients where PyTorch has them, and are refused while tracing with the op and
the user's line named."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.errors import OneModelError, TraceException


@pytest.fixture
def a():
    return np.array([[0.5, -1.0, 0.0], [2.0, 0.0, -3.0]], np.float32)


def test_nonzero(a):
    x = Tensor.from_numpy(a)
    np.testing.assert_array_equal(x.nonzero().numpy(), np.argwhere(a))
    rows, cols = om.ops.nonzero(x, as_tuple=True)
    np.testing.assert_array_equal(rows.numpy(), np.nonzero(a)[0])
    np.testing.assert_array_equal(cols.numpy(), np.nonzero(a)[1])
    assert x.nonzero().dtype == DType.I64


def test_unique():
    x = Tensor.from_list([3, 1, 3, 2, 1, 3])
    assert x.unique().tolist() == [1, 2, 3]
    values, inverse, counts = om.ops.unique(x, return_inverse=True, return_counts=True)
    assert values.tolist() == [1, 2, 3] and counts.tolist() == [2, 1, 3]
    assert inverse.tolist() == [2, 0, 2, 1, 0, 2]
    values, inverse = om.ops.unique(x, sorted=False, return_inverse=True)
    assert values.tolist() == [3, 1, 2] and inverse.tolist() == [0, 1, 0, 2, 1, 0]
    rows = Tensor.from_list([[1, 2], [0, 1], [1, 2]])
    assert om.ops.unique(rows, dim=0).tolist() == [[0, 1], [1, 2]]


def test_boolean_mask_get_with_gradient(a):
    x = om.tensor(a, requires_grad=True)
    picked = x[x > 0]
    np.testing.assert_array_equal(picked.numpy(), a[a > 0])
    (picked * Tensor.from_list([1.0, 2.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 0, 0], [2.0, 0, 0]])
    rows = Tensor.from_numpy(a)[Tensor.from_list([False, True])]
    np.testing.assert_array_equal(rows.numpy(), a[[False, True]])
    np.testing.assert_array_equal(Tensor.from_numpy(a)[a < 0].numpy(), a[a < 0])


def test_boolean_mask_set(a):
    x = Tensor.from_numpy(a.copy())
    x[x < 0] = 0.0
    np.testing.assert_array_equal(x.numpy(), np.maximum(a, 0))
    y = Tensor.from_numpy(a.copy())
    y[Tensor.from_list([True, False])] = Tensor.from_list([7.0, 8.0, 9.0])
    assert y.tolist()[0] == [7.0, 8.0, 9.0]
    z = Tensor.from_numpy(a.copy())
    z[z != 0] = Tensor.from_list([1.0, 2.0, 3.0, 4.0])
    assert z.tolist() == [[1.0, 2.0, 0.0], [3.0, 0.0, 4.0]]
    with pytest.raises(OneModelError, match="cannot fill the 4 selected"):
        z[z != 0] = Tensor.from_list([1.0, 2.0])


def test_masked_select_with_gradient(a):
    x = om.tensor(a, requires_grad=True)
    mask = Tensor.from_list([True, False, True])
    out = x.masked_select(mask)
    np.testing.assert_array_equal(out.numpy(), a[:, [True, False, True]].reshape(-1))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 1], [1, 0, 1]])


def test_a_mask_that_does_not_match_is_an_error(a):
    with pytest.raises(OneModelError, match="leading axes"):
        Tensor.from_numpy(a)[Tensor.from_list([True, False, True])]


@pytest.mark.parametrize("name, fn", [
    ("nonzero", lambda x: x.nonzero()),
    ("unique", lambda x: om.ops.unique(x)),
    ("masked_select", lambda x: x.masked_select(x > 0)),
    ("index_mask", lambda x: x[x > 0]),
])
def test_tracing_refuses_them_naming_the_op_and_line(name, fn):
    with pytest.raises(TraceException, match=f"ops.{name} cannot be traced: its output size "
                                             f"depends on the values(.|\n)*test_data_dependent"):
        om.trace(fn, Tensor.randn(DType.F32, 3, 4, seed=0), "batch", None)
