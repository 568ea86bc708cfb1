"""What the compiled backend runs on here: the kernel copy chosen at import and one core's
float32 peak on it, for `onemodel info`, `onemodel bench` and the benchmark headers."""
from __future__ import annotations

from onemodel.tools.machine import cpu_ghz

from . import _native

#: float32 lanes of each kernel copy's vectors, and FMA (multiply-add) pipes per core assumed
#: for the peak: two on every x86-64 core with AVX2 since Haswell and Zen 2. The generic copy
#: is baseline x86-64 (SSE2): 4 lanes, a multiply and an add pipe, no FMA. avx512: 16 lanes and
#: two 512-bit FMA pipes, Intel server cores' figure (Xeon Skylake-SP and later with both FMA
#: units); Zen 4 double-pumps 512-bit operations through its 256-bit units, so its real peak
#: equals AVX2's (half this figure). avx2-w16 (the 16-lane GEMM built for AVX2, for the tests)
#: runs on AVX2's 8-lane registers: AVX2's peak.
_LANES = {"avx512": 16, "avx2": 8, "avx2-w16": 8, "generic": 4}
_FMA_PIPES = {"avx512": 2, "avx2": 2, "avx2-w16": 2}


def platform() -> dict:
    """``{"isa": ..., "lanes": ..., "peak_gflops": ...}``; the peak is left out when the clock
    is unknown. Peak = lanes x 2 flops (a fused multiply-add, or a multiply and an add pipe)
    x pipes x GHz."""
    isa = _native.isa()
    out: dict = {"isa": isa, "lanes": _LANES.get(isa, 4)}
    ghz = cpu_ghz()
    if ghz:
        pipes = _FMA_PIPES.get(isa, 1)
        out["peak_gflops"] = round(out["lanes"] * 2 * pipes * ghz, 1)
    return out
