"""The threaded backend (docs/guide/backends.md): same results as the numpy backend, safe from
many threads, buffers never shared by steps that can run at once, options checked."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import onemodel as om
from onemodel import DType
from onemodel.core.graph import GraphBuilder
from onemodel.core.interpreter import NodeExecutionError
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType
from onemodel.registry import OpDef, Sample, hookimpl

from . import session_models as models

B = Dim.symbol("batch")
#: every schedule the backend has: the automatic one, and the parallel plan forced everywhere
#: with every task handed off and every batch region split (the thresholds at zero)
FORCED = dict(schedule="parallel", handoff_flops=0, split_flops=0)

MODELS = {
    "mlp": lambda: models.mlp((32, 48, 24, 10)),
    "cnn": models.cnn,
    "cnn_bn": models.cnn_bn,
    "encoder": lambda: (models.encoder_layer(d=32, heads=4, ffn=64)[0], (6, 32)),
    "encoder_primitives": lambda: (models.encoder_layer(d=32, heads=4, ffn=64,
                                                        primitives=True)[0], (6, 32)),
    "deep": lambda: models.deep(n=12, width=16),
    "branches": lambda: models.branches(n=6, width=24),
}
_TRACED: dict = {}


def traced(name):
    if name not in _TRACED:
        fn, shape = MODELS[name]()
        _TRACED[name] = (models.trace(fn, shape), shape)
    return _TRACED[name]


def assert_close(got, ref):
    """Equal within 1e-6 relative (to the output's scale, for entries near zero)."""
    scale = float(np.max(np.abs(ref))) if ref.size else 1.0
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6 * max(scale, 1e-30))


@pytest.mark.parametrize("options", [{}, FORCED], ids=["auto", "forced-parallel"])
@pytest.mark.parametrize("batch", [2, 24])
@pytest.mark.parametrize("name", list(MODELS))
def test_equal_to_the_numpy_backend(name, batch, options):
    tr, shape = traced(name)
    x = {"input": models.feed(shape, batch)}
    ref = om.Session(tr, backend="numpy").run(x)["output"].numpy()
    with om.Session(tr, backend="threaded", threads=2, **options) as s:
        for _ in range(10):  # the adaptive plan goes round its candidates at first
            assert_close(s.run(x)["output"].numpy(), ref)


@pytest.mark.parametrize("name", list(MODELS))
def test_steps_that_can_run_at_once_never_share_a_buffer(name):
    tr, shape = traced(name)
    s = om.Session(tr, backend="threaded", threads=3, **FORCED)
    s.run({"input": models.feed(shape, 24)})
    check_no_shared_buffers(s._compiled.plan({"batch": 24}))


def check_no_shared_buffers(plan):
    """For two steps in tasks neither of which waits for the other, no slot one writes is
    touched by the other."""
    sched = plan.schedule
    task_of = {s: t.index for t in sched.tasks for s in t.steps}

    def slots(i, written):
        st = plan.steps[i]
        values = list(st.node.outputs) if written else [a for a in st.args if a] + list(
            st.node.outputs)
        return {plan.slot_of[r] for v in values for r in plan.roots.get(v, ())
                if r in plan.slot_of}

    n = len(plan.steps)
    for i in range(n):
        for j in range(n):
            ti, tj = task_of[i], task_of[j]
            if ti == tj or (sched.task_anc[ti] >> tj) & 1 or (sched.task_anc[tj] >> ti) & 1:
                continue
            shared = slots(i, True) & slots(j, False)
            assert not shared, (f"steps {plan.steps[i].node.describe()} and "
                                f"{plan.steps[j].node.describe()} may run at once but share "
                                f"slot(s) {shared}")


