"""The compiled backend against the numpy backend (the reference) on every session model, at
several batch sizes and on both copies of the kernels; NaN/inf; the numpy fallback; third-party
pointwise ops compiled from their formula; errors naming the node.

Tolerance: rtol 1e-4, atol 1e-5 against the numpy backend (float32; the kernels sum in another
order and use FMA; exp, tanh and erf are polynomial approximations within a few ulps).
"""
from __future__ import annotations

import contextlib
import math

import attrs
import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.core.graph import GraphBuilder
from onemodel.core.interpreter import NodeExecutionError
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType
from onemodel.registry import OpDef, OpTraits, Param, Pointwise, Sample, hookimpl
from onemodel_backend_compiled import _native
from onemodel_backend_compiled.plan import NativePlan
from onemodel_backend_compiled.rules import RULES
from onemodel.testing import models
from onemodel.testing.numerics import assert_specials_then_close

RTOL, ATOL = 1e-4, 1e-5
MODELS = {
    "mlp": lambda: (*models.mlp(), ("batch",)),
    "cnn": lambda: (*models.cnn(), ("batch",)),
    "cnn_bn": lambda: (*models.cnn_bn(), ("batch",)),
    "deep": lambda: (*models.deep(n=12), ("batch",)),
    "branches": lambda: (*models.branches(n=3, width=40), ("batch",)),
    "transformer": lambda: (models.encoder_layer(d=32, heads=4, ffn=64)[0], (8, 32), ("batch",)),
    "transformer_primitives": lambda: (
        models.encoder_layer(d=32, heads=2, ffn=48, primitives=True)[0], (5, 32), ("batch",)),
}
_TRACED: dict = {}


def _traced(name):
    if name not in _TRACED:
        fn, shape, axes = MODELS[name]()
        _TRACED[name] = (shape, models.trace(fn, shape, axes=axes))
    return _TRACED[name]


def _both(traced, feeds, level="all"):
    ref = om.Session(traced, backend="numpy", optimization=level).run(feeds)
    got = om.Session(traced, backend="compiled", optimization=level).run(feeds)
    return ref, got


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("level", ["all", "none"])
def test_models_match_numpy(name, level, isa):
    shape, traced = _traced(name)
    for batch in (1, 2, 7):
        feeds = {"input": models.feed(shape, batch, seed=batch)}
        ref, got = _both(traced, feeds, level)
        for k in ref:
            np.testing.assert_allclose(got[k].numpy(), ref[k].numpy(), rtol=RTOL, atol=ATOL,
                                       err_msg=f"{name} b{batch} {level} {isa}")


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "deep", "branches"])
def test_models_run_natively(name):
    """Every node of the benchmark models has a native lowering (no numpy step)."""
    shape, traced = _traced(name)
    s = om.Session(traced, backend="compiled")
    src = s.plan_source({"input": models.feed(shape, 2)})
    assert "0 on numpy" in src.splitlines()[0], src
    assert "numpy:" not in src


def test_new_batch_size_is_a_new_lowering_only():
    shape, traced = _traced("mlp")
    s = om.Session(traced, backend="compiled")
    ref = om.Session(traced, backend="numpy")
    for b in (1, 5, 64, 3, 5):
        x = {"input": models.feed(shape, b)}
        np.testing.assert_allclose(s.run(x)["output"].numpy(), ref.run(x)["output"].numpy(),
                                   rtol=RTOL, atol=ATOL)


def _trace1(fn, x, *axes):
    return om.trace(fn, Tensor.from_numpy(x), *axes)


def test_nan_and_inf_propagate_as_in_numpy(isa):
    w = Tensor.from_numpy(np.eye(4, dtype=np.float32))

    def fn(x):
        h = om.ops.linear(x, w)
        a = om.ops.relu(h) + om.ops.sigmoid(h) + om.ops.tanh(h) * om.ops.exp(h * 0.01)
        return om.ops.softmax(a, axis=-1), om.ops.gelu(h), om.ops.maximum(h, h * 0.5)

    x = np.array([[np.nan, 1.0, -2.0, 0.5], [np.inf, -np.inf, 3.0, 0.0],
                  [100.0, -100.0, 80.0, -80.0]], np.float32)
    traced = _trace1(fn, np.ones((3, 4), np.float32), "batch", None)
    ref, got = _both(traced, {"input": x})
    for k in ref:
        assert_specials_then_close(got[k].numpy(), ref[k].numpy(), RTOL, ATOL, k)


