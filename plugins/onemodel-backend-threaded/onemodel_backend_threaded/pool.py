"""The worker threads every threaded session shares.

Work is never *assigned* to a worker: a run (or a split node) keeps its own queue of work, and a
worker receives only an offer to help (``post(fn, arg)`` calls ``fn(arg)`` on a worker). The
thread that owns the work keeps taking from the same queue, so nothing waits on a worker that is
busy elsewhere: an offer that arrives late finds the queue empty and returns at once. That is
also why a pool whose threads are gone (after ``os.fork``) cannot deadlock a run.
"""
from __future__ import annotations

import os
import queue
import threading

import numpy as np


class Pool:
    """``workers`` daemon threads taking ``(fn, arg)`` offers from one queue."""

    def __init__(self, workers: int) -> None:
        self.workers = int(workers)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        if self._started:
            return
        with self._lock:
            if self._started:
                return
            for i in range(self.workers):
                threading.Thread(target=self._loop, name=f"onemodel-threaded-{i}",
                                 daemon=True).start()
            self._started = True

    def post(self, fn, arg) -> None:
        """Offer ``fn(arg)``; it runs under the poster's numpy error state (a session's
        floating-point warnings setting holds on every worker, as on the calling thread)."""
        self._queue.put((fn, arg, np.geterr()))

    def _loop(self) -> None:
        get = self._queue.get
        while True:
            fn, arg, err = get()
            try:
                with np.errstate(**err):
                    fn(arg)
            except BaseException:  # noqa: BLE001 - the work records its own errors
                pass


_POOLS: dict[int, Pool] = {}
_POOLS_LOCK = threading.Lock()


def pool_for(workers: int) -> Pool:
    """The process-wide pool with ``workers`` threads (started on first use)."""
    pool = _POOLS.get(workers)
    if pool is None:
        with _POOLS_LOCK:
            pool = _POOLS.setdefault(workers, Pool(workers))
    pool.start()
    return pool


def _after_fork() -> None:
    """The child of a fork has none of the parent's threads: pools start afresh on next use."""
    global _POOLS_LOCK
    _POOLS_LOCK = threading.Lock()
    for pool in _POOLS.values():
        pool._queue = queue.SimpleQueue()
        pool._lock = threading.Lock()
        pool._started = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)

__all__ = ["Pool", "pool_for"]
