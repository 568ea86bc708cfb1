"""The interleaved timing loop shared by interleaved.py and real_models.py.

Each engine runs ``CALLS`` calls in turn, rotating which goes first, until ``secs`` seconds have
passed and at least 5 rounds ran; a round's time per engine is the median of its calls. Returns
each engine's median over rounds, the median of the per-round ratios to ``"ort"`` (every engine
but ORT itself) and the number of rounds. With ``best_of`` (peer names), the ratios also hold
``"best"``: the median over rounds of ``subject``'s time over the fastest of those peers in the
same round.
"""
from __future__ import annotations

import statistics
import time

CALLS = 5


def interleave(calls: dict, secs: float, best_of: tuple = (),
               subject: str = "compiled") -> tuple[dict, dict, int]:
    order = list(calls)
    times: dict = {k: [] for k in calls}
    ratios: dict = {k: [] for k in calls if k != "ort"}
    if best_of:
        ratios["best"] = []
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
            if k == "best":
                ratios[k].append(per[subject] / min(per[p] for p in best_of))
            else:
                ratios[k].append(per[k] / per["ort"])
        rounds += 1
    return ({k: statistics.median(v) for k, v in times.items()},
            {k: statistics.median(v) for k, v in ratios.items()}, rounds)
