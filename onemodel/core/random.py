"""The one seeded generator behind every random factory, initialiser and dropout mask."""
from __future__ import annotations

import threading

import numpy as np

_lock = threading.Lock()
_generator = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Seed every random factory, parameter initialiser and dropout."""
    global _generator
    with _lock:
        _generator = np.random.default_rng(int(seed))


def generator(seed: int | None = None) -> np.random.Generator:
    """The global generator, or a fresh one for an explicit seed."""
    if seed is not None:
        return np.random.default_rng(int(seed))
    return _generator