def test_math_kernels_match_numpy_over_a_wide_range(isa):
    xs = np.concatenate([np.linspace(-120, 120, 2001), np.linspace(-3, 3, 997),
                         [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30]]).astype(np.float32)

    def fn(x):
        return om.ops.exp(x), om.ops.tanh(x), om.ops.sigmoid(x), om.ops.erf(x)

    traced = _trace1(fn, xs[:4].copy(), "n")
    ref, got = _both(traced, {"input": xs}, "none")
    for k in ref:
        r, g = ref[k].numpy(), got[k].numpy()
        np.testing.assert_array_equal(np.isnan(g), np.isnan(r), err_msg=k)
        np.testing.assert_allclose(g, r, rtol=3e-6, atol=1e-6, err_msg=k)


def test_op_without_lowering_runs_on_numpy_between_native_segments():
    w = Tensor.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)

    def fn(x):
        h = om.ops.linear(x, w)                                    # native
        m = om.ops.tril(h)                                         # tril: no lowering
        return om.ops.relu(om.ops.linear(m, Tensor.from_numpy(np.ones((2, 3), np.float32))))

    traced = _trace1(fn, np.ones((2, 4), np.float32), "batch", None)
    x = {"input": np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)}
    ref, got = _both(traced, x)
    np.testing.assert_allclose(got["output"].numpy(), ref["output"].numpy(), rtol=RTOL,
                               atol=ATOL)
    src = om.Session(traced, backend="compiled").plan_source(x)
    assert "numpy: tril" in src and src.count("native segment:") >= 2, src


@contextlib.contextmanager
def _plugin(op, name):
    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered = om.registry.register(Plugin(), name)
    try:
        yield op
    finally:
        om.registry.unregister(registered)


@pytest.fixture
def softplus_op():
    """A third-party pointwise op registered at run time: only a kernel and a formula."""
    def kernel(x, beta=1.0):
        return (np.log1p(np.exp(-np.abs(beta * x))) + np.maximum(beta * x, 0)) / beta

    op = OpDef(name="my_softplus", inputs=("x",),
               params={"beta": Param(kind="float", default=1.0)},
               kernel=kernel, infer=lambda x, beta=1.0: x, vjp=None,
               samples=lambda rng: [Sample(args=(rng.standard_normal(3),), grad=False)],
               traits=OpTraits(pointwise=Pointwise(
                   formula="(np.log(1 + np.exp(-np.abs(beta * x))) + np.maximum(beta * x, 0)) "
                           "/ beta")))
    with _plugin(op, "compiled-test-softplus"):
        yield op


def test_third_party_pointwise_op_compiles_from_its_formula(softplus_op, isa):
    assert "my_softplus" not in RULES  # nothing about it in the backend
    w = Tensor.from_numpy(np.eye(3, dtype=np.float32))

    def fn(x):
        return om.ops.my_softplus(om.ops.linear(x, w), beta=2.0)

    traced = _trace1(fn, np.ones((2, 3), np.float32), "batch", None)
    x = {"input": np.array([[-30, 0.1, 4], [20, -1, 0.5]], np.float32)}
    ref, got = _both(traced, x, "none")
    np.testing.assert_allclose(got["output"].numpy(), ref["output"].numpy(), rtol=RTOL,
                               atol=ATOL)
    src = om.Session(traced, backend="compiled", optimization="none").plan_source(x)
    assert "pointwise   my_softplus" in src and "numpy:" not in src, src


def test_fused_chain_with_third_party_op_is_one_loop(softplus_op):
    def fn(x):
        return om.ops.tanh(om.ops.my_softplus(x * 3.0 + 1.0, beta=1.0))

    traced = _trace1(fn, np.ones((2, 3), np.float32), "batch", None)
    x = {"input": np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)}
    ref, got = _both(traced, x)
    np.testing.assert_allclose(got["output"].numpy(), ref["output"].numpy(), rtol=RTOL,
                               atol=ATOL)
    src = om.Session(traced, backend="compiled").plan_source(x)
    assert "numpy:" not in src, src


