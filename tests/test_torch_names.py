"""Every project op states PyTorch's counterpart (`OpDef.torch`) or that torch has none, and
each stated name exists in torch (where torch is installed)."""
import functools

import numpy as np
import pytest

from onemodel import registry
from onemodel.core import TensorType
from onemodel.registry import OpDef, Sample
from tests.project_plugins import is_project


def _project_ops():
    return {name: op for name, op in sorted(registry.ops().items()) if is_project(op.provider)}


def test_every_project_op_states_its_torch_name():
    unstated = [name for name, op in _project_ops().items() if op.torch == ()]
    assert not unstated, f"ops without OpDef.torch (a torch name or None): {unstated}"


def _resolve(torch, name):
    head, *rest = name.split(".")
    obj = {"torch": torch, "F": torch.nn.functional, "Tensor": torch.Tensor}[head]
    for part in rest:
        obj = getattr(obj, part)
    return obj


@functools.cache
def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name", sorted(_project_ops()))
def test_torch_name_exists_in_torch(name):
    names = registry.get_op(name).torch or ()
    if not names:
        pytest.skip("torch has no such op")
    torch = _torch()
    for torch_name in names:
        try:
            assert callable(_resolve(torch, torch_name)), torch_name
        except AttributeError:
            pytest.fail(f"{name}: torch has no {torch_name}")


def _record(**kw):
    return OpDef(name="twice", inputs=("x",), kernel=lambda x: x * 2,
                 infer=lambda x: TensorType(x.dtype, x.shape), vjp=None,
                 samples=lambda rng: [Sample(args=(np.ones(2),))], **kw)


def test_torch_field_default_says_nothing_and_none_says_no_counterpart():
    assert _record().torch == ()
    assert _record(torch=None).torch is None
    assert _record(torch="torch.mul").torch == ("torch.mul",)
    assert _record(torch=["F.relu", "Tensor.relu"]).torch == ("F.relu", "Tensor.relu")


@pytest.mark.parametrize("bad", ["cumsum", "np.cumsum", "torch.", "torch cumsum"])
def test_a_misspelled_torch_name_is_refused_with_the_op_named(bad):
    with pytest.raises(TypeError, match=r"op 'twice': torch name"):
        _record(torch=bad)
