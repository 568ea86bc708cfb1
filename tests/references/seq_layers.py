"""References for the sequence layers, in float64 numpy, written from PyTorch's documented
formulas one head, one bag, one time step at a time (apart from the layers, which batch them)."""
import math

import numpy as np


def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def _f(a):
    return None if a is None else np.asarray(a, dtype=np.float64)


# -- recurrent cells ---------------------------------------------------------------------------
def rnn_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None, nonlinearity="tanh"):
    """One Elman step for a batch, row by row: act(W_ih x + b_ih + W_hh h + b_hh)."""
    x, h, w_ih, w_hh = _f(x), _f(h), _f(w_ih), _f(w_hh)
    out = np.zeros((x.shape[0], w_hh.shape[0]))
    for n in range(x.shape[0]):
        a = w_ih @ x[n] + w_hh @ h[n]
        if b_ih is not None:
            a = a + _f(b_ih) + _f(b_hh)
        out[n] = np.tanh(a) if nonlinearity == "tanh" else np.maximum(a, 0.0)
    return out


def lstm_cell(x, h, c, w_ih, w_hh, b_ih=None, b_hh=None):
    x, h, c = _f(x), _f(h), _f(c)
    hidden = w_hh.shape[1]
    hs, cs = np.zeros((x.shape[0], hidden)), np.zeros((x.shape[0], hidden))
    blocks = [np.asarray(w, np.float64).reshape(4, hidden, -1) for w in (w_ih, w_hh)]
    bias = np.zeros((4, hidden)) if b_ih is None else (_f(b_ih) + _f(b_hh)).reshape(4, hidden)
    for n in range(x.shape[0]):
        pre = [blocks[0][k] @ x[n] + blocks[1][k] @ h[n] + bias[k] for k in range(4)]
        i, f, g, o = _sig(pre[0]), _sig(pre[1]), np.tanh(pre[2]), _sig(pre[3])
        cs[n] = f * c[n] + i * g
        hs[n] = o * np.tanh(cs[n])
    return hs, cs


def gru_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    x, h = _f(x), _f(h)
    hidden = w_hh.shape[1]
    wi = np.asarray(w_ih, np.float64).reshape(3, hidden, -1)
    wh = np.asarray(w_hh, np.float64).reshape(3, hidden, hidden)
    bi = np.zeros((3, hidden)) if b_ih is None else _f(b_ih).reshape(3, hidden)
    bh = np.zeros((3, hidden)) if b_hh is None else _f(b_hh).reshape(3, hidden)
    out = np.zeros((x.shape[0], hidden))
    for n in range(x.shape[0]):
        r = _sig(wi[0] @ x[n] + bi[0] + wh[0] @ h[n] + bh[0])
        z = _sig(wi[1] @ x[n] + bi[1] + wh[1] @ h[n] + bh[1])
        cand = np.tanh(wi[2] @ x[n] + bi[2] + r * (wh[2] @ h[n] + bh[2]))
        out[n] = (1 - z) * cand + z * h[n]
    return out


def rnn_layer(x, w_ih, w_hh, b_ih=None, b_hh=None, h0=None, nonlinearity="tanh",
              reverse=False):
    """One direction of one Elman layer over time-major x (seq, batch, in)."""
    seq, batch, _ = x.shape
    hidden = w_hh.shape[0]
    h = np.zeros((batch, hidden)) if h0 is None else _f(h0)
    y = np.zeros((seq, batch, hidden))
    for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
        h = rnn_cell(x[t], h, w_ih, w_hh, b_ih, b_hh, nonlinearity)
        y[t] = h
    return y, h


# -- transformer -------------------------------------------------------------------------------
def layer_norm(x, w, b, eps=1e-5):
    x = _f(x)
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * _f(w) + _f(b)


def linear(x, w, b):
    return _f(x) @ _f(w).T + _f(b)


