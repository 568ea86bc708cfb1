"""Linears fused across nodes (linear_fusion.py): linears reading one input, each read by a
linear that a sum reads, become one GEMM over their weights side by side, and the sum of those
linears over adjacent column blocks of one buffer one GEMM with K stacked. Checked against the
numpy backend and a float64 numpy formula, on both kernel copies, with mixed activations,
missing biases, a hidden value also read elsewhere, linears of the same input returned as graph
outputs, and NaN/inf."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.testing import models

ops = om.ops
RTOL, ATOL = 1e-4, 1e-5
D, H = 24, 20


def _params(n, seed=0, bias=True):
    rng = np.random.default_rng(seed)
    out = []
    for j in range(n):
        w1 = (rng.uniform(-1, 1, (H, D)) / np.sqrt(D)).astype(np.float32)
        b1 = (rng.uniform(-1, 1, H) / np.sqrt(D)).astype(np.float32)
        w2 = (rng.uniform(-1, 1, (D, H)) / np.sqrt(H)).astype(np.float32)
        b2 = (rng.uniform(-1, 1, D) / np.sqrt(H)).astype(np.float32)
        out.append((w1, b1 if bias or j % 2 else None, w2, b2 if bias or j % 2 == 0 else None))
    return out


def _lin(x, w, b):
    return ops.linear(x, Tensor.from_numpy(w), None if b is None else Tensor.from_numpy(b))


def _branches_fn(ps, acts):
    def fn(x):
        total = None
        for (w1, b1, w2, b2), act in zip(ps, acts):
            h = _lin(x, w1, b1)
            h = {"relu": ops.relu, "tanh": ops.tanh, None: lambda v: v}[act](h)
            y = _lin(h, w2, b2)
            total = y if total is None else total + y
        return total
    return fn


def _ref64(x, ps, acts):
    """The branches model in float64, written independently of both backends."""
    x = x.astype(np.float64)
    total = 0.0
    for (w1, b1, w2, b2), act in zip(ps, acts):
        h = x @ w1.T.astype(np.float64) + (0 if b1 is None else b1)
        h = {"relu": lambda v: np.maximum(v, 0), "tanh": np.tanh, None: lambda v: v}[act](h)
        total = total + h @ w2.T.astype(np.float64) + (0 if b2 is None else b2)
    return total


def _run(traced, feeds):
    ref = om.Session(traced, backend="numpy").run(feeds)
    s = om.Session(traced, backend="compiled")
    return ref, s.run(feeds), s.plan_source(feeds)


def _gemms(src):
    return sum(1 for line in src.splitlines() if line.strip().startswith("gemm"))


@pytest.mark.parametrize("acts", [("relu",) * 4, ("relu", "tanh", None, "relu")])
@pytest.mark.parametrize("bias", [True, False])
def test_branches_match_references(acts, bias, isa):
    ps = _params(len(acts), bias=bias)
    traced = models.trace(_branches_fn(ps, acts), (D,))
    for batch in (1, 5):
        x = models.feed((D,), batch, seed=batch)
        ref, got, src = _run(traced, {"input": x})
        (k,) = list(ref)
        np.testing.assert_allclose(got[k].numpy(), ref[k].numpy(), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(got[k].numpy(), _ref64(x, ps, acts), rtol=RTOL, atol=ATOL)
    if acts == ("relu",) * 4:  # 8 linears -> one GEMM over x, one over the hidden blocks
        assert _gemms(src) == 2, src
    else:  # grouped by activation: relu (2 linears), tanh, none -> 3 GEMMs, then one K-stacked
        # GEMM per run of adjacent blocks of one buffer
        assert _gemms(src) < 8, src


def test_block_also_read_elsewhere_and_outputs(isa):
    """A hidden value read by a second-layer linear and by another op, and linears of the same
    input that are graph outputs, stay out of the group; the rest is fused and all is right."""
    ps = _params(3)

    def fn(x):
        hs = [ops.relu(_lin(x, w1, b1)) for w1, b1, _, _ in ps]
        total = None
        for h, (_, _, w2, b2) in zip(hs, ps):
            y = _lin(h, w2, b2)
            total = y if total is None else total + y
        plain = _lin(x, ps[0][0], None)  # no activation: its own group, a graph output
        return total, hs[1] * 2.0, plain, _lin(x, ps[1][0], ps[1][1])

    traced = models.trace(fn, (D,))
    for batch in (1, 4):
        x = models.feed((D,), batch, seed=batch + 3)
        ref, got, src = _run(traced, {"input": x})
        assert set(ref) == set(got)
        for k in ref:
            np.testing.assert_allclose(got[k].numpy(), ref[k].numpy(), rtol=RTOL, atol=ATOL,
                                       err_msg=k)
        x64 = x.astype(np.float64)
        h1 = np.maximum(x64 @ ps[1][0].T + ps[1][1], 0)
        outs = [got[k].numpy() for k in ref]
        for want in (2 * h1, x64 @ ps[0][0].T):
            assert any(o.shape == want.shape and np.allclose(o, want, rtol=RTOL, atol=ATOL)
                       for o in outs)
    # hs[0] and hs[2]: one GEMM, their second layers one; alone: hs[1]'s linear (the last
    # returned one is the same node after the passes), its second layer, `plain`
    assert _gemms(src) == 5, src


def test_nan_inf_like_numpy(isa):
    ps = _params(3)
    traced = models.trace(_branches_fn(ps, ("relu",) * 3), (D,))
    x = models.feed((D,), 4, seed=9)
    x[0, 3], x[1, 5], x[2, 0] = np.nan, np.inf, -np.inf
    ref, got, _ = _run(traced, {"input": x})
    (k,) = list(ref)
    a, r = got[k].numpy(), ref[k].numpy()
    np.testing.assert_array_equal(np.isnan(a), np.isnan(r))
    np.testing.assert_array_equal(np.isinf(a), np.isinf(r))
    fin = np.isfinite(r)
    np.testing.assert_allclose(a[fin], r[fin], rtol=RTOL, atol=ATOL)
    assert fin[3].all() and not fin[:3].all()


def test_encoder_layer_projections_stay_apart():
    """q, k and v read the same input but no sum: merging them measured no faster."""
    fn = models.encoder_layer(d=32, heads=4, ffn=64)[0]
    traced = models.trace(fn, (8, 32))
    x = models.feed((8, 32), 2)
    ref, got, src = _run(traced, {"input": x})
    for k in ref:
        np.testing.assert_allclose(got[k].numpy(), ref[k].numpy(), rtol=RTOL, atol=ATOL)
    assert _gemms(src) == 6, src  # q, k, v, out projection, two feed-forward linears


def test_linears_that_fuse_with_their_reader_stay_alone():
    """Two linears of one input that are summed accumulate into the sum (no add pass), and a
    linear read by a relu applies it in its GEMM: grouping them would add a pass."""
    ps = _params(2)

    def fn(x):
        s = _lin(x, ps[0][0], ps[0][1]) + _lin(x, ps[1][0], None)
        return s, ops.relu(_lin(x, ps[0][2].T.copy(), None))

    traced = models.trace(fn, (D,))
    x = models.feed((D,), 3)
    ref, got, src = _run(traced, {"input": x})
    for k in ref:
        np.testing.assert_allclose(got[k].numpy(), ref[k].numpy(), rtol=RTOL, atol=ATOL)
    ins = [line.split()[0] for line in src.splitlines() if line.startswith("  ")]
    assert ins == ["gemm"] * 3, src
