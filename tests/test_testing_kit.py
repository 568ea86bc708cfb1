"""onemodel.testing, the kit for op and backend authors: it passes good records and catches each
kind of broken promise (kernel, inference, gradient, backend kernel), naming op, sample and check."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import testing
from onemodel.core import TensorType
from onemodel.registry import (KernelDef, OpDef, OpTraits, Param, Pointwise, Sample,
                               hookimpl)


def _cube_vjp(ctx, g):
    (x,) = ctx.inputs
    return (g * 3 * x ** 2,)


def _cube(**kw):
    """A third party's op: x**3 * scale, with its own samples."""
    fields = dict(name="kit_cube", inputs=("x",), params={"scale": Param(kind="float", default=1.0)},
                  kernel=lambda x, scale: x ** 3 * scale,
                  infer=lambda t, scale: TensorType(t.dtype, t.shape),
                  vjp=lambda ctx, g: tuple(v * ctx.params["scale"] for v in _cube_vjp(ctx, g)),
                  samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),), name="plain"),
                                       Sample(args=(rng.standard_normal(4),),
                                              params={"scale": 2.5}, name="scaled")])
    fields.update(kw)
    return OpDef(**fields)


def _reference(x, scale=1.0):
    return np.power(x, 3) * scale


def test_a_good_record_passes_every_check_and_is_unregistered_afterwards():
    report = testing.check_op(_cube(), reference=_reference)
    assert {c.check for c in report.passed} == {"reference", "inference", "gradient", "trace",
                                                "sessions"}
    # not pointwise, no epilogue and no ONNX mapping: skipped, and the report says why
    assert [c.check for c in report.skipped] == ["formula", "epilogue", "onnx"] * 2
    assert "no ONNX export mapping" in str(report)
    assert "kit_cube" not in om.registry.ops()


def _tripled(kernel_factor: float, formula: str = "x * 3"):
    """A pointwise op whose formula may disagree with its kernel (x*3 beside x*2)."""
    return OpDef(name="kit_tripled", inputs=("x",), kernel=lambda x: x * kernel_factor,
                 infer=lambda t: TensorType(t.dtype, t.shape), vjp=lambda ctx, g: (g * 3,),
                 traits=OpTraits(pointwise=Pointwise(formula=formula)),
                 samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),), name="plain")])


def test_a_formula_unlike_its_kernel_is_caught_in_float64_and_float32():
    """A formula x*3 beside a kernel x*2 passed every check with float64 samples and then gave
    wrong numbers on the compiled backend and at level 'all': the formula check names it."""
    assert {c.check for c in testing.check_op(_tripled(3.0)).passed} >= {"formula", "sessions"}
    with pytest.raises(testing.OpCheckError) as info:
        testing.check_op(_tripled(2.0), checks=["formula"])
    assert "formula kit_tripled[plain]" in str(info.value)
    assert "the formula against the kernel" in str(info.value)
    with pytest.raises(testing.OpCheckError) as info:
        testing.check_op(_tripled(2.0), checks=["sessions"])
    assert "at float32" in str(info.value)


def test_a_formula_wrong_only_in_float32_is_caught():
    """Right in float64, wrong in float32 (the precision float64 samples never miss)."""
    op = _tripled(3.0, "((x + 10000.0) - 10000.0) * 3")
    with pytest.raises(testing.OpCheckError, match="float32 inputs"):
        testing.check_op(op, checks=["formula"])


def _relu6(epilogue):
    """An activation that declares an epilogue, rightly ("clip" to [0, 6]) or not."""
    return OpDef(name="kit_relu6", inputs=("x",), kernel=lambda x: np.clip(x, 0.0, 6.0),
                 infer=lambda t: TensorType(t.dtype, t.shape), vjp=None,
                 traits=OpTraits(epilogue=epilogue),
                 samples=lambda rng: [Sample(args=(np.array([-3.0, 0.5, 4.0, 8.0, 12.0]),),
                                             grad=False, name="plain")])