def attention(q_in, kv_in, p, prefix, nhead, mask=None, key_padding=None):
    """torch.nn.MultiheadAttention on batch-first (N, L, E) / (N, S, E), head by head."""
    w, b = _f(p[prefix + "in_proj_weight"]), _f(p[prefix + "in_proj_bias"])
    e = w.shape[1]
    hd = e // nhead
    n, tgt = q_in.shape[0], q_in.shape[1]
    out = np.zeros((n, tgt, e))
    for i in range(n):
        q = q_in[i] @ w[:e].T + b[:e]
        k = kv_in[i] @ w[e:2 * e].T + b[e:2 * e]
        v = kv_in[i] @ w[2 * e:].T + b[2 * e:]
        heads = []
        for hh in range(nhead):
            sl = slice(hh * hd, (hh + 1) * hd)
            s = q[:, sl] @ k[:, sl].T / math.sqrt(hd)
            if mask is not None:
                s = s + mask
            if key_padding is not None:
                s = np.where(key_padding[i][None, :], -np.inf, s)
            s = np.exp(s - s.max(-1, keepdims=True))
            heads.append((s / s.sum(-1, keepdims=True)) @ v[:, sl])
        out[i] = linear(np.concatenate(heads, -1), p[prefix + "out_proj.weight"],
                        p[prefix + "out_proj.bias"])
    return out


def _act(name):
    if name == "relu":
        return lambda v: np.maximum(v, 0)
    from math import erf
    return np.vectorize(lambda v: 0.5 * v * (1 + erf(v / math.sqrt(2))))


def decoder_layer(tgt, memory, p, nhead, norm_first=False, activation="relu", tgt_mask=None,
                  memory_mask=None, tgt_key_padding=None, memory_key_padding=None, eps=1e-5):
    """torch.nn.TransformerDecoderLayer (eval, batch-first) from its documented blocks."""
    x, mem = _f(tgt), _f(memory)
    act = _act(activation)

    def norm(k, v):
        return layer_norm(v, p[f"norm{k}.weight"], p[f"norm{k}.bias"], eps)

    def sa(v):
        return attention(v, v, p, "self_attn.", nhead, tgt_mask, tgt_key_padding)

    def ca(v):
        return attention(v, mem, p, "multihead_attn.", nhead, memory_mask, memory_key_padding)

    def ff(v):
        return linear(act(linear(v, p["linear1.weight"], p["linear1.bias"])),
                      p["linear2.weight"], p["linear2.bias"])

    if norm_first:
        x = x + sa(norm(1, x))
        x = x + ca(norm(2, x))
        return x + ff(norm(3, x))
    x = norm(1, x + sa(x))
    x = norm(2, x + ca(x))
    return norm(3, x + ff(x))


def encoder_layer(src, p, nhead, norm_first=False, activation="relu", mask=None,
                  key_padding=None, eps=1e-5):
    x = _f(src)
    act = _act(activation)

    def norm(k, v):
        return layer_norm(v, p[f"norm{k}.weight"], p[f"norm{k}.bias"], eps)

    def sa(v):
        return attention(v, v, p, "self_attn.", nhead, mask, key_padding)

    def ff(v):
        return linear(act(linear(v, p["linear1.weight"], p["linear1.bias"])),
                      p["linear2.weight"], p["linear2.bias"])

    if norm_first:
        x = x + sa(norm(1, x))
        return x + ff(norm(2, x))
    x = norm(1, x + sa(x))
    return norm(2, x + ff(x))


# -- bags and bilinear -------------------------------------------------------------------------
def embedding_bag(weight, bags, mode, per_sample_weights=None, padding_idx=None):
    """``bags`` is a list of index lists (with their weights in ``per_sample_weights``)."""
    weight = _f(weight)
    out = np.zeros((len(bags), weight.shape[1]))
    for b, bag in enumerate(bags):
        rows = [(weight[i], 1.0 if per_sample_weights is None else per_sample_weights[b][j])
                for j, i in enumerate(bag) if i != padding_idx]
        if not rows:
            continue
        if mode == "sum":
            out[b] = sum(r * s for r, s in rows)
        elif mode == "mean":
            out[b] = sum(r for r, _ in rows) / len(rows)
        else:
            out[b] = np.max([r for r, _ in rows], axis=0)
    return out


def bilinear(x1, x2, weight, bias=None):
    x1, x2, weight = _f(x1), _f(x2), _f(weight)
    out = np.zeros((x1.shape[0], weight.shape[0]))
    for n in range(x1.shape[0]):
        for o in range(weight.shape[0]):
            out[n, o] = x1[n] @ weight[o] @ x2[n] + (0.0 if bias is None else bias[o])
    return out


REFERENCES = {}   # layer references only: no op is checked from here
