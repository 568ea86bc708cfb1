"""The "Threads" section of docs/benchmarks.md (onemodel.tools.write_benchmarks.render_threads):
ratios from benchmarks/test_bench_threads.py's medians, targets met or missed."""
from __future__ import annotations

from onemodel.tools.write_benchmarks import render_threads


def _case(model, batch, numpy, blas1, threaded, chosen=None):
    return {"extra_info": {
        "suite": "threads", "model": model, "batch": batch, "cores": 2, "blas_default": 2,
        "numpy_threads": 1, "threaded_threads": 2,
        "medians": {"numpy": numpy, "numpy_blas1": blas1, "threaded": threaded},
        "blas_cost": numpy / blas1, "speedup": numpy / threaded, "capacity": [1.9, 1.8],
        "plan": "adaptive (sequential, parallel): 9 task(s)", "chosen": chosen},
        "stats": {"median": 0.0}}


def test_threads_section_ratios_and_targets():
    data = {"benchmarks": [_case("branches8", 64, 2e-3, 2e-3, 1.25e-3, "parallel"),
                           _case("mlp", 1, 50e-6, 48e-6, 60e-6)]}
    text = render_threads(data)
    assert "`threads=2`, every core of 2" in text and "default of 2 threads" in text
    assert ("| 2.00 ms | 2.00 ms | 1.00 | 1.25 ms | 1.60x (target 1.5x: met) | adaptive "
            "(sequential, parallel), parallel chosen | 1.9–1.8 |") in text
    # mlp: 50 / 60 = 0.83x, below 0.95x; 50 / 48 = 1.04, within 10 %
    assert "| 1.04 | 60.0 µs | 0.83x (below 0.95x) | adaptive (sequential, parallel) |" in text
    assert "Missed in this run: threaded 0.83x numpy on MLP 784-512-512-10 at batch 1." in text


def test_no_threads_benchmarks_no_section():
    assert render_threads({"benchmarks": []}) is None
