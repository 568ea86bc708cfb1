"""What the compiled backend runs on here: the kernel copy chosen at import and one core's
float32 peak on it, for `onemodel info`, `onemodel bench` and the benchmark headers."""
from __future__ import annotations

from onemodel.tools.machine import cpu_ghz

from . import _native, heuristics

#: float32 lanes of each kernel copy's vectors, and FMA (multiply-add) pipes per core assumed
#: for the peak: two on every x86-64 core with AVX2 since Haswell and Zen 2. The generic copy
#: is baseline x86-64 (SSE2): 4 lanes, a multiply and an add pipe, no FMA.
_LANES = {"avx2": 8, "generic": 4}
_FMA_PIPES = {"avx2": 2}


def platform() -> dict:
    """``{"isa": ..., "lanes": ..., "heuristics": ..., "peak_gflops": ...}``; the peak is left
    out when the clock is unknown. Peak = lanes x 2 flops (a fused multiply-add, or a multiply
    and an add pipe) x pipes x GHz. ``heuristics`` says whose measurements the lowering's
    kernel choices use (heuristics.py)."""
    isa = _native.isa()
    out: dict = {"isa": isa, "lanes": _LANES.get(isa, 4), "heuristics": heuristics.describe(isa)}
    ghz = cpu_ghz()
    if ghz:
        pipes = _FMA_PIPES.get(isa, 1)
        out["peak_gflops"] = round(out["lanes"] * 2 * pipes * ghz, 1)
    return out
