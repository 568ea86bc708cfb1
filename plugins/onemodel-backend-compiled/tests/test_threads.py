"""Intra-op threads of the compiled backend (csrc/om_pool.h, csrc/om_split.h): a split never
changes a bit (threads 1, 2 and 3 give identical outputs, on both kernel copies), batch 1 never
splits, a run keeps at most ``threads`` threads busy, the pool's workers end with the session,
a forked child runs, runs from several Python threads at once stay correct, and an interrupted
run leaves the session usable."""
from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import onemodel as om
from onemodel.core import adaptive
from onemodel_backend_compiled import _native
from onemodel.testing import models

LINUX_TASKS = pytest.mark.skipif(not os.path.exists("/proc/self/task"),
                                 reason="needs Linux's /proc to count threads")


def _pointwise_model():
    def fn(x):
        return om.ops.tanh(x) * om.ops.sigmoid(x * 0.5 + 1.0) + om.ops.exp(-x * x)
    return fn, (5, 37, 29)


def _conv_zoo():
    """The convolution kernels' other paths: stride 2 (phase planes), a depthwise layer on a
    small map (8 channels in the lanes) and one on a larger map, a 1x1 layer on a small map (one
    GEMM), an activation in the epilogue, average and max pools of other shapes."""
    p, ops = models.Params(3), om.ops
    w1, b1 = p(8, 2, 3, 3, fan_in=18), p(8, fan_in=18)
    wa, ba = p(8, 1, 3, 3, fan_in=9), p(8, fan_in=9)
    wd, bd = p(8, 1, 3, 3, fan_in=9), p(8, fan_in=9)
    w2, b2 = p(24, 8, 1, 1, fan_in=8), p(24, fan_in=8)

    def fn(x):
        y = ops.relu(ops.conv2d(x, w1, b1, stride=2, padding=1))        # 8 x 9 x 9
        y = ops.hardswish(ops.conv2d(y, wa, ba, padding=1, groups=8))   # depthwise, 9 x 9
        y = ops.conv2d(y, wd, bd, stride=2, padding=1, groups=8)        # depthwise, 5 x 5
        y = ops.relu(ops.conv2d(y, w2, b2))                             # 1x1 on 25 positions
        y = ops.avg_pool2d(y, 3, stride=1, padding=1)
        return ops.max_pool2d(y, 3, stride=2, padding=1)
    return fn, (2, 17, 17)


def _small_maps_and_masks():
    """Paths other kernels brought: a 3x3 convolution on a 6x6 map as an implicit GEMM, a
    batch norm + ReLU applied inside the next convolution, a strided depthwise layer, and
    attention with a float mask, split by heads."""
    p, ops = models.Params(5), om.ops
    w1, b1 = p(16, 4, 3, 3, fan_in=36), p(16, fan_in=36)
    stats = [p(16, fan_in=1), p(16, fan_in=1) * p(16, fan_in=1) + 0.5, p(16, fan_in=1),
             p(16, fan_in=1)]
    w2, b2 = p(16, 16, 3, 3, fan_in=144), p(16, fan_in=144)
    wd = p(16, 1, 3, 3, fan_in=9)
    mask = p(9, 9, fan_in=1)

    def fn(x):
        y = ops.relu(ops.conv2d(x, w1, b1, padding=1))                  # GEMM path, 6 x 6
        y = ops.relu(ops.batch_norm(y, *stats))
        y = ops.conv2d(y, w2, b2, padding=1)                            # with the prologue
        y = ops.conv2d(y, wd, None, stride=2, padding=1, groups=16)     # depthwise, 3 x 3
        q = ops.reshape(y, (y.shape[0], 4, 4, 9))
        a = ops.scaled_dot_product_attention(ops.transpose(q, 2, 3), ops.transpose(q, 2, 3),
                                             ops.transpose(q, 2, 3), mask)
        return ops.tanh(a)
    return fn, (4, 6, 6)


