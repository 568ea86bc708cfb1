"""The public names of API.md's Tensors and Grad mode sections, and every basic op, exist."""
import inspect

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor

DTYPES = ["F16", "F32", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "BOOL"]
FACTORIES = ["zeros", "ones", "full", "arange", "randn", "rand", "from_list", "from_numpy"]
PROPERTIES = ["shape", "dtype", "ndim", "numel", "requires_grad", "grad"]
DATA = ["numpy", "item", "tolist"]
OPERATORS = ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
             "__rtruediv__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
             "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__getitem__", "__setitem__"]
INPLACE = ["add_", "sub_", "mul_", "zero_", "fill_", "copy_"]
AUTOGRAD = ["backward", "detach", "requires_grad_"]
BASIC_OPS = """add sub mul div neg pow exp log sqrt abs tanh sigmoid relu maximum minimum where
clip cast matmul transpose permute reshape flatten squeeze unsqueeze concat split expand gather
take sum mean max min argmax""".split()
# PyTorch-named Tensor methods that mirror ops (API.md: "Methods mirror ops")
METHODS = """add sub mul div neg pow exp log sqrt abs tanh sigmoid relu maximum minimum clip cast
matmul transpose permute reshape flatten squeeze unsqueeze split expand gather take sum mean max
min argmax clone""".split()


@pytest.mark.parametrize("name", DTYPES)
def test_dtype_members(name):
    d = getattr(DType, name)
    assert isinstance(d.numpy, np.dtype)
    assert DType.from_numpy(d.numpy) is d


def test_dtype_numpy_and_from_numpy():
    assert DType.F32.numpy == np.dtype(np.float32)
    assert DType.from_numpy(np.float32) is DType.F32
    assert DType.from_numpy(np.int64) is DType.I64


def test_top_level_names():
    for name in ("Tensor", "DType", "tensor", "manual_seed", "GradMode", "ops", "registry"):
        assert hasattr(om, name), name
    assert callable(om.GradMode.no_grad) and callable(om.GradMode.is_enabled)
    assert om.GradMode.is_enabled() is True


@pytest.mark.parametrize("name", FACTORIES)
def test_factories_are_classmethods(name):
    assert isinstance(inspect.getattr_static(Tensor, name), classmethod)


def test_factory_signatures():
    assert "seed" in inspect.signature(Tensor.randn).parameters
    assert "seed" in inspect.signature(Tensor.rand).parameters
    assert "dtype" in inspect.signature(Tensor.from_list).parameters
    params = inspect.signature(om.tensor).parameters
    assert list(params)[:3] == ["data", "dtype", "requires_grad"]
    params = inspect.signature(Tensor.arange).parameters
    assert list(params)[:4] == ["dtype", "start", "stop", "step"]


@pytest.mark.parametrize("name", PROPERTIES + DATA + OPERATORS + AUTOGRAD)
def test_tensor_attributes(name):
    x = Tensor.ones(DType.F32, 2)
    assert hasattr(x, name), name


@pytest.mark.parametrize("name", INPLACE + METHODS)
def test_tensor_methods_from_ops(name):
    x = Tensor.ones(DType.F32, 2)
    assert callable(getattr(x, name)), name
    assert name in dir(x)


@pytest.mark.parametrize("name", BASIC_OPS)
def test_basic_op_exists(name):
    op = om.registry.ops()[name]
    assert op.provider.startswith("onemodel-ops-basic")
    assert callable(getattr(om.ops, name))
    assert op.doc
    if op.vjp is None:
        assert "differentiable" in op.doc.lower() or not op.inputs, name


def test_axis_params_are_called_axis():
    ops = om.registry.ops()
    for name in ("sum", "mean", "max", "min", "argmax", "squeeze", "unsqueeze", "concat", "split",
                 "gather", "take"):
        assert "axis" in ops[name].params, name
    assert list(ops["transpose"].params) == ["axis0", "axis1"]
    assert list(ops["flatten"].params) == ["start_axis", "end_axis"]
    assert list(ops["sum"].params) == ["axis", "keepdims"]
    assert ops["concat"].inputs == ("tensors*",)
    assert ops["gather"].inputs == ("x", "indices") and ops["take"].inputs == ("x", "indices")
