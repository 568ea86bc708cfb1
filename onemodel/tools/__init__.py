"""Tools that ship with OneModel: timing helpers shared by ``onemodel bench`` and the benchmark
suite (`bench`), and the writer of docs/benchmarks.md (`write_benchmarks`)."""