def _numpy_step_model():
    """Native segments with a numpy step between them (``tril`` has no lowering): the run
    goes through the plan's general path, one native call per segment."""
    p, ops = models.Params(5), om.ops
    (w1, b1), (w2, b2) = p.linear(96, 128), p.linear(128, 48)

    def fn(x):
        h = ops.linear(x, w1, b1)
        h = ops.tril(h) - h * 0.1
        return ops.tanh(ops.linear(h, w2, b2))
    return fn, (96,)


MODELS = {
    "numpy_step": _numpy_step_model,
    "conv_zoo": _conv_zoo,
    "small_maps_and_masks": _small_maps_and_masks,
    "mlp": lambda: models.mlp(),
    "cnn": lambda: models.cnn(),
    "branches": lambda: models.branches(n=3, width=200),
    "transformer": lambda: (models.encoder_layer(d=64, heads=4, ffn=128)[0], (12, 64)),
    "transformer_primitives": lambda: (
        models.encoder_layer(d=32, heads=2, ffn=48, primitives=True)[0], (7, 32)),
    "pointwise": _pointwise_model,
}
#: models whose batch-64 run has instructions large enough for the measured rule to split
LARGE = {"mlp", "cnn", "branches", "transformer"}
_TRACED: dict = {}


def _traced(name):
    if name not in _TRACED:
        fn, shape = MODELS[name]()
        _TRACED[name] = (shape, models.trace(fn, shape))
    return _TRACED[name]


def _pool(session):
    return session._compiled.pool


@pytest.fixture(autouse=True)
def always_the_pool(monkeypatch):
    """Runs with a pool use it whatever the timings say (the adaptive choice, core/adaptive.py, would leave
    it on a busy machine); test_the_faster_way_is_chosen_by_timing tests the choice."""
    monkeypatch.setattr(adaptive, "MARGIN", float("inf"))


@pytest.fixture(params=["measured", "everything"])
def split_rule(request):
    """The measured rule, and every splittable instruction split as finely as it goes (small
    parts: row tiles, vector blocks and images at their boundaries)."""
    before = _native.split_min_work()
    if request.param == "everything":
        _native.split_min_work(0)
    yield request.param
    _native.split_min_work(before)


@pytest.mark.parametrize("name", list(MODELS))
def test_threads_give_the_same_bits(name, isa, split_rule):
    shape, traced = _traced(name)
    sessions = {t: om.Session(traced, backend="compiled", threads=t) for t in (1, 2, 3)}
    for batch in (1, 64):
        x = models.feed(shape, batch, seed=batch)
        x[0, ..., 0] = np.nan  # NaN and inf travel the same way on every thread
        x[-1, ..., -1] = np.inf
        feeds = {"input": x}
        jobs = {t: _pool(s).jobs for t, s in sessions.items() if t > 1}
        ref = sessions[1].run(feeds)["output"].numpy()
        for t in (2, 3):
            got = sessions[t].run(feeds)["output"].numpy()
            assert got.tobytes() == ref.tobytes(), f"{name} b{batch} threads={t} {isa}"
            split = _pool(sessions[t]).jobs - jobs[t]
            if batch == 1:
                assert split == 0, f"{name}: batch 1 must not split"
            elif split_rule == "everything" or name in LARGE:
                assert split > 0, f"{name} b{batch}: nothing was split over {t} threads"


def test_the_default_is_one_thread_and_no_pool():
    _, traced = _traced("mlp")
    s = om.Session(traced, backend="compiled")
    assert s.threads == 1 and _pool(s) is None


def test_bad_pool_arguments_are_refused():
    with pytest.raises(ValueError, match="threads must be at least 1, got 0"):
        _native.Pool(0)
    with pytest.raises(TypeError, match="pool must be a Pool"):
        _native.run(np.zeros(0, np.int64), (None, None), "two")
    assert _native.Pool(1000).threads == 64  # held to the most threads a pool has


