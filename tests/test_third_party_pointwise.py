"""A third-party pointwise op, registered at run time, is first-class: fused with built-in
pointwise neighbours, split by the threaded backend, costed, and run by every backend, with no
change to the core. And random elementwise DAGs agree at every level on every backend."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel.registry import OpDef, OpTraits, Pointwise, Sample, hookimpl


def _hardtanh(x, limit=1.0):
    return np.clip(x, -limit, limit)


HARDTANH = OpDef(
    name="softclamp", inputs=("x",), params={"limit": om.registry.Param(kind="float", default=1.0)},
    kernel=_hardtanh, infer=lambda x, limit=1.0: x,
    vjp=lambda ctx, g: (g * (np.abs(ctx.inputs[0]) < ctx.params["limit"]),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((3, 4)),), params={"limit": 0.5})],
    traits=OpTraits(pointwise=Pointwise(formula="np.minimum(np.maximum(x, -limit), limit)")),
    doc="x clipped to [-limit, limit]")


class Plugin:
    @hookimpl
    def onemodel_ops(self):
        return (HARDTANH,)


@pytest.fixture
def third_party():
    name = om.registry.register(Plugin(), name="softclamp-plugin")
    try:
        yield
    finally:
        om.registry.unregister(name)


def _model(x):
    return om.ops.softclamp(x * 2.0 + 0.5, limit=1.5).relu() * 3.0


def test_fused_split_costed_and_run_everywhere(third_party):
    rng = np.random.default_rng(0)
    ex = om.Tensor.from_numpy(rng.standard_normal((64, 256)).astype(np.float32))
    traced = om.trace(_model, ex, "batch", None)
    x = rng.standard_normal((512, 256)).astype(np.float32)
    want = _model(om.Tensor.from_numpy(x)).numpy()
    with traced.create_session() as s:
        chains = [n for n in s.optimized_graph.nodes if n.op == "elementwise_chain"]
        assert len(s.optimized_graph.nodes) == 1 and len(chains) == 1
        assert [st[0] for st in chains[0].params["steps"]] == ["mul", "add", "softclamp", "relu",
                                                               "mul"]
    from onemodel_backend_threaded.costs import ELEM, node_cost
    t = om.core.types.TensorType(om.DType.F32, (512, 256))
    cost = node_cost("softclamp", [t], [t], {"limit": 1.5})
    assert cost == ELEM * 512 * 256 * 3  # its formula: maximum, -limit, minimum
    for backend in om.backends():
        with traced.create_session(backend=backend) as s:
            np.testing.assert_allclose(s.run({"input": x})["output"].numpy(), want,
                                       rtol=1e-6, atol=1e-6, err_msg=backend)
    forced = dict(handoff_flops=0, split_flops=0)
    with traced.create_session(backend="threaded", threads=2, **forced) as s:
        src = s.plan_source({"input": x})
        assert "batch region(s) (1 step(s) x 2 rows pieces)" in src.splitlines()[0]
        np.testing.assert_allclose(s.run({"input": x})["output"].numpy(), want, rtol=1e-6)


def test_unfused_third_party_op_alone_runs(third_party):
    ex = om.Tensor.from_list([[-3.0, 0.2], [4.0, -0.7], [0.5, 9.0]])
    traced = om.trace(lambda x: om.ops.softclamp(x, limit=1.0), ex, "batch", None)
    for backend in om.backends():
        with traced.create_session(backend=backend) as s:
            np.testing.assert_allclose(s.run({"input": ex})["output"].numpy(),
                                       [[-1.0, 0.2], [1.0, -0.7], [0.5, 1.0]])


# -- random elementwise DAGs: every level, every backend ----------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

UNARY = ("relu", "tanh", "sigmoid", "neg", "abs", "exp_small")
BINARY = ("add", "sub", "mul", "maximum", "minimum")


def _apply(kind, a, b=None):
    if kind == "exp_small":
        return (a * 0.1).exp()
    if b is None:
        return getattr(a, kind)() if kind != "neg" else -a
    return {"add": a + b, "sub": a - b, "mul": a * b, "maximum": om.ops.maximum(a, b),
            "minimum": om.ops.minimum(a, b)}[kind]


@st.composite
def dags(draw):
    """A program over x: each step reads one or two earlier values (fan-out: a value read many
    times; fan-in: binary steps; shared subexpressions: the same step drawn twice), or a
    constant; the output sums the last few values."""
    steps = []
    for k in range(draw(st.integers(2, 9))):
        if draw(st.booleans()):
            steps.append(("u", draw(st.sampled_from(UNARY)), draw(st.integers(0, k)), None))
        else:
            other = draw(st.one_of(st.integers(0, k), st.floats(-2, 2).map(lambda f: round(f, 2))))
            steps.append(("b", draw(st.sampled_from(BINARY)), draw(st.integers(0, k)), other))
    return steps, draw(st.integers(1, 3))


def _program(steps, outs):
    def fn(x):
        vals = [x]
        for kind, op, i, other in steps:
            if kind == "u":
                vals.append(_apply(op, vals[i]))
            else:
                b = vals[other] if isinstance(other, int) else other
                vals.append(_apply(op, vals[i], b))
        total = vals[-1]
        for v in vals[-outs:-1]:
            total = total + v
        return total
    return fn


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags())
def test_random_elementwise_dags_agree_everywhere(dag):
    steps, outs = dag
    fn = _program(steps, outs)
    rng = np.random.default_rng(1)
    ex = om.Tensor.from_numpy(rng.standard_normal((3, 5)).astype(np.float32))
    traced = om.trace(fn, ex, "batch", None)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    want = fn(om.Tensor.from_numpy(x)).numpy()
    for backend in om.backends():
        for level in ("none", "basic", "all"):
            with traced.create_session(backend=backend, optimization=level) as s:
                got = s.run({"input": x})["output"].numpy()
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-5,
                                       err_msg=f"{backend} at {level}: {steps}")
