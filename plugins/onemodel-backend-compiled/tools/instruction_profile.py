"""Where one run of a compiled Session's plan spends its time: every native instruction and
numpy step timed alone (one at a time, in order, over the buffers of one run), summed by op.
Shared by interleaved.py and real_models.py (``--profile`` / ``PROFILE=1``)."""
from __future__ import annotations

import statistics
import time
from collections import defaultdict


def profile(session, feeds, repeats: int = 20) -> list[tuple[str, float]]:
    """Seconds per op of one run: each native instruction and numpy step timed alone."""
    from onemodel_backend_compiled import _native
    from onemodel_backend_compiled import program as P
    from onemodel_backend_compiled.lower import NativeSegment

    arrays, env = session._check_feeds(feeds)
    plan = session._compiled.plan(env)
    per: dict = defaultdict(float)
    bufs, _ = plan.buffers(arrays, plan._arena())
    py: dict = {}
    for seg in plan.segments:
        if isinstance(seg, NativeSegment):
            for ins, node in zip(seg.instructions, seg.nodes):
                prog = P.assemble([ins])
                ts = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    _native.run(prog, bufs)
                    ts.append(time.perf_counter() - t0)
                per[f"native {node.op}"] += statistics.median(ts)
        else:
            ts = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                plan._py_step(seg, bufs, py, arrays)
                ts.append(time.perf_counter() - t0)
            per[f"numpy {seg.node.op}"] += statistics.median(ts)
    return sorted(per.items(), key=lambda kv: -kv[1])


def profile_line(session, feeds, top: int = 6) -> str:
    """The ``top`` largest entries of `profile`, with their shares of the summed time."""
    prof = profile(session, feeds)
    total = sum(t for _, t in prof) or 1.0
    return "    profile (alone, summed by op): " + ", ".join(
        f"{k} {t * 1e3:.3f} ms ({t / total:.0%})" for k, t in prof[:top])