def _tasks():
    return set(os.listdir("/proc/self/task"))


@LINUX_TASKS
def test_workers_start_when_needed_and_end_with_the_session():
    shape, traced = _traced("mlp")
    gc.collect()
    before = _tasks()
    s = om.Session(traced, backend="compiled", threads=3)
    s.run({"input": models.feed(shape, 1)})
    assert _tasks() == before, "batch 1 starts no worker"
    s.run({"input": models.feed(shape, 64)})
    assert len(_tasks() - before) == 2 and _pool(s).workers == 2
    del s
    gc.collect()
    deadline = time.monotonic() + 10
    while _tasks() - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _tasks() - before, "the pool's workers outlived the session"


BUSY_SCRIPT = r'''
import json, os, sys, threading, time
import numpy as np
import onemodel as om
from onemodel.testing import models
threads, callers = int(sys.argv[1]), int(sys.argv[2])
import threadpoolctl
fn, shape = models.mlp(sizes=(512, 1024, 1024, 10))
# tracing runs eager ops: at one BLAS thread, so that no OpenBLAS worker is left spinning
with threadpoolctl.threadpool_limits(1, user_api="blas"):
    traced = models.trace(fn, shape)
s = om.Session(traced, backend="compiled", threads=threads)
x = {"input": models.feed(shape, 256)}
s.run(x)
stop = threading.Event()
runs = [0] * callers

def work(i):
    while not stop.is_set():
        s.run(x)
        runs[i] += 1

workers = [threading.Thread(target=work, args=(i,)) for i in range(callers)]
for w in workers:
    w.start()
me = str(threading.get_native_id())
busy, tasks = [], []
end = time.perf_counter() + 2.0
while time.perf_counter() < end:
    n = 0
    ids = os.listdir("/proc/self/task")
    for tid in ids:
        if tid == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                n += f.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            pass
    busy.append(n)
    tasks.append(len(ids))
    time.sleep(0.0005)
stop.set()
for w in workers:
    w.join()
print(json.dumps({"busy": busy, "tasks": tasks, "runs": runs,
                  "workers": s._compiled.pool.workers, "jobs": s._compiled.pool.jobs}))
'''


