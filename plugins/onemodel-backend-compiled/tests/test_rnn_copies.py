"""The fused LSTM and GRU (om_rnn.h: the batch in the lanes) give the avx2 copy's bits on the
16-lane copies, whose tiles hold two units (or pairs, quads) of one 16-lane register each where
the avx2 copy holds one of two 8-lane halves: hidden sizes with a last tile of one unit, pair
or quad, saturated gates, a NaN in one batch row, and the floats of the cell equations."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.testing.rnn_reference import gru as ref_gru
from onemodel.testing.rnn_reference import lstm as ref_lstm
from test_wide_kernels import _copies_here, _on_copies, needs_avx2

CASES = [  # (cell, batch, hidden): gru_lbr is linear_before_reset
    ("lstm", 16, 12), ("lstm", 30, 20), ("lstm", 14, 8),
    ("gru_lbr", 16, 6), ("gru_lbr", 16, 12), ("gru_lbr", 30, 10),
    ("gru", 16, 12), ("gru", 30, 8), ("gru", 16, 20),
]


def _weights(rng, gates, hidden, size):
    return [(rng.standard_normal(s) * 0.6).astype(np.float32)
            for s in ((gates * hidden, size), (gates * hidden, hidden), (gates * hidden,),
                      (gates * hidden,))]


@needs_avx2
@pytest.mark.parametrize("wide", _copies_here())
@pytest.mark.parametrize("cell,batch,hidden", CASES)
def test_fused_rnn_bit_identical_to_avx2(wide, cell, batch, hidden):
    rng = np.random.default_rng(batch * 31 + hidden)
    size, seq = 5, 6
    w = _weights(rng, 4 if cell == "lstm" else 3, hidden, size)
    x = (rng.standard_normal((seq, batch, size)) * 2).astype(np.float32)
    x[2, 3, 1] = 40.0  # saturates the gates of that row
    x[4, 5, 0] = np.nan  # one row turns NaN from step 4 on, the others stay finite
    h0 = (rng.standard_normal((batch, hidden)) * 0.5).astype(np.float32)
    consts = [Tensor.from_numpy(a) for a in w]

    def fn(x, h0):
        if cell == "lstm":
            return om.ops.lstm(x, *consts, h0, h0 * 0.5)
        return om.ops.gru(x, *consts, h0, linear_before_reset=cell == "gru_lbr")

    traced = om.trace(fn, {"x": (Tensor.from_numpy(x), None, None, None),
                           "h0": (Tensor.from_numpy(h0), None, None)})
    session = om.Session(traced, backend="compiled")
    feeds = {"x": x, "h0": h0}
    assert " lstm -> " in session.plan_source(feeds) or " gru -> " in session.plan_source(feeds)
    out = _on_copies(session, feeds, (wide, "avx2"))
    np.testing.assert_array_equal(out[wide], out["avx2"])
    rows = [b for b in range(batch) if b != 5]  # the NaN row aside: the cell equations
    ref = ref_lstm(x[:, rows], *w, h0=h0[rows], c0=h0[rows] * 0.5)[0] if cell == "lstm" \
        else ref_gru(x[:, rows], *w, h0=h0[rows], linear_before_reset=cell == "gru_lbr")[0]
    np.testing.assert_allclose(out[wide][:, rows], ref, rtol=1e-4, atol=1e-5)
    assert np.isnan(out[wide][4:, 5]).all() and not np.isnan(out[wide][:4]).any()

