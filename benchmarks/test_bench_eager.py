"""Eager dispatch overhead: ``om.ops.<op>(...)`` on small float32 tensors against the bare numpy
call it wraps, the op's own kernel called directly (what dispatch adds is the difference), and
the full path with the signature cache emptied before each call (binding and inference every
time). BLAS limited to one thread with threadpoolctl. `python -m onemodel.tools.write_benchmarks`
turns the JSON into the "Eager dispatch" section of docs/benchmarks.md (target: under 5 µs of
dispatch overhead per op on a repeated signature)."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel.core import eager_cache
from onemodel.core.dispatch import bind

threadpoolctl = pytest.importorskip("threadpoolctl")

ops = om.ops
SHAPE = (16, 16)

#: case -> (OneModel call, bare numpy call, (op name, args, kwargs) for the kernel-only mode)
CASES = {
    "relu": (lambda x, y: ops.relu(x), lambda a, b: np.maximum(a, 0), ("relu", "x", {})),
    "add": (lambda x, y: ops.add(x, y), lambda a, b: np.add(a, b), ("add", "xy", {})),
    "x + y": (lambda x, y: x + y, lambda a, b: a + b, ("add", "xy", {})),
    "x * 2.0": (lambda x, y: x * 2.0, lambda a, b: a * np.float32(2.0), ("mul", "x2", {})),
    "matmul": (lambda x, y: ops.matmul(x, y), lambda a, b: a @ b, ("matmul", "xy", {})),
    "sum(dim=1)": (lambda x, y: ops.sum(x, dim=1), lambda a, b: a.sum(axis=1),
                   ("sum", "x", {"axis": 1})),
}
MODES = ("numpy", "kernel", "cached", "uncached")


@pytest.fixture(scope="module", autouse=True)
def single_thread():
    with threadpoolctl.threadpool_limits(1):
        yield


def _kernel_call(spec, x, y):
    """The op's kernel with the call already bound: the work dispatch wraps."""
    name, which, kwargs = spec
    op = om.registry.get_op(name)
    args = {"x": (x,), "xy": (x, y), "x2": (x, 2.0)}[which]
    inputs, params = bind(op, args, dict(kwargs))
    arrays = [t._data for t in inputs]
    return lambda: op.kernel(*arrays, **params)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(CASES))
def test_eager_dispatch(benchmark, case, mode):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2))
    x, y = om.Tensor.from_numpy(a), om.Tensor.from_numpy(b)
    ours, bare, spec = CASES[case]
    benchmark.group = f"eager {case}"
    benchmark.extra_info.update(suite="eager", case=case, mode=mode, shape=list(SHAPE))
    np.testing.assert_allclose(ours(x, y).numpy(), bare(a, b), rtol=1e-5)
    if mode == "numpy":
        benchmark(bare, a, b)
    elif mode == "kernel":
        benchmark(_kernel_call(spec, x, y))
    elif mode == "cached":
        ours(x, y)
        benchmark(ours, x, y)
    else:
        def uncached():
            eager_cache.clear()
            return ours(x, y)

        benchmark(uncached)
