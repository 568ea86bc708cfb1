import os
import sys

# the benchmarks share their models with the tests (onemodel.testing.models, through
# benchmarks/bench_models.py)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (ROOT, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)
