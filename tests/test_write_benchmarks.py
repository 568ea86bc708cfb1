"""onemodel.tools.write_benchmarks: generated sections between markers, the rest kept."""
from __future__ import annotations

import json

from onemodel.tools.write_benchmarks import main, render_backends, replace_section


def _bench(mode, median, model="mlp", batch=64, **extra):
    return {"extra_info": {"suite": "backends", "model": model, "batch": batch, "mode": mode,
                           **extra}, "stats": {"median": median}}


DATA = {"machine_info": {"python_version": "3.11"}, "benchmarks": [
    {"extra_info": {"suite": "machine", "cpu": "Test CPU", "cores": 2, "numpy": "2.0",
                    "blas": "openblas 0.3", "onnxruntime": "1.0", "capacity_start": 1.9},
     "stats": {"median": 0.0}},
    _bench("eager", 4e-3), _bench("numpy", 2e-3), _bench("ort1", 1.5e-3), _bench("ort2", 1e-3),
    _bench("threaded", 1.25e-3, plan="adaptive (sequential, parallel): 1 task(s)",
           chosen="parallel"),
]}


def test_render_backends_tables_ratios_and_targets():
    text = render_backends(DATA)
    assert "Machine: Test CPU, 2 cores" in text and "onnxruntime 1.0" in text
    assert "1.9x at the start of the run" in text
    assert "| 64 | Session, threaded backend (2 threads) | 1.25 ms | 1.25 | 0.31 |" in text
    # best of ours 1.25 ms against ORT's best 1 ms: 1.25x, within the MLP's 1.5x target
    assert "| 1.25x | 1.5x: met | 1.60x | adaptive (sequential, parallel) |" in text
    assert "Missed in this run: none." in text


def test_sections_are_replaced_between_markers_and_the_rest_is_kept(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Training step\n\nhand-written\n\n## Sessions\n\nold\n\n"
                   "## Notes\n\nkept\n", encoding="utf-8")
    path = tmp_path / "b.json"
    path.write_text(json.dumps(DATA), encoding="utf-8")
    assert main([str(path), "--doc", str(doc)]) == 0
    first = doc.read_text(encoding="utf-8")
    assert "hand-written" in first and "## Notes\n\nkept" in first and "\nold\n" in first
    assert first.count("<!-- BEGIN GENERATED: backends") == 1
    assert main([str(path), "--doc", str(doc)]) == 0
    assert doc.read_text(encoding="utf-8") == first  # idempotent


def test_replace_section_replaces_an_unmarked_section_once():
    text = "# B\n\n## Sessions\n\nold table\n\n## Other\n\nx\n"
    out = replace_section(text, "sessions", "## Sessions\n\nnew table\n", "## Sessions")
    assert "old table" not in out and "new table" in out and "## Other\n\nx" in out
    assert replace_section(out, "sessions", "## Sessions\n\nnewer\n", "## Sessions").count(
        "## Sessions") == 1


def test_render_eager_dispatch_overhead_and_target():
    from onemodel.tools.write_benchmarks import render_eager

    def eager(case, mode, median):
        return {"extra_info": {"suite": "eager", "case": case, "mode": mode, "shape": [16, 16]},
                "stats": {"median": median}}

    data = {"machine_info": {}, "benchmarks": [
        eager("relu", "numpy", 1e-6), eager("relu", "kernel", 1e-6),
        eager("relu", "cached", 4e-6), eager("relu", "uncached", 20e-6),
        eager("sum", "numpy", 1e-6)]}  # incomplete: left out
    text = render_eager(data)
    assert "| `relu` | 1.0 µs | 1.0 µs | 4.0 µs | 20.0 µs | 3.0 µs | 3.0 µs | 4.0x |" in text
    assert "`sum`" not in text and "16x16 float32" in text
    assert "met (worst 3.0 µs)" in text
    data["benchmarks"][2] = eager("relu", "cached", 7e-6)
    assert "missed (worst 6.0 µs)" in render_eager(data)
    assert render_eager({"benchmarks": []}) is None