@pytest.fixture
def slow_op(registered):
    """``threaded_test_slow(x)``: sleeps (releasing the GIL, as BLAS does), then reads x."""

    def kernel(x):
        time.sleep(0.002)
        return x * 2.0

    op = OpDef(name="threaded_test_slow", inputs=("x",), kernel=kernel, infer=lambda x: x,
               vjp=None, samples=lambda rng: [Sample(args=(np.ones(2, np.float32),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered(Plugin(), "threaded-test-slow")
    return op


def many_branches(n=12):
    """x -> n branches of a = relu(x + k); b = slow(a); c = b * a (a is read again after the
    slow step); the branches summed. In node order, branch i+1's ``a`` would reuse branch i's
    buffer, which branch i still reads after its slow step when both run at once."""
    gb = GraphBuilder()
    gb.add_input("x", TensorType(DType.F32, (B, 8)))
    t = TensorType(DType.F32, (B, 8))
    outs = []
    for i in range(n):
        k = f"k{i}"
        gb.add_initializer(k, np.full((8,), float(i + 1), np.float32))
        s, = gb.add_node("add", ["x", k], [t])
        a, = gb.add_node("relu", [s.name], [t])
        b, = gb.add_node("threaded_test_slow", [a.name], [t])
        c, = gb.add_node("mul", [b.name, a.name], [t])
        outs.append(c.name)
    total = outs[0]
    for o in outs[1:]:
        total = gb.add_node("add", [total, o], [t])[0].name
    return gb.finish([("y", total)])


def test_parallel_liveness_with_many_branches(slow_op):
    graph = many_branches()
    x = {"x": models.feed((8,), 5)}
    ref = om.Session(graph, backend="numpy", optimization="none").run(x)["y"].numpy()
    seq = om.Session(graph, backend="threaded", optimization="none", schedule="sequential")
    par = om.Session(graph, backend="threaded", optimization="none", threads=4,
                     schedule="parallel", handoff_flops=0)
    for _ in range(5):
        assert_close(par.run(x)["y"].numpy(), ref)
    plan = par._compiled.plan({"batch": 5})
    assert len(plan.schedule.tasks) >= 12
    check_no_shared_buffers(plan)
    # the sequential plan reuses buffers across branches; the parallel one cannot
    seq.run(x)
    assert len(plan.slot_types) > len(seq._compiled.plan({"batch": 5}).slot_types)
    # and the branches do run at once: 12 slow steps of 2 ms on 4 threads take well under 24 ms
    t0 = time.perf_counter()
    par.run(x)
    assert time.perf_counter() - t0 < 0.020


def test_run_from_eight_threads_with_mixed_batch_sizes():
    tr, shape = traced("branches")
    sizes = [1, 3, 24, 64]
    feeds = {n: models.feed(shape, n, seed=n) for n in sizes}
    ref_session = om.Session(tr, backend="numpy")
    refs = {n: ref_session.run({"input": f})["output"].numpy() for n, f in feeds.items()}
    sessions = [om.Session(tr, backend="threaded", threads=2),
                om.Session(tr, backend="threaded", threads=3, **FORCED)]
    errors = []

    def worker(k):
        try:
            for i in range(50):
                n = sizes[(k + i) % len(sizes)]
                s = sessions[(k + i) % 2]
                out = s.run({"input": feeds[n]})["output"].numpy()
                assert_close(out, refs[n])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_threads_1_is_the_sequential_plan():
    tr, shape = traced("branches")
    x = {"input": models.feed(shape, 64)}
    ref = om.Session(tr, backend="numpy").run(x)["output"].numpy()
    s = om.Session(tr, backend="threaded", threads=1)
    assert_close(s.run(x)["output"].numpy(), ref)
    plan = s._compiled.plan({"batch": 64})
    assert plan.schedule_summary == "sequential: threads=1"
    assert "def run(feeds):" in s.plan_source(x)


@pytest.mark.parametrize("value", [0, -2, 1.5, "4", True])
def test_bad_threads_value_names_the_option(value):
    tr, _ = traced("mlp")
    with pytest.raises(om.OneModelError, match=r"threads must be a positive int, got"):
        om.Session(tr, backend="threaded", threads=value)


def test_other_bad_options():
    tr, _ = traced("mlp")
    with pytest.raises(om.OneModelError, match="schedule must be one of"):
        om.Session(tr, backend="threaded", schedule="fast")
    with pytest.raises(om.OneModelError, match="handoff_flops must be a number >= 0"):
        om.Session(tr, backend="threaded", handoff_flops=-1)
    with pytest.raises(om.OneModelError, match=r"rejected the options \['thread'\]"):
        om.Session(tr, backend="threaded", thread=2)


def test_small_or_chain_models_keep_the_sequential_plan():
    tr, shape = traced("deep")
    s = om.Session(tr, backend="threaded", threads=2)
    s.run({"input": models.feed(shape, 1)})
    plan = s._compiled.plan({"batch": 1})
    assert plan.schedule_summary.startswith("sequential:")
    assert "def run(feeds):" in plan.source


def test_large_branches_get_the_parallel_plan():
    tr, shape = traced_branches_large()
    s = om.Session(tr, backend="threaded", threads=2)
    x = {"input": models.feed(shape, 64)}
    s.run(x)
    plan = s._compiled.plan({"batch": 64})
    assert plan.schedule_summary.startswith("adaptive (sequential, parallel): "
                                            "9 task(s), 8 worth a hand-off")
    assert "def t0(feeds, vals):" in s.plan_source(x)


def traced_branches_large():
    if "branches_large" not in _TRACED:
        fn, shape = models.branches()
        _TRACED["branches_large"] = (models.trace(fn, shape), shape)
    return _TRACED["branches_large"]


def test_batch_regions_split_chains_into_row_pieces():
    tr, shape = traced("cnn")  # conv, pool, conv, pool, reshape, linear, linear
    s = om.Session(tr, backend="threaded", threads=2, **FORCED)
    x = {"input": models.feed(shape, 8)}
    src = s.plan_source(x)
    assert "1 batch region(s) (7 step(s) x 2 rows pieces)" in src.splitlines()[0]
    assert "_par((r0_0, r0_1,)" in src and "[0:4]" in src and "[4:8]" in src


def test_wide_linear_layers_split_by_output_features():
    fn, shape = models.mlp((64, 512, 10))
    tr = models.trace(fn, shape)
    x = {"input": models.feed(shape, 16)}
    ref = om.Session(tr).run(x)["output"].numpy()
    s = om.Session(tr, backend="threaded", threads=2, **FORCED)
    assert "1 step(s) x 2 cols pieces" in s.plan_source(x).splitlines()[0]
    assert_close(s.run(x)["output"].numpy(), ref)


def test_kernel_error_in_a_parallel_plan_names_the_node(registered):
    def kernel(x):
        raise RuntimeError("boom")

    op = OpDef(name="threaded_test_boom", inputs=("x",), kernel=kernel, infer=lambda x: x,
               vjp=None, samples=lambda rng: [Sample(args=(np.ones(2),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered(Plugin(), "threaded-test-boom")
    gb = GraphBuilder()
    gb.add_input("x", TensorType(DType.F32, (B,)))
    t = TensorType(DType.F32, (B,))
    a, = gb.add_node("relu", ["x"], [t])
    b, = gb.add_node("threaded_test_boom", ["x"], [t])
    c, = gb.add_node("add", [a.name, b.name], [t])
    s = om.Session(gb.finish([("y", c.name)]), backend="threaded", threads=2,
                   optimization="none", schedule="parallel", handoff_flops=0)
    with pytest.raises(NodeExecutionError, match=r"threaded_test_boom.*RuntimeError: boom"):
        s.run({"x": models.feed((), 3)})
    # the runner went back to the pool intact: the session still runs
    with pytest.raises(NodeExecutionError):
        s.run({"x": models.feed((), 3)})


def test_blas_is_capped_to_one_thread_while_a_parallel_plan_runs(registered):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    seen = []

    def kernel(x):
        seen.extend(i["num_threads"] for i in threadpoolctl.threadpool_info()
                    if i["user_api"] == "blas")
        return x

    op = OpDef(name="threaded_test_blas", inputs=("x",), kernel=kernel, infer=lambda x: x,
               vjp=None, samples=lambda rng: [Sample(args=(np.ones(2),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered(Plugin(), "threaded-test-blas")
    gb = GraphBuilder()
    gb.add_input("x", TensorType(DType.F32, (B,)))
    y, = gb.add_node("threaded_test_blas", ["x"], [TensorType(DType.F32, (B,))])
    s = om.Session(gb.finish([("y", y.name)]), backend="threaded", threads=2,
                   schedule="parallel")
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        before = [i["num_threads"] for i in threadpoolctl.threadpool_info()
                  if i["user_api"] == "blas"]
        s.run({"x": models.feed((), 3)})
        after = [i["num_threads"] for i in threadpoolctl.threadpool_info()
                 if i["user_api"] == "blas"]
    if not before:
        pytest.skip("no BLAS library found by threadpoolctl")
    assert set(seen) == {1}
    assert after == before


def test_outputs_own_their_memory():
    tr, shape = traced("branches")
    s = om.Session(tr, backend="threaded", threads=2, **FORCED)
    first = s.run({"input": models.feed(shape, 24, seed=1)})["output"].numpy()
    kept = first.copy()
    s.run({"input": models.feed(shape, 24, seed=2)})
    np.testing.assert_array_equal(first, kept)
