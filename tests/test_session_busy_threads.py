"""Four sessions running at once with default settings never keep more threads busy than the
sum of their ``threads`` (session callers, pool workers and BLAS threads all counted).

Checked in a fresh process, so that only these sessions' threads exist: the test samples the
state of every thread of the process (``/proc/self/task/*/stat``) while the sessions run, and
counts those running or waiting for a core (state ``R``), the sampling thread excepted.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/task"),
                                reason="needs Linux's /proc to see thread states")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = r'''
import json, os, sys, threading, time
import numpy as np
import onemodel as om
from tests import session_models as models

import threadpoolctl
mlp_fn, mlp_shape = models.mlp()
br_fn, br_shape = models.branches()
# tracing runs eager ops: at one BLAS thread, so that no OpenBLAS worker is left spinning on a
# core for seconds afterwards (eager code's BLAS threads are the user's; sessions are checked)
with threadpoolctl.threadpool_limits(1, user_api="blas"):
    mlp, branches = models.trace(mlp_fn, mlp_shape), models.trace(br_fn, br_shape)
# default settings: the numpy backend's (1 thread) and the threaded backend's (every core)
sessions = [(mlp.create_session(), mlp_shape), (mlp.create_session(), mlp_shape),
            (branches.create_session(), br_shape),
            (branches.create_session(backend="threaded"), br_shape)]
if len(sys.argv) > 1:  # a control run: the numpy sessions let BLAS use every core
    from onemodel.core.threads import BLAS, cores
    enter = BLAS.enter
    BLAS.enter = lambda n, token: enter(cores(), token)
budget = sum(s.threads for s, _ in sessions)
stop = threading.Event()
runs = [0] * len(sessions)

def work(i):
    s, shape = sessions[i]
    x = {"input": models.feed(shape, 64, seed=i)}
    s.run(x)
    started.wait()
    while not stop.is_set():
        s.run(x)
        runs[i] += 1

started = threading.Event()
workers = [threading.Thread(target=work, args=(i,)) for i in range(len(sessions))]
for w in workers:
    w.start()
time.sleep(0.5)
started.set()
me = str(threading.get_native_id())
busy = []
end = time.perf_counter() + float(os.environ.get("BUSY_SECONDS", "3"))
while time.perf_counter() < end:
    n = 0
    for tid in os.listdir("/proc/self/task"):
        if tid == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # the thread ended
        n += state == "R"
    busy.append(n)
    time.sleep(0.0005)
stop.set()
for w in workers:
    w.join()
print(json.dumps({"budget": budget, "busy": busy, "runs": runs,
                  "threads": [s.threads for s, _ in sessions]}))
'''


def sample(*args):
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_four_sessions_at_once_stay_within_the_sum_of_their_threads():
    result = sample()
    busy = result["busy"]
    assert all(r > 5 for r in result["runs"]), result["runs"]  # every session really ran
    assert len(busy) > 100
    over = [n for n in busy if n > result["budget"]]
    assert not over, (f"{len(over)} of {len(busy)} samples had more busy threads than the "
                      f"{result['budget']} the sessions may use ({result['threads']}): "
                      f"up to {max(over)}")
