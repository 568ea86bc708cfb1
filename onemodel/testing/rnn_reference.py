"""Independent references for the lstm and gru ops, shipped in the testing kit so a backend
plugin's tests can use them from an installed copy: the textbook cell equations (as
torch.nn.LSTM / GRU document them), one batch row and one time step at a time with one matrix
per gate, written apart from the kernels (which run whole batches on stacked gates and keep
states for the gradient)."""
import numpy as np


def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def _gates(w, count):
    """Split a stacked (count*H, ...) weight or bias into its per-gate blocks."""
    if w is None:
        return [0.0] * count
    return np.split(np.asarray(w, dtype=np.float64), count, axis=0)


def _order(seq, reverse):
    return list(range(seq - 1, -1, -1)) if reverse else list(range(seq))


def lstm(x, w_ih, w_hh, b_ih=None, b_hh=None, h0=None, c0=None, reverse=False):
    seq, batch, _ = x.shape
    hidden = w_hh.shape[1]
    wi, wf, wg, wo = _gates(w_ih, 4)
    ui, uf, ug, uo = _gates(w_hh, 4)
    bi, bf, bg, bo = [a + b for a, b in zip(_gates(b_ih, 4), _gates(b_hh, 4))]
    y = np.zeros((seq, batch, hidden))
    h_n = np.zeros((batch, hidden))
    c_n = np.zeros((batch, hidden))
    for n in range(batch):
        h = np.zeros(hidden) if h0 is None else np.asarray(h0[n], dtype=np.float64)
        c = np.zeros(hidden) if c0 is None else np.asarray(c0[n], dtype=np.float64)
        for t in _order(seq, reverse):
            xt = np.asarray(x[t, n], dtype=np.float64)
            i = _sig(wi @ xt + ui @ h + bi)
            f = _sig(wf @ xt + uf @ h + bf)
            g = np.tanh(wg @ xt + ug @ h + bg)
            o = _sig(wo @ xt + uo @ h + bo)
            c = f * c + i * g
            h = o * np.tanh(c)
            y[t, n] = h
        h_n[n], c_n[n] = h, c
    return y, h_n, c_n


def gru(x, w_ih, w_hh, b_ih=None, b_hh=None, h0=None, reverse=False, linear_before_reset=True):
    seq, batch, _ = x.shape
    hidden = w_hh.shape[1]
    wr, wz, wn = _gates(w_ih, 3)
    ur, uz, un = _gates(w_hh, 3)
    bir, biz, bin_ = _gates(b_ih, 3)
    bhr, bhz, bhn = _gates(b_hh, 3)
    y = np.zeros((seq, batch, hidden))
    h_n = np.zeros((batch, hidden))
    for n in range(batch):
        h = np.zeros(hidden) if h0 is None else np.asarray(h0[n], dtype=np.float64)
        for t in _order(seq, reverse):
            xt = np.asarray(x[t, n], dtype=np.float64)
            r = _sig(wr @ xt + bir + ur @ h + bhr)
            z = _sig(wz @ xt + biz + uz @ h + bhz)
            if linear_before_reset:   # PyTorch: n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
                cand = np.tanh(wn @ xt + bin_ + r * (un @ h + bhn))
            else:                     # ONNX default: n = tanh(W_in x + b_in + W_hn (r * h) + b_hn)
                cand = np.tanh(wn @ xt + bin_ + un @ (r * h) + bhn)
            h = (1.0 - z) * cand + z * h
            y[t, n] = h
        h_n[n] = h
    return y, h_n
