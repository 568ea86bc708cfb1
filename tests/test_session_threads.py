"""Sessions own their threads (docs/guide/sessions.md, "Threads"): the ``threads`` option on
every way of making a session, BLAS bounded inside ``run`` and given back after it, the
process-wide limiter under concurrent runs, bad values refused."""
from __future__ import annotations

import random
import threading

import numpy as np
import pytest

import onemodel as om
from onemodel import DType
from onemodel.core.graph import GraphBuilder
from onemodel.core.symbolic import Dim
from onemodel.core.threads import BLAS, BlasLimiter, cores
from onemodel.core.types import TensorType
from onemodel.registry import BackendDef, OpDef, Sample, hookimpl

from . import session_models as models

threadpoolctl = pytest.importorskip("threadpoolctl")


def blas_threads() -> list[int]:
    """What threadpoolctl reports for every BLAS library now (an independent reading)."""
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def needs_blas():
    if not blas_threads():
        pytest.skip("no BLAS library found by threadpoolctl")


@pytest.fixture(scope="module")
def traced():
    fn, shape = models.mlp((8, 16, 4))
    return models.trace(fn, shape)


@pytest.fixture
def probe(registered):
    """A graph ``y = threads_probe(x)`` whose kernel records the BLAS thread count it runs
    with (as threadpoolctl sees it)."""
    seen: list[list[int]] = []

    def kernel(x):
        seen.append(blas_threads())
        return x

    op = OpDef(name="threads_probe", inputs=("x",), kernel=kernel, infer=lambda x: x,
               vjp=None, samples=lambda rng: [Sample(args=(np.ones(2, np.float32),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered(Plugin(), "threads-probe")
    gb = GraphBuilder()
    t = TensorType(DType.F32, (Dim.symbol("batch"),))
    gb.add_input("x", t)
    y, = gb.add_node("threads_probe", ["x"], [t])
    return gb.finish([("y", y.name)]), seen


FEED = {"x": np.ones(3, np.float32)}


# -- the option ----------------------------------------------------------------------------------
def test_every_way_of_making_a_session_takes_threads(traced, tmp_path):
    assert traced.create_session().threads == 1                     # numpy: one thread
    assert traced.create_session(threads=2).threads == 2
    assert om.Session(traced, "numpy", "all", 3).threads == 3        # the API's position
    assert om.Session(traced, backend="threaded").threads == cores()  # threaded: every core
    assert traced.create_session(backend="threaded", threads=1).threads == 1
    path = tmp_path / "m.onemodel"
    traced.save(path)
    with om.load(path).create_session(threads=2) as s:
        assert s.threads == 2 and "threads=2" in repr(s)
        x = models.feed((8,), 5)
        np.testing.assert_allclose(s.run({"input": x})["output"].numpy(),
                                   traced.create_session().run({"input": x})["output"].numpy(),
                                   rtol=1e-6, atol=1e-6)
    assert om.Session(path, threads=2).threads == 2


@pytest.mark.parametrize("backend", ["numpy", "threaded"])
@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True, [2]])
def test_bad_threads_is_an_argument_error_naming_it(traced, backend, bad):
    with pytest.raises(om.ArgumentError, match=r"threads must be a positive int, got "
                                               + repr(bad).replace("[", r"\[")):
        traced.create_session(backend=backend, threads=bad)


def test_numpy_integers_are_accepted(traced):
    assert traced.create_session(threads=np.int64(2)).threads == 2


# -- BLAS inside and outside a run ---------------------------------------------------------------
@pytest.mark.parametrize("outside", [1, 2])
def test_numpy_backend_runs_with_one_blas_thread_and_gives_the_setting_back(probe, outside):
    needs_blas()
    graph, seen = probe
    s = om.Session(graph)
    with threadpoolctl.threadpool_limits(outside, user_api="blas"):
        before = blas_threads()
        s.run(FEED)
        assert blas_threads() == before          # eager code after a run: unchanged
    assert seen == [[1] * len(before)]


def test_threads_n_lets_blas_use_n_threads_at_most_the_cores(probe):
    needs_blas()
    graph, seen = probe
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        om.Session(graph, threads=2).run(FEED)
        om.Session(graph, threads=64).run(FEED)
        assert blas_threads() == [1] * len(blas_threads())
    assert seen[0][0] == min(2, cores()) and seen[1][0] == cores()


def test_threaded_backend_holds_blas_to_one_thread_on_every_plan(probe):
    needs_blas()
    graph, seen = probe
    for schedule in ("auto", "sequential", "parallel"):
        om.Session(graph, backend="threaded", threads=2, schedule=schedule).run(FEED)
    assert {n for row in seen for n in row} == {1}


def test_runs_on_another_thread_are_bounded_too(probe):
    """threadpoolctl's public setter does nothing on any thread but the first that used it;
    the limiter must bound runs on every thread."""
    needs_blas()
    graph, seen = probe
    lib = [c for c in threadpoolctl.ThreadpoolController().lib_controllers
           if c.user_api == "blas"][0]
    before = lib.num_threads
    lib.set_num_threads(2)  # this (main) thread now controls the library for threadpoolctl
    try:
        s = om.Session(graph)
        th = threading.Thread(target=s.run, args=(FEED,))
        th.start()
        th.join()
        assert seen == [[1] * len(seen[0])]
        assert lib.num_threads == 2
    finally:
        lib.set_num_threads(before)
        clear = getattr(type(lib), "clear_controlling_thread", None)  # threadpoolctl >= 3.6
        if clear is not None:
            clear(force=True)


def test_a_backend_that_says_nothing_about_threads_is_bounded_by_the_session(probe, registered):
    """A third-party backend with no ``threads`` attribute: the session limits BLAS itself."""
    needs_blas()
    graph, seen = probe

    class Compiled:
        def run(self, feeds, env, output_names):
            return {"y": om.ops.threads_probe(om.Tensor.from_numpy(feeds["x"])).numpy()}

    class Plain:
        def __init__(self, **options):
            self.options = options

        def compile(self, graph):
            return Compiled()

    class Plugin:
        @hookimpl
        def onemodel_backends(self):
            return (BackendDef(name="threads_plain", create=lambda **o: Plain(**o)),)

    registered(Plugin(), "threads-plain")
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        s = om.Session(graph, backend="threads_plain")
        assert s.threads == 1
        s.run(FEED)
        s2 = om.Session(graph, backend="threads_plain", threads=2)
        assert s2.threads == 2
        s2.run(FEED)
    assert seen[0][0] == 1 and seen[1][0] == min(2, cores())


# -- the process-wide limiter --------------------------------------------------------------------
class FakeLib:
    """A BLAS library as the limiter sees it, counting the calls that change it."""

    def __init__(self, n):
        self.n, self.sets = n, 0
        self.name = "fake"

    def get(self):
        return self.n

    def set(self, n):
        self.n, self.sets = n, self.sets + 1


def limiter(n=8):
    lib = FakeLib(n)
    b = BlasLimiter()
    b._libs = [lib]
    return b, lib


def enter(b, n):
    token = object()
    b.enter(n, token)
    return token


def test_limiter_takes_the_smallest_request_in_flight_and_restores(monkeypatch):
    monkeypatch.setattr("onemodel.core.threads.cores", lambda: 16)
    b, lib = limiter(8)
    t4 = enter(b, 4)
    assert lib.n == 4
    t2 = enter(b, 2)
    assert lib.n == 2                 # the stricter run wins while both are in flight
    t6 = enter(b, 6)
    assert lib.n == 2
    b.exit(t2)
    assert lib.n == 4
    b.exit(t4)
    assert lib.n == 6
    b.exit(t6)
    assert lib.n == 8 and b.limit == 0  # the setting found first is back
    b.exit(t6)                          # a second exit of one token changes nothing
    assert lib.n == 8


def test_limiter_touches_nothing_when_blas_is_already_there():
    b, lib = limiter(1)
    for _ in range(5):
        b.exit(enter(b, 1))
    assert lib.sets == 0


def test_limiter_caps_requests_at_the_cores(monkeypatch):
    monkeypatch.setattr("onemodel.core.threads.cores", lambda: 2)
    b, lib = limiter(1)
    t = enter(b, 64)
    assert lib.n == 2
    b.exit(t)
    assert lib.n == 1


def test_limiter_under_concurrent_runs_never_exceeds_any_request_in_flight():
    """Eight threads enter and leave at random; whenever a thread is inside, the library's
    setting is at most what that thread asked for; afterwards the original is back."""
    b, lib = limiter(8)
    errors = []

    def work(seed):
        rng = random.Random(seed)
        for _ in range(300):
            n = rng.randint(1, 8)
            t = object()
            try:
                b.enter(n, t)
                if lib.n > min(n, cores()):
                    errors.append((n, lib.n))
            finally:
                b.exit(t)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert lib.n == 8 and b.limit == 0


class Interrupted(BaseException):
    pass


class InterruptedLib(FakeLib):
    """Raises (as a KeyboardInterrupt would) right after its ``fail_at``-th change."""

    def __init__(self, n, fail_at):
        super().__init__(n)
        self.fail_at = fail_at

    def set(self, n):
        super().set(n)
        if self.sets == self.fail_at:
            raise Interrupted


@pytest.mark.parametrize("fail_at", [1, 2, 3, 4])
def test_an_interrupt_inside_the_limiter_leaves_blas_as_it_was(fail_at):
    """Ctrl-C may land inside enter or exit themselves: the setting still comes back, and the
    limiter is ready for the next run (a session's run calls them as CompiledGraph.run does)."""
    b = BlasLimiter()
    lib = InterruptedLib(8, fail_at)
    b._libs = [lib]
    b._cores = 16

    def run(n):
        token = object()
        try:
            b.enter(n, token)
            b_inside = object()
            try:
                b.enter(n - 1, b_inside)      # a stricter run beside it
            finally:
                b.exit(b_inside)
        finally:
            b.exit(token)

    # the library changes 4 times: 3 (enter), 2 (the stricter run), 3 (it leaves), 8 (back)
    with pytest.raises(Interrupted):
        run(3)
    assert lib.n == 8 and b.limit == 0 and not b._active
    run(3)                                   # the next run limits and restores as usual
    assert lib.n == 8 and b.limit == 0


def test_real_blas_is_given_back_after_concurrent_sessions(traced):
    needs_blas()
    x = {"input": models.feed((8,), 16)}
    sessions = [traced.create_session(), traced.create_session(threads=2),
                traced.create_session(backend="threaded")]
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        before = blas_threads()

        def work(s):
            for _ in range(100):
                s.run(x)

        threads = [threading.Thread(target=work, args=(s,)) for s in sessions for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert blas_threads() == before
    assert BLAS.limit == 0