@LINUX_TASKS
@pytest.mark.parametrize("threads,callers", [(2, 1), (3, 1), (2, 2)])
def test_busy_threads_stay_within_the_bound(threads, callers):
    """Runs in a loop from ``callers`` Python threads while another samples every thread's
    state (/proc, a fresh process): one run keeps at most ``threads`` busy (the caller and its
    workers; no worker spins between runs); a second run at once finds the pool held and runs
    on its own thread, so at most threads + callers - 1; threads - 1 workers, started once."""
    proc = subprocess.run([sys.executable, "-c", BUSY_SCRIPT, str(threads), str(callers)],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert min(r["runs"]) > 2 and r["jobs"] > 0 and r["workers"] == threads - 1
    assert len(r["busy"]) > 100
    assert max(r["busy"]) <= threads + callers - 1, max(r["busy"])
    assert max(r["tasks"]) == min(r["tasks"]), "threads were started or ended during the runs"


def test_runs_from_four_python_threads_are_correct():
    shape, traced = _traced("transformer")
    s = om.Session(traced, backend="compiled", threads=2)
    one = om.Session(traced, backend="compiled", threads=1)
    feeds = [{"input": models.feed(shape, 32, seed=k)} for k in range(4)]
    refs = [one.run(f)["output"].numpy() for f in feeds]
    errors = []

    def work(i):
        try:
            for _ in range(15):
                got = s.run(feeds[i])["output"].numpy()
                if got.tobytes() != refs[i].tobytes():
                    errors.append(i)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))

    ths = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert not errors
    assert _pool(s).jobs > 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_a_session_whose_pool_was_started_before_fork():
    """Forked while another thread is inside a run (the pool held, its lock maybe taken): the
    child starts its own workers and gets the same bits."""
    shape, traced = _traced("cnn")
    s = om.Session(traced, backend="compiled", threads=2)
    x = {"input": models.feed(shape, 16)}
    ref = s.run(x)["output"].numpy()
    assert _pool(s).workers == 1
    stop = threading.Event()
    busy = threading.Thread(target=lambda: [s.run(x) for _ in iter(stop.is_set, True)])
    busy.start()
    try:
        time.sleep(0.05)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: no pytest, only os._exit
            code = 1
            try:
                os.close(r)
                ok = all(s.run(x)["output"].numpy().tobytes() == ref.tobytes()
                         for _ in range(3))
                os.write(w, f"{int(ok)} {_pool(s).jobs} {_pool(s).workers}".encode())
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        deadline = time.monotonic() + 60
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the forked child hung on the pool")
            time.sleep(0.01)
        reply = os.read(r, 100).decode().split()
        os.close(r)
    finally:
        stop.set()
        busy.join()
    assert os.waitstatus_to_exitcode(status) == 0
    ok, jobs, workers = map(int, reply)
    assert ok == 1 and jobs > 0 and workers == 1
    assert s.run(x)["output"].numpy().tobytes() == ref.tobytes()


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals are delivered to the main thread only")
def test_sigint_during_split_runs_leaves_the_session_usable():
    """Ctrl-C lands while runs are in the pool: the native run completes first (the GIL is
    released, the signal waits), the pool is handed back, and later runs are exact and split."""
    fn, shape = models.mlp(sizes=(512, 1024, 1024, 10))
    traced = models.trace(fn, shape)
    s = om.Session(traced, backend="compiled", threads=2)
    a, b = ({"input": models.feed(shape, 256, seed=k)} for k in (1, 2))
    ref = s.run(b)["output"].numpy().copy()
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    main = threading.main_thread().ident
    caught = 0

    def interrupt_after(delay, go):
        go.wait()  # not before the runs begin: a loaded machine starts threads late
        time.sleep(delay)
        signal.pthread_kill(main, signal.SIGINT)

    try:
        for k in range(8):
            go = threading.Event()
            killer = threading.Thread(target=interrupt_after, args=(0.002 + 0.003 * k, go))
            try:  # every point the signal may land on is inside: it is always caught here
                killer.start()
                go.set()
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    s.run(a)
            except KeyboardInterrupt:
                caught += 1
            killer.join()
    finally:
        signal.signal(signal.SIGINT, old)
    assert caught == 8
    jobs = _pool(s).jobs
    for _ in range(20):
        assert s.run(b)["output"].numpy().tobytes() == ref.tobytes()
    assert _pool(s).jobs > jobs, "the pool was left held by an interrupted run"


@pytest.mark.parametrize("margin,pool_runs", [(0.0, 2), (float("inf"), 30)])
def test_the_faster_way_is_chosen_by_timing(monkeypatch, margin, pool_runs):
    """After 2 x WARMUP runs alternating, the pool is used only when it was faster by the
    margin (0: never, inf: always), and one run in PROBE tries the other way again."""
    monkeypatch.setattr(adaptive, "MARGIN", margin)
    shape, traced = _traced("mlp")
    s = om.Session(traced, backend="compiled", threads=2)
    feeds = {"input": models.feed(shape, 64)}
    s.run(feeds)
    per_run = _pool(s).jobs
    assert per_run > 0
    for _ in range(2 * adaptive.WARMUP_ROUNDS - 1):
        s.run(feeds)
    assert _pool(s).jobs == per_run * adaptive.WARMUP_ROUNDS
    jobs = _pool(s).jobs
    for _ in range(2 * adaptive.PROBE):
        s.run(feeds)
    assert _pool(s).jobs - jobs == per_run * pool_runs
