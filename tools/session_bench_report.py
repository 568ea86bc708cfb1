"""Kept for the command docs/benchmarks.md used to give: the "Sessions" section is now written by
``python -m onemodel.tools.write_benchmarks`` (with the "Backends and ONNX Runtime" section).

    python tools/session_bench_report.py /tmp/session.json
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from onemodel.tools.write_benchmarks import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:2] + ["--doc", str(Path(__file__).resolve().parents[1] / "docs"
                                                / "benchmarks.md")]))
