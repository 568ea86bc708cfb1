"""The direct convolution's copies in and out (om_conv_batch.h's compact_rows, and a channel
copied in as one run when its rows have no column padding): rows moved 8 floats at a time with
each row's last vector spilling into the next, a whole map copied at once when its rows are not
padded. Against a window formula written here and the numpy backend, on every kernel copy, at
batch 1 to 5: row widths under, at and over 8 and not multiples of 8, strides (phase planes),
dilation, a kernel with rows padded only, input channels not multiples of 8, the batch norm and
ReLU prologue on unpadded rows, NaN and inf; and a split over threads gives the same bits (a
part's last row must not spill into the next part's first channel)."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.core import adaptive
from onemodel_backend_compiled import _native

from conv_references import windows_reference

RTOL, ATOL = 1e-4, 1e-4


CASES = [
    # cin, cout, (kh, kw), stride, pad, dil, (h, w): all on the direct kernel
    (16, 64, (1, 1), 1, 0, 1, (15, 15)),        # SqueezeNet's 1x1 on 15x15: unpadded rows
    (13, 10, (1, 1), 1, 0, 1, (9, 11)),         # 99 positions, 10 channels (not 4 k)
    (16, 24, (3, 3), 1, 1, 1, (15, 15)),        # rows of 15 at stride 16: a spill per row
    (5, 7, (3, 3), 1, 1, 1, (13, 5)),           # rows of 5: only a partial vector
    (6, 9, (3, 3), 1, 1, 1, (16, 16)),          # rows of exactly 16: no partial vector
    (7, 11, (3, 3), 1, 2, 2, (19, 17)),         # dilation 2, rows of 17
    (9, 12, (3, 1), 1, (1, 0), 1, (20, 13)),    # rows padded only: one run a channel
    (3, 16, (3, 3), 2, 0, 1, (31, 31)),         # SqueezeNet's stem, stride 2: phase planes
    (10, 6, (3, 3), 2, 1, 1, (23, 20)),         # stride 2 with padding, rows of 10
]


def _session(fn, cin, h, w, threads=1):
    x0 = np.zeros((29, cin, h, w), np.float32)  # 29: no other axis is that long
    traced = om.trace(fn, Tensor.from_numpy(x0), "batch", None, None, None)
    return traced, om.Session(traced, backend="compiled", threads=threads)


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_direct_conv_copies_against_windows_and_numpy(case, isa):
    cin, cout, (kh, kw), stride, pad, dil, (h, w) = case
    pad2 = pad if isinstance(pad, tuple) else (pad, pad)
    rng = np.random.default_rng(cin * 13 + cout + h)
    W = (rng.standard_normal((cout, cin, kh, kw)) / np.sqrt(cin * kh * kw)).astype(np.float32)
    B = rng.standard_normal(cout).astype(np.float32)

    def fn(x):
        return om.ops.relu(om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B),
                                         stride=stride, padding=pad, dilation=dil))

    traced, session = _session(fn, cin, h, w)
    numpy_session = om.Session(traced, backend="numpy")
    x = rng.standard_normal((5, cin, h, w)).astype(np.float32)
    src = session.plan_source({"input": x})
    assert "conv2d_direct" in src and "pointwise" not in src, src
    for batch in range(1, 6):
        xb = x[:batch]
        want = np.maximum(windows_reference(xb, W, B, (stride, stride), pad2, (dil, dil)), 0)
        got = session.run({"input": xb})["output"].numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"b{batch}")
        ref = numpy_session.run({"input": xb})["output"].numpy()
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=f"numpy b{batch}")


@pytest.mark.parametrize("k, pad", [((1, 1), 0), ((3, 1), (1, 0))])
def test_prologue_on_unpadded_rows_with_nan_and_inf(k, pad, isa):
    """Batch norm and ReLU applied as a channel is copied in one run (no column padding): the
    formula's results, and NaN / inf where the numpy backend puts them."""
    cin, cout, h, w = 20, 12, 11, 13
    rng = np.random.default_rng(5)
    m, s = rng.standard_normal(cin), rng.uniform(0.5, 2.0, cin)
    g, t = rng.standard_normal(cin), rng.standard_normal(cin)
    stats = [Tensor.from_numpy(a.astype(np.float32)) for a in (m, s, g, t)]
    W = (rng.standard_normal((cout, cin) + k) / np.sqrt(cin)).astype(np.float32)
    B = rng.standard_normal(cout).astype(np.float32)

    def fn(x):
        z = om.ops.relu(om.ops.batch_norm(x, *stats, eps=1e-3))
        return om.ops.conv2d(z, Tensor.from_numpy(W), Tensor.from_numpy(B), padding=pad)

    traced, session = _session(fn, cin, h, w)
    x = rng.standard_normal((3, cin, h, w)).astype(np.float32)
    src = session.plan_source({"input": x})
    assert "conv2d_direct" in src and "pointwise" not in src, src
    pad2 = pad if isinstance(pad, tuple) else (pad, pad)
    z = (x - m.reshape(1, -1, 1, 1)) / np.sqrt(s.reshape(1, -1, 1, 1) + 1e-3)
    z = np.maximum(z * g.reshape(1, -1, 1, 1) + t.reshape(1, -1, 1, 1), 0)
    want = windows_reference(z, W, B, (1, 1), pad2, (1, 1))
    np.testing.assert_allclose(session.run({"input": x})["output"].numpy(), want,
                               rtol=RTOL, atol=ATOL)
    x[0, 3, 2, 4], x[2, cin - 1, h - 1, w - 1] = np.nan, np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
    got = session.run({"input": x})["output"].numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = np.isfinite(ref)
    assert not fin.all()
    np.testing.assert_allclose(got[fin], ref[fin], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("case", [CASES[2], CASES[3], CASES[8]], ids=["15", "5", "s2"])
def test_split_over_images_gives_the_same_bits(case, isa, monkeypatch):
    """Two and three threads, every image its own part: a part's last channel is compacted
    without spilling into the first channel of the next part (written by another thread)."""
    monkeypatch.setattr(adaptive, "MARGIN", float("inf"))  # the pool whatever the timings
    before = _native.split_min_work()
    _native.split_min_work(0)
    try:
        cin, cout, (kh, kw), stride, pad, dil, (h, w) = case
        rng = np.random.default_rng(11)
        W = rng.standard_normal((cout, cin, kh, kw)).astype(np.float32)
        B = rng.standard_normal(cout).astype(np.float32)

        def fn(x):
            return om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B), stride=stride,
                                 padding=pad, dilation=dil)

        _, one = _session(fn, cin, h, w)
        for threads in (2, 3):
            _, many = _session(fn, cin, h, w, threads)
            for batch in (2, 3, 5):
                x = rng.standard_normal((batch, cin, h, w)).astype(np.float32)
                for _ in range(3):
                    got = many.run({"input": x})["output"].numpy()
                    ref = one.run({"input": x})["output"].numpy()
                    assert got.tobytes() == ref.tobytes(), f"threads={threads} b{batch}"
    finally:
        _native.split_min_work(before)
