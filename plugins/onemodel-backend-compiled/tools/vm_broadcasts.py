"""Interleaved timing of single pointwise VM instructions (I_VM) on broadcast shapes: the
squeeze-and-excitation scale x * s[n, c] over EfficientNet's maps, x + b[c], x * s + t per
(n, c), (x - m) * r with m, r per position, and x + y without a broadcast.

Run from the repository root::

    .venv/bin/python plugins/onemodel-backend-compiled/tools/vm_broadcasts.py [OLD.so [ISA]]

With OLD.so (a copy of another build's ``_native*.so``, taken before rebuilding) each round
runs the same program bytes on both builds in turn, and the median of the per-round ratios
new / old is printed. A program is the instruction repeated to about 2e6 elements (so the
Python call is a small part), one thread. A shared machine moves these ratios: say the load.
"""
from __future__ import annotations

import importlib.util
import statistics
import sys
import time

import numpy as np

import onemodel as om
from onemodel import Tensor
from onemodel_backend_compiled import _native
from onemodel_backend_compiled import program as P
from onemodel_backend_compiled.lower import NativeSegment

SE = [(1, 16, 112), (1, 96, 56), (1, 240, 28), (1, 672, 14), (1, 1152, 7), (4, 1152, 7),
      (4, 240, 28), (4, 672, 14), (1, 32, 2)]
OTHERS = [(1, 1152, 7), (4, 240, 28), (1, 32, 112), (4, 64, 4)]


def _load(path):
    spec = importlib.util.spec_from_file_location("old_build._native", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _instruction(fn, shapes):
    """The one native instruction of fn's plan and the buffers of a run."""
    rng = np.random.default_rng(0)
    feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    spec = {k: (Tensor.from_numpy(v), *([None] * v.ndim)) for k, v in feeds.items()}
    session = om.Session(om.trace(fn, spec), backend="compiled")
    arrays, env = session._check_feeds(feeds)
    plan = session._compiled.plan(env)
    bufs, _ = plan.buffers(arrays, plan._arena())
    ins = [i for seg in plan.segments if isinstance(seg, NativeSegment) for i in seg.instructions]
    assert len(ins) == 1, f"{len(ins)} instructions"
    return ins[0], bufs


def bench(name, fn, shapes, old=None, rounds=15):
    ins, bufs = _instruction(fn, shapes)
    n = int(np.prod(np.broadcast_shapes(*shapes.values())))
    reps = max(1, int(2e6 // n))
    prog = P.assemble([ins] * reps)
    mods = [("new", _native)] + ([("old", old)] if old else [])
    times: dict = {k: [] for k, _ in mods}
    ratios = []
    for r in range(rounds):
        got = {}
        for k, mod in (mods if r % 2 == 0 else mods[::-1]):
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                mod.run(prog, bufs)
                best = min(best, (time.perf_counter() - t0) / reps)
            got[k] = best
            times[k].append(best)
        if old:
            ratios.append(got["new"] / got["old"])
    line = f"{name:30s} {statistics.median(times['new']) * 1e6:9.2f} us"
    if old:
        line += (f"  old {statistics.median(times['old']) * 1e6:9.2f} us"
                 f"  new/old {statistics.median(ratios):.3f}")
    print(line, flush=True)


def main(argv):
    old = _load(argv[0]) if argv else None
    if len(argv) > 1:
        _native.use(argv[1])
        if old:
            old.use(argv[1])
    for n, c, h in SE:
        bench(f"se x*s {n}x{c}x{h}x{h}", lambda x, s: x * s,
              {"x": (n, c, h, h), "s": (n, c, 1, 1)}, old)
    for n, c, h in OTHERS:
        shape = (n, c, h, h)
        bench(f"x+b[c] {n}x{c}x{h}x{h}", lambda x, b: x + b,
              {"x": shape, "b": (1, c, 1, 1)}, old)
        bench(f"x*s+t {n}x{c}x{h}x{h}", lambda x, s, t: x * s + t,
              {"x": shape, "s": (n, c, 1, 1), "t": (n, c, 1, 1)}, old)
        bench(f"(x-m)*r {n}x{c}x{h}x{h}", lambda x, m, r: (x - m) * r,
              {"x": shape, "m": (n, 1, h, h), "r": (n, 1, h, h)}, old)
        bench(f"x+y {n}x{c}x{h}x{h}", lambda x, y: x + y, {"x": shape, "y": shape}, old)


if __name__ == "__main__":
    main(sys.argv[1:])
