"""``om.nn.functional`` is ``om.ops`` under PyTorch's name (``import onemodel.nn.functional as
F``), and ``F.cross_entropy`` takes PyTorch's ``weight``, ``ignore_index`` and
``label_smoothing``."""
import inspect

import numpy as np
import pytest

import onemodel as om
import onemodel.nn.functional as F
from onemodel import DType, Tensor
from onemodel.errors import OneModelError, OpError

from .references import nn as ref


def test_functional_is_every_op():
    assert om.nn.functional is F
    assert set(om.registry.ops()) <= set(dir(F))
    assert F.relu is om.ops.relu and F.cross_entropy is om.ops.cross_entropy
    assert "label_smoothing" in inspect.signature(F.cross_entropy).parameters
    from onemodel.nn.functional import gelu
    assert gelu is om.ops.gelu


def test_an_unknown_name_says_what_is_close():
    with pytest.raises(AttributeError, match="did you mean relu"):
        F.reluu
    with pytest.raises(OneModelError):
        F.no_such_function


def test_pytorch_style_calls():
    x = Tensor.randn(DType.F32, 4, 3, seed=0)
    a = x.numpy()
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(F.softmax(x, dim=1).numpy(), e / e.sum(1, keepdims=True),
                               rtol=1e-5)
    np.testing.assert_allclose(F.relu(x).numpy(), np.maximum(a, 0))
    w, b = Tensor.randn(DType.F32, 5, 3, seed=1), Tensor.randn(DType.F32, 5, seed=2)
    np.testing.assert_allclose(F.linear(x, w, b).numpy(), a @ w.numpy().T + b.numpy(),
                               rtol=1e-5, atol=1e-6)
    assert F.dropout(x, 0.5, training=False) .numpy().tolist() == a.tolist()
    assert F.mse_loss(x, x).item() == 0.0


@pytest.mark.parametrize("weight", [None, np.array([0.5, 2.0, 1.0, 1.5])])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_label_smoothing_weight_ignore_index(weight, smoothing, reduction):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((5, 4))
    target = np.array([1, 3, -1, 0, 2])
    got = F.cross_entropy(Tensor.from_numpy(logits), Tensor.from_numpy(target),
                          weight=None if weight is None else Tensor.from_numpy(weight),
                          ignore_index=-1, reduction=reduction, label_smoothing=smoothing)
    expected = ref.cross_entropy(logits, target, weight, -1, reduction, smoothing)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)
    module = om.nn.CrossEntropyLoss(weight=None if weight is None else Tensor.from_numpy(weight),
                                    ignore_index=-1, reduction=reduction,
                                    label_smoothing=smoothing)
    np.testing.assert_allclose(module(Tensor.from_numpy(logits), Tensor.from_numpy(target))
                               .numpy(), expected, rtol=1e-10)


def test_cross_entropy_smoothing_of_probability_targets_and_spatial():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((2, 3, 4))
    probs = rng.dirichlet(np.ones(3), size=(2, 4)).transpose(0, 2, 1)
    got = F.cross_entropy(Tensor.from_numpy(logits), Tensor.from_numpy(probs), label_smoothing=0.1)
    np.testing.assert_allclose(got.item(), ref.cross_entropy(logits, probs, label_smoothing=0.1),
                               rtol=1e-10)
    target = rng.integers(0, 3, (2, 4))
    got = F.cross_entropy(Tensor.from_numpy(logits), Tensor.from_numpy(target),
                          label_smoothing=0.3)
    np.testing.assert_allclose(got.item(), ref.cross_entropy(logits, target, label_smoothing=0.3),
                               rtol=1e-10)


def test_cross_entropy_bad_arguments():
    x = Tensor.randn(DType.F32, 2, 3, seed=0)
    t = Tensor.from_list([0, 2])
    with pytest.raises(OpError, match="label_smoothing must be between"):
        F.cross_entropy(x, t, label_smoothing=1.5)
    with pytest.raises(OpError, match="weight"):
        F.cross_entropy(x, t, weight=Tensor.ones(DType.F32, 4))
