"""Interrupting the threaded backend: Ctrl-C (SIGINT) or any exception during ``run`` cancels
the run's pending work and waits for the kernels already running before ``run`` returns, so the
buffers of a cancelled run are never written while the next run uses them."""
from __future__ import annotations

import random
import signal
import threading
import time

import numpy as np
import pytest

import onemodel as om
from onemodel import DType
from onemodel.core.graph import GraphBuilder
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType
from onemodel.registry import OpDef, Sample, hookimpl

from . import session_models as models

pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="signals are delivered to the main thread only")

FORCED = dict(schedule="parallel", handoff_flops=0, split_flops=0)


class Timers:
    """``fire(after)`` sends SIGINT to the main thread from another thread ``after`` seconds
    from now; ``wait()`` waits until every one sent has been sent."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.main = threading.main_thread().ident

    def fire(self, after: float) -> None:
        def send():
            time.sleep(after)
            signal.pthread_kill(self.main, signal.SIGINT)

        th = threading.Thread(target=send)
        self.threads.append(th)  # before start: the signal may arrive before start returns
        th.start()

    def __call__(self, after: float) -> None:
        self.fire(after)

    def wait(self) -> None:
        for th in self.threads:
            th.join()


@pytest.fixture
def sigint():
    """SIGINT raises KeyboardInterrupt in the main thread during the test (as in a terminal)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timers = Timers()
    try:
        yield timers
    finally:
        timers.wait()
        signal.signal(signal.SIGINT, old)


def interrupt_runs(session, feeds, timers, times, rng, max_delay):
    """Run ``feeds`` in a loop until a SIGINT arrives, ``times`` times; returns how many
    arrived inside ``run``."""
    inside = 0
    for _ in range(times):
        in_run = False
        try:
            timers.fire(rng.uniform(0, max_delay))
            while True:
                in_run = True
                session.run(feeds)
                in_run = False
        except KeyboardInterrupt:
            inside += in_run
        timers.wait()
    return inside


@pytest.mark.parametrize("name,batch", [("branches", 64), ("cnn", 32)])
def test_sigint_during_runs_then_a_thousand_exact_runs(sigint, name, batch):
    """Branches (tasks on the pool) and a CNN (batch regions split into pieces): interrupted
    twenty times on one input, then 1,000 runs alternating two other inputs must give exactly
    what they gave before any interrupt."""
    fn, shape = {"branches": lambda: models.branches(n=8, width=96), "cnn": models.cnn}[name]()
    traced = models.trace(fn, shape)
    s = om.Session(traced, backend="threaded", threads=2, **FORCED)
    a, b, c = ({"input": models.feed(shape, batch, seed=k)} for k in (1, 2, 3))
    ref_b, ref_c = (s.run(f)["output"].numpy().copy() for f in (b, c))
    rng = random.Random(0)
    t0 = time.perf_counter()
    s.run(a)
    per_run = time.perf_counter() - t0
    inside = interrupt_runs(s, a, sigint, 20, rng, 3 * per_run)
    assert inside >= 10, "the interrupts should mostly land inside run"
    for i in range(1000):
        feeds, ref = (b, ref_b) if i % 2 else (c, ref_c)
        got = s.run(feeds)["output"].numpy()
        assert np.array_equal(got, ref), f"run {i} after the interrupts differs"


