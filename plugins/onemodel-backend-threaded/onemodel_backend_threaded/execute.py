"""Running a parallel plan on the pool: dependency counting, hand-offs, cancellation.

Every update of a run's shared state is one GIL-atomic operation on a list or a deque (``append``,
``pop``, ``popleft``), never a lock held across several statements. Python raises
``KeyboardInterrupt`` in the main thread between any two bytecodes; with a lock, an interrupt
after ``acquire`` would leave it held and the run's workers stuck. Counting is done by popping:

* ``tokens[t]`` holds ``range(preds)``: whoever pops the ``0`` finished the last input of task
  ``t`` and makes it ready;
* ``left`` holds ``range(tasks)``: whoever pops the ``0`` finished the run's last task;
* ``active`` has one entry per helper inside the run, ``helpers`` one per helper that may still
  be offered.

A run that fails or is interrupted on the calling thread is *cancelled*: helpers take no more of
its tasks (each checks ``cancelled`` before taking one, after registering in ``active``), and the
caller waits until ``active`` is empty — every kernel started has finished — before it raises.
So a runner's buffers go back to the plan only when no helper can still write them (see
`parallel.ParallelPlan.run`).

Waiting: a thread with nothing to do blocks on a per-run lock after leaving a marker in
``sleeper``; whoever pops the marker releases the lock once (`_rouse`).
"""
from __future__ import annotations

import collections
import itertools
import threading
import time

__all__ = ["Run", "execute", "drain", "Par"]


class Run:
    """The state of one run of a parallel plan."""

    __slots__ = ("rt", "fns", "feeds", "vals", "tokens", "ready", "left", "active", "helpers",
                 "sleeper", "wake", "cancelled", "error")

    def __init__(self, rt, fns, feeds, vals) -> None:
        self.rt, self.fns, self.feeds, self.vals = rt, fns, feeds, vals
        self.tokens = [list(t) for t in rt.tokens]
        self.ready = collections.deque(rt.sources)
        self.left = list(rt.all_tasks)
        self.active: list = []
        self.helpers = list(rt.helper_slots)
        self.sleeper: list = []
        self.wake = threading.Lock()
        self.wake.acquire()
        self.cancelled = False
        self.error: BaseException | None = None


def execute(run: Run) -> None:
    """Run every task, the calling thread working too; on any exception, cancel and wait for
    the kernels already started, then raise."""
    rt = run.rt
    try:
        _offer(run, rt.n_spawn_sources - 1)
        _work(run, True)
    except BaseException:
        run.cancelled = True
        drain(run.active)
        raise
    if run.error is not None:
        drain(run.active)
        raise run.error


def drain(active: list) -> None:
    """Wait until ``active`` is empty (each helper finishes the kernel it is running)."""
    delay = 2e-5
    while active:
        time.sleep(delay)
        delay = min(delay * 2, 1e-3)


def _rouse(owner) -> None:
    """Wake ``owner``'s waiting thread, if it is waiting (its marker is popped once)."""
    try:
        owner.sleeper.pop()
    except IndexError:
        return
    owner.wake.release()


def _sleep(owner, done) -> None:
    """Block until `_rouse`d, unless ``done()`` already holds."""
    owner.sleeper.append(1)
    if done():
        try:
            owner.sleeper.pop()
            return  # nobody will release: do not wait
        except IndexError:
            pass  # a waker took the marker: it releases the lock now, so take it
    owner.wake.acquire()


def _offer(run: Run, n: int) -> None:
    """Ask up to ``n`` more threads to help: the sleeping caller first, then pool workers."""
    if n <= 0:
        return
    if run.sleeper:
        _rouse(run)
        n -= 1
    helpers = run.helpers
    post = run.rt.pool.post
    while n > 0:
        try:
            helpers.pop()
        except IndexError:
            return
        post(_help, run)
        n -= 1


def _help(run: Run) -> None:
    run.active.append(1)
    try:
        while True:
            _work(run, False)
            run.helpers.append(1)
            if run.cancelled or not run.ready:
                return
            try:  # a task became ready as this helper was leaving: stay if still wanted
                run.helpers.pop()
            except IndexError:
                return
    finally:
        run.active.pop()


def _work(run: Run, caller: bool) -> None:
    """Take ready tasks until none is left (a helper) or the run is over (the caller)."""
    rt = run.rt
    succs, spawn, fns = rt.succs, rt.spawn, run.fns
    feeds, vals, tokens, ready, left = run.feeds, run.vals, run.tokens, run.ready, run.left
    popleft = ready.popleft
    while not run.cancelled:
        try:
            t = popleft()
        except IndexError:
            if not caller or not left:
                return
            _sleep(run, lambda: bool(ready) or not left or run.cancelled)
            continue
        if caller:
            fns[t](feeds, vals)  # an exception goes to `execute`, which cancels the run
        else:
            try:
                fns[t](feeds, vals)
            except BaseException as exc:  # noqa: BLE001 - raised by the caller
                if run.error is None:
                    run.error = exc
                run.cancelled = True
                _rouse(run)
                return
        was_empty = not ready
        new = 0
        for s in succs[t]:
            if tokens[s].pop() == 0:
                ready.append(s)
                new += spawn[s]
        if left.pop() == 0:
            _rouse(run)
        elif new:
            _offer(run, new - 1 if was_empty else new)


class Par:
    """``_par(pieces, args)`` in generated code: run ``piece(*args)`` for every piece of a batch
    region, at once where pool workers are free. The calling thread works through the pieces
    too; it returns when all are done and, on any exception, only after every piece already
    started has finished."""

    __slots__ = ("pool",)

    def __init__(self, pool) -> None:
        self.pool = pool

    def __call__(self, pieces, args) -> None:
        call = _PieceCall(pieces, args)
        try:
            post = self.pool.post
            for _ in range(min(len(pieces) - 1, self.pool.workers)):
                post(_help_pieces, call)
            call.work(True)
            while call.left and not call.cancelled:
                _sleep(call, lambda: not call.left or call.cancelled)
        except BaseException:
            call.cancelled = True
            drain(call.active)
            raise
        if call.error is not None:
            drain(call.active)
            raise call.error


class _PieceCall:
    """One call of a region: pieces are claimed by whichever thread comes first."""

    __slots__ = ("pieces", "args", "claim", "left", "active", "sleeper", "wake", "cancelled",
                 "error")

    def __init__(self, pieces, args) -> None:
        self.pieces, self.args = pieces, args
        self.claim = itertools.count().__next__  # atomic under the GIL
        self.left = list(range(len(pieces)))
        self.active: list = []
        self.sleeper: list = []
        self.wake = threading.Lock()
        self.wake.acquire()
        self.cancelled = False
        self.error: BaseException | None = None

    def work(self, owner: bool) -> None:
        pieces, args, left = self.pieces, self.args, self.left
        n = len(pieces)
        while not self.cancelled:
            i = self.claim()
            if i >= n:
                return
            if owner:
                pieces[i](*args)
            else:
                try:
                    pieces[i](*args)
                except BaseException as exc:  # noqa: BLE001 - raised by the owner
                    if self.error is None:
                        self.error = exc
                    self.cancelled = True
                    _rouse(self)
                    return
            if left.pop() == 0:
                _rouse(self)


def _help_pieces(call: _PieceCall) -> None:
    call.active.append(1)
    try:
        call.work(False)
    finally:
        call.active.pop()
