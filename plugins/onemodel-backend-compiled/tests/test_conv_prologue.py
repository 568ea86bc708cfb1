"""Batch norm and ReLU applied by the convolution that reads them (om_prologue.h), DenseNet's
concat -> norm -> relu -> conv: no pointwise pass left, the result as the formula's and the
numpy backend's, on the direct kernel (stride 1 and phase planes) and the implicit GEMM (with
and without padding), both kernel copies, NaN and inf included; and the cases that must keep
the pointwise pass (another reader of the normalised or rectified map, a grouped conv)."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor

from conv_references import keep_channels_first, keep_direct

RTOL, ATOL = 1e-4, 1e-4


def conv_formula(x, w, b, stride, pad):
    """Window sums over the zero-padded input in float64 (one group)."""
    n, _, h, wd = x.shape
    co, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, co, ho, wo)) + (0 if b is None else b.reshape(1, co, 1, 1))
    for u in range(kh):
        for v in range(kw):
            patch = xp[:, :, u: u + stride * (ho - 1) + 1: stride,
                       v: v + stride * (wo - 1) + 1: stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, u, v].astype(np.float64))
    return out


CASES = [  # channels of the two concatenated inputs, cout, kernel, stride, pad, map, path
    ((24, 40), 16, 3, 1, 1, (16, 16), "conv2d_direct"),   # stride 1: rows copied in
    ((8, 9), 12, 3, 2, 1, (20, 21), "conv2d_direct"),     # stride 2: phase planes
    ((32, 32), 20, 3, 1, 1, (4, 4), "conv2d_gemm"),       # small map: padded input built
    ((40, 24), 32, 1, 1, 0, (2, 5), "conv2d_gemm"),       # 1x1 small map, no padding
    ((200, 100), 24, 1, 1, 0, (7, 7), "conv2d_gemm"),     # 1x1 over 300 channels at 7x7
    ((16, 8), 32, 1, 1, 0, (16, 16), "conv2d_direct"),    # 1x1 16x16: written in place
    ((40, 24), 32, 1, 1, 0, (4, 4), "conv2d_1x1_gemm"),   # 1x1 as W x, whole panels
    ((200, 100), 24, 1, 1, 0, (8, 8), "conv2d_1x1_gemm"),
    ((40, 24), 32, 1, 1, 0, (16, 16), "conv2d_1x1_gemm"),
]


def _stats(rng, c, affine):
    m = rng.standard_normal(c)
    v = rng.uniform(0.5, 2.0, c)
    out = [m, v] + ([rng.standard_normal(c), rng.standard_normal(c)] if affine else [])
    return [Tensor.from_numpy(a.astype(np.float32)) for a in out]


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_norm_relu_conv_runs_in_the_conv(case, affine, isa, monkeypatch):
    (ca, cb), cout, k, stride, pad, (h, w), path = case
    if path == "conv2d_1x1_gemm":  # W x: the prologue in its packing, on every copy
        keep_channels_first(monkeypatch)
    if path == "conv2d_direct":  # its row copies (conv2d_lanes': test_conv_lanes.py)
        keep_direct(monkeypatch)
    c = ca + cb
    rng = np.random.default_rng(c + cout + k)
    stats = _stats(rng, c, affine)
    W = (rng.standard_normal((cout, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    B = rng.standard_normal(cout).astype(np.float32)

    def fn(x, y):
        z = om.ops.relu(om.ops.batch_norm(om.ops.concat([x, y], axis=1), *stats, eps=1e-3))
        return om.ops.conv2d(z, Tensor.from_numpy(W), Tensor.from_numpy(B), stride=stride,
                             padding=pad)

    x = rng.standard_normal((3, ca, h, w)).astype(np.float32)
    y = rng.standard_normal((3, cb, h, w)).astype(np.float32)
    traced = om.trace(fn, {"x": (Tensor.from_numpy(x), "batch", None, None, None),
                           "y": (Tensor.from_numpy(y), "batch", None, None, None)})
    session = om.Session(traced, backend="compiled")
    numpy_session = om.Session(traced, backend="numpy")
    for batch in (1, 2):
        feeds = {"x": x[:batch], "y": y[:batch]}
        src = session.plan_source(feeds)
        assert path in src and "pointwise" not in src and "0 on numpy" in src, src
        got = session.run(feeds)["output"].numpy()
        m, v = (t.numpy().astype(np.float64).reshape(1, c, 1, 1) for t in stats[:2])
        z = (np.concatenate([x[:batch], y[:batch]], axis=1) - m) / np.sqrt(v + 1e-3)
        if affine:
            z = z * stats[2].numpy().reshape(1, c, 1, 1) + stats[3].numpy().reshape(1, c, 1, 1)
        want = conv_formula(np.maximum(z, 0), W, B, stride, pad)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"b{batch}")
        ref = numpy_session.run(feeds)["output"].numpy()
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=f"numpy b{batch}")


@pytest.mark.parametrize("hw", [(4, 4), (12, 12)])
def test_norm_relu_conv_nan_and_inf_as_numpy(hw, isa):
    """NaN and +-inf through the prologue (ReLU keeps NaN, makes -inf 0) and the convolution,
    where the numpy backend puts them; padding stays 0 (not relu(norm(0)))."""
    rng = np.random.default_rng(4)
    c = 10
    stats = _stats(rng, c, True)
    W = rng.standard_normal((8, c, 3, 3)).astype(np.float32)

    def fn(x, y):
        z = om.ops.relu(om.ops.batch_norm(om.ops.concat([x, y], axis=1), *stats))
        return om.ops.conv2d(z, Tensor.from_numpy(W), padding=1)

    x = rng.standard_normal((2, 4, *hw)).astype(np.float32)
    y = rng.standard_normal((2, 6, *hw)).astype(np.float32)
    x[0, 1, 1, 1], y[1, 2, 2, 3], y[0, 5, 0, 0] = np.nan, np.inf, -np.inf
    traced = om.trace(fn, {"x": (Tensor.from_numpy(x), None, None, None, None),
                           "y": (Tensor.from_numpy(y), None, None, None, None)})
    feeds = {"x": x, "y": y}
    session = om.Session(traced, backend="compiled")
    assert "pointwise" not in session.plan_source(feeds)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = om.Session(traced, backend="numpy").run(feeds)["output"].numpy()
    got = session.run(feeds)["output"].numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(ref))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref))
    fin = np.isfinite(ref)
    assert fin.any() and not fin.all()
    np.testing.assert_allclose(got[fin], ref[fin], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", ["norm read twice", "relu read twice", "grouped conv"])
def test_norm_relu_stays_a_pass_when_the_conv_cannot_take_it(shape, isa):
    rng = np.random.default_rng(8)
    c = 8
    stats = _stats(rng, c, True)
    groups = 2 if shape == "grouped conv" else 1
    W = rng.standard_normal((6, c // groups, 3, 3)).astype(np.float32)

    def fn(x):
        n = om.ops.batch_norm(x, *stats)
        r = om.ops.relu(n)
        y = om.ops.conv2d(r, Tensor.from_numpy(W), padding=1, groups=groups)
        if shape == "norm read twice":
            return y, n
        if shape == "relu read twice":
            return y, r
        return y

    x = rng.standard_normal((2, c, 9, 9)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    assert "pointwise" in session.plan_source({"input": x})
    got = session.run({"input": x})
    ref = om.Session(traced, backend="numpy").run({"input": x})
    for key in ref:
        np.testing.assert_allclose(got[key].numpy(), ref[key].numpy(), rtol=RTOL, atol=ATOL)


def test_norm_relu_conv_relu_pool_is_one_instruction(isa):
    """The prologue composes with the fused epilogue and 2x2 max pool: batch norm, ReLU,
    convolution, ReLU and pool are one native instruction, equal to the formula."""
    rng = np.random.default_rng(12)
    c = 12
    stats = _stats(rng, c, True)
    W = rng.standard_normal((10, c, 3, 3)).astype(np.float32)

    def fn(x):
        z = om.ops.relu(om.ops.batch_norm(x, *stats))
        return om.ops.max_pool2d(om.ops.relu(om.ops.conv2d(z, Tensor.from_numpy(W), padding=1)), 2)

    x = rng.standard_normal((3, c, 12, 14)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    body = session.plan_source({"input": x}).split("native segment:")[1].split("\n")
    assert [ln.split()[0] for ln in body if ln.strip()] == ["conv2d_direct"], body
    m, v, g, b = (t.numpy().astype(np.float64).reshape(1, c, 1, 1) for t in stats)
    z = np.maximum((x - m) / np.sqrt(v + 1e-5) * g + b, 0)
    y = np.maximum(conv_formula(z, W, None, 1, 1), 0)
    want = y.reshape(3, 10, 6, 2, 7, 2).max(axis=(3, 5))
    np.testing.assert_allclose(session.run({"input": x})["output"].numpy(), want,
                               rtol=RTOL, atol=ATOL)
