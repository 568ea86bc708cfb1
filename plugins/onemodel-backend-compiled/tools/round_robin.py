"""The interleaved timing loop shared by interleaved.py and real_models.py.

Each engine runs ``CALLS`` calls in turn, rotating which goes first, until ``secs`` seconds have
passed and at least 5 rounds ran; a round's time per engine is the median of its calls. Returns
each engine's median over rounds, the median of the per-round ratios to ``"ort"`` (every engine
but ORT itself) and the number of rounds.
"""
from __future__ import annotations

import statistics
import time

CALLS = 5


def interleave(calls: dict, secs: float) -> tuple[dict, dict, int]:
    order = list(calls)
    times: dict = {k: [] for k in calls}
    ratios: dict = {k: [] for k in calls if k != "ort"}
    end, rounds = time.perf_counter() + secs, 0
    while time.perf_counter() < end or rounds < 5:
        per = {}
        for k in order[rounds % len(order):] + order[:rounds % len(order)]:
            ts = []
            for _ in range(CALLS):
                t0 = time.perf_counter()
                calls[k]()
                ts.append(time.perf_counter() - t0)
            per[k] = statistics.median(ts)
            times[k].append(per[k])
        for k in ratios:
            ratios[k].append(per[k] / per["ort"])
        rounds += 1
    return ({k: statistics.median(v) for k, v in times.items()},
            {k: statistics.median(v) for k, v in ratios.items()}, rounds)