@pytest.fixture
def tracked_op(registered):
    """``interrupt_test_slow(x)``: sleeps 20 ms (releasing the GIL, as BLAS does), counting the
    kernels running now in ``state``."""
    state = {"running": 0}
    lock = threading.Lock()

    def kernel(x):
        with lock:
            state["running"] += 1
        try:
            time.sleep(0.02)  # on the main thread, SIGINT interrupts the sleep itself
        finally:
            with lock:
                state["running"] -= 1
        return x * 2.0

    op = OpDef(name="interrupt_test_slow", inputs=("x",), kernel=kernel, infer=lambda x: x,
               vjp=None, samples=lambda rng: [Sample(args=(np.ones(2, np.float32),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered(Plugin(), "interrupt-test-slow")
    return state


def slow_inputs(gb, n, t):
    """``x + k`` for k = 0 .. n-1: distinct inputs, so the passes cannot merge the slow nodes."""
    names = []
    for k in range(n):
        gb.add_initializer(f"k{k}", np.full((8,), float(k), np.float32))
        names.append(gb.add_node("add", ["x", f"k{k}"], [t])[0].name)
    return names


def slow_branches(n=4):
    """n branches ``slow(x + k)``, summed: 20 ms each, so 40 ms or more on two threads."""
    gb = GraphBuilder()
    t = TensorType(DType.F32, (Dim.symbol("batch"), 8))
    gb.add_input("x", t)
    outs = [gb.add_node("interrupt_test_slow", [a], [t])[0].name for a in slow_inputs(gb, n, t)]
    total = outs[0]
    for o in outs[1:]:
        total = gb.add_node("add", [total, o], [t])[0].name
    return gb.finish([("y", total)])


def test_run_returns_only_after_the_running_kernels_end(sigint, tracked_op):
    s = om.Session(slow_branches(), backend="threaded", threads=2, **FORCED)
    feeds = {"x": np.ones((3, 8), np.float32)}
    expected = 2.0 * (1 + 2 + 3 + 4)
    assert s.run(feeds)["y"].numpy()[0, 0] == expected
    for delay in (0.005, 0.015, 0.025):
        with pytest.raises(KeyboardInterrupt):
            sigint(delay)
            s.run(feeds)
        sigint.wait()
        # the kernel a worker was running has ended before run raised
        assert tracked_op["running"] == 0
    assert s.run(feeds)["y"].numpy()[0, 0] == expected


def test_an_error_on_a_worker_waits_for_the_other_kernels(registered, tracked_op):
    """A kernel failing on one thread cancels what is pending and waits for what runs."""
    def boom(x):
        time.sleep(0.005)
        raise RuntimeError("boom")

    op = OpDef(name="interrupt_test_boom", inputs=("x",), kernel=boom, infer=lambda x: x,
               vjp=None, samples=lambda rng: [Sample(args=(np.ones(2, np.float32),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered(Plugin(), "interrupt-test-boom")
    gb = GraphBuilder()
    t = TensorType(DType.F32, (Dim.symbol("batch"), 8))
    gb.add_input("x", t)
    slow = [gb.add_node("interrupt_test_slow", [a], [t])[0].name
            for a in slow_inputs(gb, 3, t)]
    bad, = gb.add_node("interrupt_test_boom", ["x"], [t])
    total = bad.name
    for o in slow:
        total = gb.add_node("add", [total, o], [t])[0].name
    s = om.Session(gb.finish([("y", total)]), backend="threaded", threads=3, **FORCED)
    for _ in range(3):
        with pytest.raises(om.OneModelError, match="interrupt_test_boom.*boom"):
            s.run({"x": np.ones((2, 8), np.float32)})
        assert tracked_op["running"] == 0


@pytest.mark.parametrize("backend", ["numpy", "threaded"])
def test_an_interrupted_run_gives_blas_back(sigint, tracked_op, backend):
    """The BLAS limit a run set is lifted however the run ends."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from onemodel.core.threads import BLAS

    def blas():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas"]

    options = FORCED if backend == "threaded" else {}
    s = om.Session(slow_branches(), backend=backend, threads=2 if backend == "threaded" else 1,
                   **options)
    feeds = {"x": np.ones((3, 8), np.float32)}
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        before = blas()
        for delay in (0.005, 0.025):
            with pytest.raises(KeyboardInterrupt):
                sigint(delay)
                s.run(feeds)
            sigint.wait()
            assert blas() == before and BLAS.limit == 0
