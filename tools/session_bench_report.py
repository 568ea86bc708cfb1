"""Turn a pytest-benchmark JSON of benchmarks/test_bench_session.py into the "Sessions" section
of docs/benchmarks.md (replacing the section if present).

    python -m pytest benchmarks/test_bench_session.py --benchmark-only -p no:randomly \\
        --benchmark-json=/tmp/session.json
    python tools/session_bench_report.py /tmp/session.json
"""
from __future__ import annotations

import json
import platform
import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
MODES = ("eager", "none", "basic", "all")
DESCRIPTIONS = {
    "mlp": "MLP 784-512-512-10",
    "cnn": "CNN (conv 1→16, pool, conv 16→32, pool, 1568→128→10)",
    "transformer": "encoder layer d=128, 4 heads, ffn 512, seq 64 (from primitives)",
    "transformer_ops": "encoder layer d=128, 4 heads, ffn 512, seq 64 (layer_norm/sdpa ops)",
    "deep100": "100 x Linear(64,64)+ReLU",
    "branches8": "8 branches of Linear(256,256)+ReLU+Linear(256,256), summed",
}


def _fmt(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} µs"


def render(data: dict) -> str:
    rows: dict[tuple, dict] = {}
    overhead = None
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        if info.get("mode") == "overhead":
            overhead = (b["stats"]["median"], info["nodes"])
            continue
        rows.setdefault((info["model"], info["batch"]), {})[info["mode"]] = (
            b["stats"]["median"], info.get("nodes"))
    mi = data.get("machine_info", {})
    cpu = mi.get("cpu", {}).get("brand_raw") or platform.processor() or "unknown CPU"
    lines = [
        "## Sessions",
        "",
        "`benchmarks/test_bench_session.py` (`make bench`): eager calls under `no_grad` against "
        "`Session.run` at each optimization level (numpy backend), BLAS limited to one thread "
        "with threadpoolctl. Medians; the ratios are eager / session(all) and none / all.",
        "",
        f"Machine: {cpu}, Python {mi.get('python_version', platform.python_version())}, "
        f"numpy {_numpy_version()}; 2 cores shared with other work, so absolute times move by "
        f"10–20 %.",
        "",
        "| model | batch | eager | none | basic | all | eager/all | none/all | nodes (none → all) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (model, batch), m in sorted(rows.items(), key=lambda kv: (list(DESCRIPTIONS).index(
            kv[0][0]) if kv[0][0] in DESCRIPTIONS else 99, kv[0][1])):
        if not all(k in m for k in MODES):
            continue
        t = {k: m[k][0] for k in MODES}
        lines.append(
            f"| {DESCRIPTIONS.get(model, model)} | {batch} | "
            + " | ".join(_fmt(t[k]) for k in MODES)
            + f" | {t['eager'] / t['all']:.2f}x | {t['none'] / t['all']:.2f}x | "
            f"{m['none'][1]} → {m['all'][1]} |")
    def ratio(model, batch, a, b):
        m = rows.get((model, batch), {})
        return m[a][0] / m[b][0] if a in m and b in m else float("nan")

    b1 = [ratio(m, 1, "eager", "all") for m in DESCRIPTIONS if (m, 1) in rows]
    lines += ["", "Targets: session(all) vs eager on the 100-layer model at batch 1: "
                  f"{ratio('deep100', 1, 'eager', 'all'):.1f}x (target 3x); slowest model at batch 1: "
                  f"{min(b1):.2f}x (target 1.5x); `all` vs `none` on the transformer at batch 1: "
                  f"{ratio('transformer', 1, 'none', 'all'):.2f}x from primitives, "
                  f"{ratio('transformer_ops', 1, 'none', 'all'):.2f}x written with the "
                  f"layer_norm/attention/gelu ops (target 1.3x)."]
    if overhead is not None:
        med, nodes = overhead
        lines += ["", f"Plan overhead: the 100-layer model's plan at batch 1 (level `none`, "
                      f"{nodes} nodes) with every kernel replaced by a no-op Python function runs "
                      f"in {_fmt(med)}, i.e. {med / nodes * 1e6:.2f} µs per node (this includes "
                      f"the call into the replaced kernel; target 1 µs)."]
    lines += ["", "To reproduce:", "", "```text",
              "python -m pytest benchmarks/test_bench_session.py --benchmark-only -p no:randomly "
              "--benchmark-json=/tmp/session.json",
              "python tools/session_bench_report.py /tmp/session.json", "```"]
    return "\n".join(lines) + "\n"


def _numpy_version() -> str:
    import numpy

    return numpy.__version__


def main(argv: list[str]) -> None:
    data = json.loads(Path(argv[1]).read_text())
    section = render(data)
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    pattern = re.compile(r"^## Sessions\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(lambda _: section + "\n", text) if pattern.search(text) else (
        text.rstrip("\n") + "\n\n" + section)
    DOC.write_text(text)
    print(section)


if __name__ == "__main__":
    main(sys.argv)
