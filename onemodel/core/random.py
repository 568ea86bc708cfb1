"""The one seeded generator behind every random factory, initialiser and dropout mask."""
from __future__ import annotations

import threading

import numpy as np

_lock = threading.Lock()
_generator = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Seed every random factory, parameter initialiser and dropout. Any int in
    [-2**63, 2**64) (negative seeds wrap around as in PyTorch)."""
    global _generator
    if isinstance(seed, np.integer):
        seed = int(seed)
    if isinstance(seed, bool) or not isinstance(seed, int) or not -2 ** 63 <= seed < 2 ** 64:
        from ..errors import ArgumentError

        raise ArgumentError(f"manual_seed: seed must be an int in [-2**63, 2**64), got "
                            f"{seed!r:.60}")
    with _lock:
        _generator = np.random.default_rng(seed & 0xFFFF_FFFF_FFFF_FFFF)


def generator(seed: int | None = None) -> np.random.Generator:
    """The global generator, or a fresh one for an explicit seed."""
    if seed is not None:
        return np.random.default_rng(int(seed))
    return _generator
