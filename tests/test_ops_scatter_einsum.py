"""PyTorch semantics of scatter, scatter_add, diag, einsum and repeat_interleave (issue 23)
beyond the generic tests: torch's argument order, in-place forms, numpy's implicit einsum
output, and errors that name the op and the argument."""
import inspect

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.errors import OneModelError

ops = om.ops


def t(a, dtype=None):
    return Tensor.from_numpy(np.array(a, dtype=dtype))


def test_scatter_takes_torch_order_and_has_in_place_forms():
    x = t(np.zeros((2, 3)))
    idx = t([[2, 0], [1, 1]])
    src = t([[1.0, 2.0, 9.0], [3.0, 4.0, 9.0]])
    assert x.scatter(1, idx, src).numpy().tolist() == [[2.0, 0.0, 1.0], [0.0, 4.0, 0.0]]
    assert ops.scatter_add(x, 1, idx, src).numpy().tolist() == [[2.0, 0.0, 1.0], [0.0, 7.0, 0.0]]
    y = x.clone()
    y.scatter_add_(1, idx, src)
    assert y.numpy()[1, 1] == 7.0 and x.numpy()[1, 1] == 0.0


def test_einsum_forms():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(ops.einsum([t(a), t(b)], "ij,jk").numpy(), a @ b)
    np.testing.assert_allclose(ops.einsum([t(b)], "ij").numpy(), b)  # implicit: no change
    np.testing.assert_allclose(ops.einsum([t(b)], "ji").numpy(), b.T)  # sorted letters
    np.testing.assert_allclose(ops.einsum([t(np.eye(3) * 2)], "ii").numpy(), 6.0)
    np.testing.assert_allclose(ops.einsum([t(a)], "...j->...").numpy(), a.sum(-1))


def test_einsum_takes_torch_order():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4)
    c = np.arange(4.0)
    np.testing.assert_allclose(ops.einsum("ij,jk->ik", t(a), t(b)).numpy(), a @ b)
    np.testing.assert_allclose(ops.einsum("ij,jk,k->i", [t(a), t(b), t(c)]).numpy(),
                               np.einsum("ij,jk,k->i", a, b, c))
    np.testing.assert_allclose(ops.einsum("ii", t(np.eye(3) * 2)).numpy(), 6.0)
    np.testing.assert_allclose(ops.einsum(equation="ij->j", operands=[t(a)]).numpy(), a.sum(0))
    np.testing.assert_allclose(om.nn.functional.einsum("ij,kj->ik", t(a), t(a)).numpy(), a @ a.T)
    assert str(inspect.signature(ops.einsum)) == "(equation, *operands)"


def test_einsum_torch_order_traces_with_a_symbolic_axis():
    w = t(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    traced = om.trace(lambda x: ops.einsum("bi,ij->bj", x, w), t(np.ones((2, 3), np.float32)),
                      "batch", None)
    x = np.arange(15.0, dtype=np.float32).reshape(5, 3)
    np.testing.assert_allclose(traced(t(x)).numpy(), x @ w.numpy())


def test_einsum_without_operands_names_them():
    with pytest.raises(OneModelError, match=r"einsum.*'operands'"):
        ops.einsum("ij")


def test_diag_and_repeat_interleave():
    assert ops.diag(t([1.0, 2.0]), 1).numpy().tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    assert t(np.arange(6.0).reshape(2, 3)).diag(-1).numpy().tolist() == [3.0]
    assert t([1, 2]).repeat_interleave(2).numpy().tolist() == [1, 1, 2, 2]
    assert t([[1, 2]]).repeat_interleave(2, dim=1).numpy().tolist() == [[1, 1, 2, 2]]


@pytest.mark.parametrize("call, words", [
    (lambda: ops.scatter(t(np.zeros((2, 2))), 0, t([[2, 0]]), t(np.ones((1, 2)))),
     ["ops.scatter", "index", "range"]),
    (lambda: ops.scatter(t(np.zeros((2, 2))), 0, t([[-1, 0]]), t(np.ones((1, 2)))),
     ["ops.scatter", "negative"]),
    (lambda: ops.scatter_add(t(np.zeros((2, 2))), 0, t([[0, 0, 0]]), t(np.ones((1, 2)))),
     ["ops.scatter_add", "larger than src"]),
    (lambda: ops.scatter(t(np.zeros((2, 2))), 0, t([[0.0, 1.0]]), t(np.ones((1, 2)))),
     ["ops.scatter", "integer"]),
    (lambda: ops.diag(t(np.zeros((2, 2, 2)))), ["ops.diag", "1-D", "2-D"]),
    (lambda: ops.einsum([t(np.zeros((2, 3)))], "ijk->i"), ["ops.einsum", "'equation'", "3"]),
    (lambda: ops.einsum([t(np.zeros(2)), t(np.zeros(3))], "i,i->i"), ["ops.einsum", "'i'"]),
    (lambda: ops.einsum([t(np.zeros(2))], "i->j"), ["ops.einsum", "'j'"]),
    (lambda: ops.einsum([t(np.zeros(2))], "i,j->ij"), ["ops.einsum", "2 operand terms"]),
    (lambda: ops.einsum([t(np.zeros(2))], "i1->i"), ["ops.einsum", "letters"]),
    (lambda: ops.repeat_interleave(t([1.0]), -1), ["ops.repeat_interleave", "'repeats'"]),
])
def test_bad_arguments_name_the_op_and_the_argument(call, words):
    with pytest.raises(OneModelError) as info:
        call()
    for w in words:
        assert w in str(info.value), (w, str(info.value))
