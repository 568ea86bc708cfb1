"""Op functions and op-backed Tensor methods carry real signatures and docstrings made from the
record, and the methods live on the Tensor class, so help(), dir() and IDEs see them."""
import inspect
import pydoc

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.core import TensorType
from onemodel.registry import OpDef, Param, Sample, hookimpl


def _params(sig):
    return [(p.name, p.default) for p in sig.parameters.values()]


def test_linear_signature_and_help():
    sig = inspect.signature(om.ops.linear)
    assert _params(sig) == [("x", inspect.Parameter.empty), ("weight", inspect.Parameter.empty),
                            ("bias", None)]
    text = pydoc.render_doc(om.ops.linear, renderer=pydoc.plaintext)
    assert "linear(x, weight, bias=None)" in text
    assert om.registry.ops()["linear"].doc.split(".")[0] in text


def test_layer_norm_follows_its_positional_order():
    sig = inspect.signature(om.ops.layer_norm)
    assert [p.name for p in sig.parameters.values()] == ["x", "normalized_shape", "weight",
                                                         "bias", "eps"]
    assert sig.parameters["eps"].default == 1e-5
    assert "layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-05)" in repr(
        om.ops.layer_norm)


def test_every_op_signature_binds_like_the_op():
    """For every op: the signature accepts exactly the names bind accepts, with the record's
    defaults, and the docstring holds the record's doc and every param name."""
    for name, op in om.registry.ops().items():
        fn = getattr(om.ops, name)
        sig = inspect.signature(fn)
        names = [i.rstrip("?*") for i in op.inputs] + list(op.params)
        assert sorted(sig.parameters) == sorted(names), name
        for pname, p in op.params.items():
            want = inspect.Parameter.empty if p.required else p.default
            assert sig.parameters[pname].default == want, (name, pname)
        assert fn.__name__ == name and (op.doc.strip() or name) in fn.__doc__
        for pname in op.params:
            assert pname in fn.__doc__, (name, pname)


def test_sum_doc_mentions_dim():
    assert "'dim'" in om.ops.sum.__doc__ and "'keepdim'" in om.ops.sum.__doc__


@pytest.mark.parametrize("method", ["reshape", "sum", "relu", "add_", "transpose", "softmax",
                                    "any", "cast"])
def test_op_methods_live_on_the_class(method):
    assert method in dir(Tensor)
    fn = getattr(Tensor, method)
    assert method in Tensor.__dict__ and inspect.isfunction(fn)
    sig = inspect.signature(fn)
    assert list(sig.parameters)[0] == "self"
    op = fn.op
    assert op.doc.strip() in fn.__doc__
    expected = [n for n in ([i.rstrip("?*") for i in op.inputs] + list(op.params))][1:]
    assert sorted(list(sig.parameters)[1:]) == sorted(expected)


def test_help_of_tensor_lists_op_methods():
    text = pydoc.render_doc(Tensor, renderer=pydoc.plaintext)
    for m in ("reshape(self, shape)", "sum(self, axis=None, keepdims=False)", "relu(self)",
              "add_(self,", "float(self)"):
        assert m in text, m


def test_class_methods_work_like_instance_methods():
    x = Tensor.from_list([[1.0, -2.0], [3.0, -4.0]])
    np.testing.assert_array_equal(Tensor.relu(x).numpy(), [[1, 0], [3, 0]])
    np.testing.assert_array_equal(Tensor.sum(x, dim=0).numpy(), [4, -6])
    np.testing.assert_array_equal(x.reshape(4).numpy(), [1, -2, 3, -4])
    Tensor.add_(x, 1)
    np.testing.assert_array_equal(x.numpy(), [[2, -1], [4, -3]])


def _plugin(name):
    op = OpDef(name=name, inputs=("x",), params={"times": Param(kind="int", default=2)},
               kernel=lambda x, times=2: x * times,
               infer=lambda t, times=2: TensorType(t.dtype, t.shape),
               vjp=lambda ctx, g: (g * ctx.params["times"],),
               samples=lambda rng: [Sample(args=(np.ones(2),))], methods=(name,),
               doc="Multiply by times.")

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    return Plugin()


def test_a_plugin_registered_at_run_time_adds_and_removes_a_class_method():
    plugin = _plugin("scale_by_test")
    x = Tensor.from_list([1.0, 2.0])
    assert not hasattr(Tensor, "scale_by_test")
    om.registry.register(plugin, "scale-test")
    try:
        assert "scale_by_test" in dir(Tensor)
        assert str(inspect.signature(Tensor.scale_by_test)) == "(self, times=2)"
        assert "Multiply by times." in Tensor.scale_by_test.__doc__
        np.testing.assert_array_equal(x.scale_by_test(times=3).numpy(), [3, 6])
        assert str(inspect.signature(om.ops.scale_by_test)) == "(x, times=2)"
    finally:
        om.registry.unregister("scale-test")
    with pytest.raises(AttributeError):
        x.scale_by_test()
    assert not hasattr(Tensor, "scale_by_test")


def test_hand_written_methods_win_over_op_methods():
    """A plugin may not replace Tensor's own methods (numpy, float, ...)."""
    plugin = _plugin("numpy")
    om.registry.register(plugin, "numpy-test")
    try:
        x = Tensor.zeros(DType.F32, 2)
        assert isinstance(x.numpy(), np.ndarray)
        assert Tensor.numpy.__qualname__ == "Tensor.numpy"
    finally:
        om.registry.unregister("numpy-test")