def test_native_failure_names_the_node():
    shape, traced = _traced("mlp")
    s = om.Session(traced, backend="compiled")
    feeds = {"input": models.feed(shape, 2)}
    s.run(feeds)
    plan = s._compiled.plan({"batch": 2})
    seg = plan.segments[0]
    bad = seg.program.copy()
    # corrupt the second instruction's opcode: the executor stops there
    first_len = int(bad[1])
    bad[first_len] = 12345
    prog = attrs.evolve(plan.program, segments=[attrs.evolve(seg, program=bad),
                                                *plan.program.segments[1:]])
    ng = s._compiled
    broken = NativePlan(prog, ng.graph, ng.ops, ng.weights)
    with pytest.raises(om.errors.OneModelError) as err:
        broken.run(feeds)
    assert "while executing node" in str(err.value)
    assert seg.nodes[1].outputs[0] in str(err.value)


def test_numpy_kernel_error_in_fallback_names_the_node():
    def kernel(x):
        raise RuntimeError("boom")

    op = OpDef(name="compiled_test_boom", inputs=("x",), kernel=kernel, infer=lambda x: x,
               vjp=None, samples=lambda rng: [Sample(args=(np.ones(2),))])
    with _plugin(op, "compiled-test-boom"):
        gb = GraphBuilder()
        t = TensorType(om.DType.F32, (Dim.symbol("batch"),))
        gb.add_input("x", t)
        a, = gb.add_node("relu", ["x"], [t])
        b, = gb.add_node("compiled_test_boom", [a.name], [t])
        c, = gb.add_node("tanh", [b.name], [t])
        s = om.Session(gb.finish([("y", c.name)]), backend="compiled", optimization="none")
        with pytest.raises(NodeExecutionError, match=r"compiled_test_boom.*RuntimeError: boom"):
            s.run({"x": np.ones(3, np.float32)})


def test_options_are_checked():
    shape, traced = _traced("mlp")
    with pytest.raises(om.errors.OneModelError, match="max_plans"):
        om.Session(traced, backend="compiled", max_plans=0)
    s = om.Session(traced, backend="compiled", threads=2)
    assert s.run({"input": models.feed(shape, 1)})["output"].shape == (1, 10)


def test_kernel_copies_agree():
    """The AVX2 and the portable copy give the same results (within float rounding)."""
    if _native.isa() == "generic":
        pytest.skip("this CPU runs only the portable copy")
    shape, traced = _traced("transformer")
    feeds = {"input": models.feed(shape, 3)}
    s = om.Session(traced, backend="compiled")
    a = s.run(feeds)["output"].numpy()
    before = _native.isa()
    _native.use("generic")
    try:
        b = s.run(feeds)["output"].numpy()
    finally:
        _native.use(before)
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    assert math.isfinite(float(np.abs(a).sum()))


def test_values_of_the_shape_alone_are_folded_per_signature():
    """Position ids over a symbolic sequence length (arange, and what is built from them) are
    computed once per shape signature, not per run, and a new length gets its own (the weight
    block is shared by the session's signatures)."""
    def fn(x):
        pos = om.ops.arange(x.shape[1], dtype=om.DType.F32)
        return x * om.ops.unsqueeze(pos * 2.0 + 1.0, 0)

    traced = om.trace(fn, Tensor.from_numpy(np.ones((3, 5), np.float32)), "batch", "seq")
    session = om.Session(traced, backend="compiled")
    rng = np.random.default_rng(0)
    for seq in (5, 7, 5, 9):
        x = rng.standard_normal((2, seq)).astype(np.float32)
        src = session.plan_source({"input": x})
        assert "0 on numpy" in src and "folded" in src, src
        np.testing.assert_array_equal(session.run({"input": x})["output"].numpy(),
                                      x * (np.arange(seq, dtype=np.float32) * 2 + 1))
