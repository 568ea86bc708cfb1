"""What a measurement ran on: the CPU's name and clock, and what each installed backend says it
runs on (`BackendDef.platform`: the instruction set its kernels chose, one core's peak)."""
from __future__ import annotations

import platform as _platform


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return _platform.processor() or "unknown CPU"


def cpu_family() -> tuple[str, int] | None:
    """The CPU's vendor and family (``/proc/cpuinfo``: ``("AuthenticAMD", 25)`` is Zen 3 and
    Zen 4, 26 Zen 5), None where it does not say: a peak that depends on the core reads it."""
    known = cpu_model()
    return None if known is None else known[:2]


def cpu_model() -> tuple[str, int, int] | None:
    """The CPU's vendor, family and model (``/proc/cpuinfo``): family 23 is Zen 1 and Zen+
    (models below 0x30, whose vector units are 128 bits wide) and Zen 2 (0x30 and above).
    None where it does not say."""
    vendor, family, model = None, None, None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    vendor = line.split(":", 1)[1].strip()
                elif line.startswith("cpu family"):
                    family = int(line.split(":", 1)[1])
                elif line.startswith("model") and not line.startswith("model name"):
                    model = int(line.split(":", 1)[1])
                if vendor is not None and family is not None and model is not None:
                    return vendor, family, model
    except (OSError, ValueError):
        pass
    return None


def cpu_ghz() -> float | None:
    """The highest clock a core reaches, in GHz: cpufreq's ``cpuinfo_max_freq``, else the
    ``cpu MHz`` of ``/proc/cpuinfo`` (what the core ran at when read; on a virtual machine
    often the nominal clock). None when neither is readable."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            return int(f.read().strip()) / 1e6
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return float(line.split(":", 1)[1]) / 1000.0
    except (OSError, ValueError):
        pass
    return None


def backend_platforms() -> dict[str, dict]:
    """``{backend: platform mapping}`` for the installed backends that declare one; a backend
    whose ``platform()`` raises is reported with the error instead of hiding it."""
    from ..registry import REGISTRY

    out: dict[str, dict] = {}
    for name, rec in sorted(REGISTRY.tables().backends.items()):
        if rec.platform is None:
            continue
        try:
            out[name] = dict(rec.platform())
        except Exception as exc:  # noqa: BLE001 - shown, not raised: a header must print
            out[name] = {"isa": f"unknown ({type(exc).__name__}: {exc})"}
    return out


def platform_text(info: dict) -> str:
    """``"avx2, peak 67.2 GFLOP/s per core"`` for one backend's platform mapping."""
    text = str(info.get("isa", "?"))
    if info.get("kernels") and info["kernels"] != info.get("isa"):  # kernels from other copies
        text += f" (kernels: {info['kernels']})"
    if info.get("peak_gflops"):
        text += f", peak {info['peak_gflops']:g} GFLOP/s per core"
    if info.get("heuristics") not in (None, "measured"):
        text += f", heuristics {info['heuristics']}"
    return text


__all__ = ["cpu_name", "cpu_ghz", "cpu_family", "cpu_model", "backend_platforms", "platform_text"]
