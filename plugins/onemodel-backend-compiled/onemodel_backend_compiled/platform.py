"""What the compiled backend runs on here: the kernel copy on top of the active table, its
lanes (from the C descriptor, `_native.copies()`), the table in short, and one core's float32
peak, for `onemodel info`, `onemodel bench` and the benchmark headers."""
from __future__ import annotations

from onemodel.tools.machine import cpu_ghz, cpu_model

from . import _native, dispatch, heuristics

#: FMA (multiply-add) pipes per core assumed for the peak: two on every x86-64 core with AVX2
#: since Haswell and Zen 2. The generic copy is baseline x86-64 (SSE2): 4 lanes, a multiply and
#: an add pipe, no FMA (1 here: lanes x 2 flops x 1). avx512: 16 lanes and two 512-bit FMA
#: pipes, the figure of Intel server cores (Xeon Skylake-SP and later with both FMA units)
#: and of Zen 5; Zen 4 double-pumps 512-bit operations through its 256-bit units, so its real
#: peak equals AVX2's (`fma_pipes` halves it there). avx2-w16 (a test copy: 16-lane code on
#: AVX2, each vector two ymm) peaks as avx2 does (16 lanes x 1).
_FMA_PIPES: dict[str, float] = {"avx2": 2, "avx512": 2, "avx2-w16": 1}


def fma_pipes(isa: str) -> float:
    """`_FMA_PIPES` for this CPU. AMD's cores of family 25 with AVX-512 (Zen 4) run 512-bit
    operations through their 256-bit units, one a cycle per pipe pair, so their avx512 peak is
    avx2's (1 here); Zen 5 (family 26) has the full width. Zen 1 and Zen+ (family 23, models
    below 0x30) have two 128-bit FMA pipes: a 256-bit FMA takes both, so their avx2 peak is
    one such FMA a cycle (1; avx2-w16's 16-lane vectors one every two, 0.5); Zen 2 (family 23
    from model 0x30) has 256-bit pipes."""
    known = cpu_model()
    if known is not None and known[0] == "AuthenticAMD":
        family, model = known[1], known[2]
        if isa == "avx512" and family == 25:
            return 1
        if isa in ("avx2", "avx2-w16") and family == 23 and model < 0x30:
            return _FMA_PIPES[isa] / 2
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