def test_an_epilogue_unlike_its_kernel_is_caught():
    """A GEMM or convolution computes the declared epilogue where the op was: relu for a
    relu6 would go unnoticed until a model's values are wrong."""
    report = testing.check_op(_relu6(lambda p: ("clip", 0.0, 6.0)), checks=["epilogue"])
    assert [c.check for c in report.passed] == ["epilogue"]
    with pytest.raises(testing.OpCheckError, match=r"epilogue kit_relu6\[plain\]"):
        testing.check_op(_relu6("relu"), checks=["epilogue"])


def test_installed_ops_by_name():
    report = testing.check_op("relu", checks=["inference", "gradient", "sessions"])
    assert report.passed and all(c.check in ("inference", "gradient", "sessions")
                                 for c in report.checks)


@pytest.mark.parametrize("broken,check,says", [
    (dict(kernel=lambda x, scale: x ** 3 * scale + 1e-3), "reference", "Not equal to tolerance"),
    (dict(vjp=_cube_vjp), "gradient", "float input 0"),
    (dict(infer=lambda t, scale: TensorType(t.dtype, (7,))), "inference", "returned shape"),
])
def test_each_broken_promise_is_caught_and_named(broken, check, says):
    with pytest.raises(testing.OpCheckError) as info:
        testing.check_op(_cube(**broken), reference=_reference)
    text = str(info.value)
    assert f"{check} kit_cube[" in text and says in text, text
    assert isinstance(info.value, AssertionError) and info.value.failures


def test_a_wrong_backend_kernel_is_caught_by_the_session_check(registered):
    registered(_plugin(onemodel_kernels=[KernelDef(op="relu", backend="numpy", override=True,
                                                   kernel=lambda x: np.abs(x))]), "kit-bad-relu")
    with pytest.raises(testing.OpCheckError, match="sessions relu\\[.*on numpy at none"):
        testing.check_op("relu", checks=["sessions"], backends=["numpy"])
    with pytest.raises(testing.OpCheckError, match="model numpy mlp at none"):
        testing.check_backend("numpy", models=["mlp"], ops=False)
    with pytest.raises(testing.OpCheckError, match="sessions relu"):
        testing.check_backend("numpy", models=[], ops=["relu"])


def _plugin(**hooks):
    ns = {name: hookimpl(lambda self, recs=recs: recs) for name, recs in hooks.items()}
    return type("KitPlugin", (), ns)()


@pytest.mark.parametrize("backend", om.backends())
def test_every_backend_passes_the_standard_models(backend):
    report = testing.check_backend(backend, ops=False)
    assert {c.subject for c in report.checks} == {f"{backend} {m}" for m in testing.MODELS}


def test_bad_arguments_are_named():
    with pytest.raises(om.OneModelError, match="unknown backend 'nope'"):
        testing.check_backend("nope")
    with pytest.raises(om.OneModelError, match="unknown model"):
        testing.check_backend("numpy", models=["resnet"])
    with pytest.raises(om.ArgumentError, match="unknown check"):
        testing.check_op("relu", checks=["speed"])
    with pytest.raises(om.ArgumentError, match="another record named 'relu' is installed"):
        testing.check_op(_cube(name="relu"))
    with pytest.raises(om.ArgumentError, match="expected an OpDef or an op name"):
        testing.check_op(42)
    with pytest.raises(testing.OpCheckError, match="has no samples"):
        testing.check_op(_cube(samples=lambda rng: []))


def test_sample_helpers_follow_the_records_call_order():
    concat = om.registry.get_op("concat")
    s = Sample(args=([np.ones((1, 2)), np.zeros((2, 2))],), params={"axis": 0})
    (out,) = testing.call_sample(concat, s)
    assert out.shape == (3, 2)
    graph, feeds = testing.sample_graph(concat, s, constant=lambda j: j == 1)
    assert list(feeds) == ["in0"] and len(graph.initializers) == 1
    ln = om.registry.get_op("layer_norm")  # positional order differs from inputs-then-params
    s = Sample(args=(np.ones((2, 4)), np.full(4, 2.0), None), params={"normalized_shape": (4,)})
    inputs, params = testing.bind_sample(ln, s, np.float32)
    assert inputs[2] is None and inputs[0].dtype == om.DType.F32 and params["normalized_shape"] == (4,)
