"""conv1d runs natively (rules.conv1d_rule: a 2-d convolution over one row), on every kernel
path the 2-d one chooses: the implicit GEMM on short rows, the direct kernel on long ones,
strided (phase planes), dilated, grouped, depthwise and 1x1, with a bias or none and a ReLU
after; against a numpy formula of the cross-correlation, on every kernel copy."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor

CASES = [  # (cin, cout, k, stride, padding, dilation, groups, length, bias, relu)
    (1, 8, 9, 4, 4, 1, 1, 400, True, True),   # the audio front end: a strided direct kernel
    (8, 16, 3, 1, 1, 1, 1, 100, True, True),
    (16, 16, 3, 2, 0, 2, 1, 50, False, True),
    (8, 16, 3, 1, 1, 1, 1, 16, True, False),   # a short row: the implicit GEMM
    (4, 4, 3, 1, 1, 1, 4, 30, True, False),    # depthwise
    (6, 4, 1, 1, 0, 1, 2, 12, True, False),    # grouped 1x1
    (32, 48, 1, 1, 0, 1, 1, 64, False, True),  # 1x1
    (5, 7, 4, 3, 2, 3, 1, 61, True, False),
]


def _reference(x, w, b, stride, pad, dil, groups):
    n, cin, length = x.shape
    cout, cig, k = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad)))
    lo = (length + 2 * pad - dil * (k - 1) - 1) // stride + 1
    out = np.zeros((n, cout, lo))
    cog = cout // groups
    for o in range(cout):
        gi = o // cog
        for t in range(k):
            cols = xp[:, gi * cig:(gi + 1) * cig, t * dil: t * dil + stride * (lo - 1) + 1: stride]
            out[:, o] += np.einsum("ncl,c->nl", cols, w[o, :, t])
        if b is not None:
            out[:, o] += b[o]
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:8])))
def test_conv1d_runs_natively_and_matches_the_formula(isa, case):
    cin, cout, k, stride, pad, dil, groups, length, bias, relu = case
    rng = np.random.default_rng(sum(case[:8]))
    w = rng.standard_normal((cout, cin // groups, k)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    wt, bt = Tensor.from_numpy(w), (Tensor.from_numpy(b) if bias else None)

    def fn(x):
        y = om.ops.conv1d(x, wt, bt, stride=stride, padding=pad, dilation=dil, groups=groups)
        return om.ops.relu(y) if relu else y

    x0 = rng.standard_normal((2, cin, length)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x0), "batch", None, None)
    session = om.Session(traced, backend="compiled")
    for batch in (2, 5):  # the symbolic batch at another size too
        x = rng.standard_normal((batch, cin, length)).astype(np.float32)
        feeds = {traced.input_names[0]: x}
        plan = session.plan_source(feeds)
        assert "numpy" not in plan.split("\n", 1)[1] and " conv1d -> " in plan, plan
        got = next(iter(session.run(feeds).values())).numpy()
        want = _reference(x, w, b, stride, pad, dil, groups)
        np.testing.assert_allclose(got, np.maximum(want, 0) if relu else want,
                                   rtol=1e-4, atol=1e-4 * np.sqrt(cin // groups * k))


def test_conv1d_with_weights_given_at_run_time_stays_on_numpy():
    def fn(x, w):
        return om.ops.conv1d(x, w, padding=1)

    x = np.ones((1, 2, 8), np.float32)
    w = np.ones((3, 2, 3), np.float32)
    traced = om.trace(fn, {"x": (Tensor.from_numpy(x), None, None, None),
                           "w": (Tensor.from_numpy(w), None, None, None)})
    session = om.Session(traced, backend="compiled")
    plan = session.plan_source({"x": x, "w": w})
    assert "numpy" in plan and "run-time weight" in plan, plan
    got = session.run({"x": x, "w": w})
    np.testing.assert_allclose(next(iter(got.values())).numpy(),
                               _reference(x, w, None, 1, 1, 1, 1))
