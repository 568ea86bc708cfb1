"""What the compiled backend runs on here: the kernel copy on top of the active table, its
lanes (from the C descriptor, `_native.copies()`), the table in short, and one core's float32
peak, for `onemodel info`, `onemodel bench` and the benchmark headers."""
from __future__ import annotations

from onemodel.tools.machine import cpu_family, cpu_ghz

from . import _native, dispatch, heuristics

#: FMA (multiply-add) pipes per core assumed for the peak: two on every x86-64 core with AVX2
#: since Haswell and Zen 2. The generic copy is baseline x86-64 (SSE2): 4 lanes, a multiply and
#: an add pipe, no FMA (1 here: lanes x 2 flops x 1). avx512: 16 lanes and two 512-bit FMA
#: pipes, the figure of Intel server cores (Xeon Skylake-SP and later with both FMA units)
#: and of Zen 5; Zen 4 double-pumps 512-bit operations through its 256-bit units, so its real
#: peak equals AVX2's (`fma_pipes` halves it there). avx2-w16 (a test copy: 16-lane code on
#: AVX2, each vector two ymm) peaks as avx2 does (16 lanes x 1).
_FMA_PIPES = {"avx2": 2, "avx512": 2, "avx2-w16": 1}


def fma_pipes(isa: str) -> int:
    """`_FMA_PIPES` for this CPU: an AMD family 25 core with AVX-512 (Zen 4) runs 512-bit
    operations through its 256-bit units, one a cycle per pipe pair, so its avx512 peak is
    avx2's (1 here); Zen 5 (family 26) has the full width."""
    if isa == "avx512" and cpu_family() == ("AuthenticAMD", 25):
        return 1
    return _FMA_PIPES.get(isa, 1)


def platform() -> dict:
    """``{"isa": ..., "lanes": ..., "kernels": ..., "heuristics": ..., "peak_gflops": ...}``;
    the peak is left out when the clock is unknown. Peak = lanes x 2 flops (a fused multiply-add,
    or a multiply and an add pipe) x pipes x GHz. ``kernels``: `dispatch.kernels_text` (which
    copy each kernel comes from, in short); ``heuristics``: whose measurements the lowering's
    kernel choices use (heuristics.py)."""
    dispatch.check()
    isa = _native.isa()
    lanes = dict(_native.copies()).get(isa, 4)
    out: dict = {"isa": isa, "lanes": lanes, "kernels": dispatch.kernels_text(),
                 "heuristics": heuristics.describe(isa)}
    ghz = cpu_ghz()
    if ghz:
        pipes = fma_pipes(isa)
        out["peak_gflops"] = round(lanes * 2 * pipes * ghz, 1)
    return out
