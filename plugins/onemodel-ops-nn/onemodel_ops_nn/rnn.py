"""lstm and gru: one direction of one recurrent layer, with PyTorch's gate order and weight layout.

The whole recurrence is one op (the loop over time runs inside the kernel), so a model traced with
a symbolic sequence length records one node whatever the length. ``x`` is time-major
(seq, batch, input_size); ``w_ih`` is (G*H, input_size), ``w_hh`` (G*H, H), biases (G*H,), states
(batch, H), with the gates stacked as PyTorch does: i, f, g, o for lstm (G=4) and r, z, n for gru
(G=3). ``reverse=True`` runs the sequence from its end (the second direction of a bidirectional
layer); the output stays in the input's time order. om.nn.LSTM / om.nn.GRU stack layers and
directions out of these ops.

gru's ``linear_before_reset`` is True for PyTorch (the reset gate scales ``W_hn h + b_hn``);
False is ONNX GRU's default, where it scales ``h`` before that product.
"""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.errors import OpError
from onemodel.registry import OpCost, OpDef, OpTraits, Param, Sample

from ._common import as_dtype, check_dim, float_dtype, result_dtype


def _sigmoid(a):
    # 0.5 + 0.5 tanh(a/2): sigmoid without exp overflow for large |a|
    return 0.5 + 0.5 * np.tanh(0.5 * a)


def _check_types(op, gates, x, w_ih, w_hh, b_ih, b_hh, states):
    dtype = float_dtype(op, x, w_ih, w_hh, b_ih, b_hh, *(s for _, s in states))
    if x.ndim != 3:
        raise OpError(f"ops.{op}: x must be (seq, batch, input_size), got {x}")
    if w_hh.ndim != 2:
        raise OpError(f"ops.{op}: w_hh must be ({gates}*hidden_size, hidden_size), got {w_hh}")
    h = w_hh.shape[1]
    check_dim(op, f"the rows of w_hh {w_hh} ({gates} gates x hidden_size)", w_hh.shape[0],
              gates * h)
    if w_ih.ndim != 2:
        raise OpError(f"ops.{op}: w_ih must be ({gates}*hidden_size, input_size), got {w_ih}")
    check_dim(op, f"the rows of w_ih {w_ih} ({gates} gates x hidden_size)", w_ih.shape[0],
              gates * h)
    check_dim(op, f"the columns of w_ih {w_ih} (x {x})", w_ih.shape[1], x.shape[2])
    for name, b in (("b_ih", b_ih), ("b_hh", b_hh)):
        if b is not None:
            if b.ndim != 1:
                raise OpError(f"ops.{op}: {name} must be 1-d ({gates}*hidden_size,), got {b}")
            check_dim(op, f"the size of {name} {b}", b.shape[0], gates * h)
    for name, s in states:
        if s is not None:
            if s.ndim != 2:
                raise OpError(f"ops.{op}: {name} must be (batch, hidden_size), got {s}")
            check_dim(op, f"the batch of {name} {s} (x {x})", s.shape[0], x.shape[1])
            check_dim(op, f"the hidden size of {name} {s}", s.shape[1], h)
    seq, batch = x.shape[0], x.shape[1]
    return TensorType(dtype, (seq, batch, h)), TensorType(dtype, (batch, h))


def _prepare(x, w_ih, w_hh, b_ih, b_hh, states, reverse):
    """Common forward set-up: the dtype, inputs in it, the time-ordered x and x @ w_ih.T + b."""
    dt = result_dtype(x, w_ih, w_hh, b_ih, b_hh, *states)
    x, w_ih, w_hh = as_dtype(x, dt), as_dtype(w_ih, dt), as_dtype(w_hh, dt)
    xs = x[::-1] if reverse else x
    pre = np.matmul(xs, w_ih.T)
    if b_ih is not None:
        pre += as_dtype(b_ih, dt)
    return dt, xs, w_hh, pre


def _state(s, batch, h, dt):
    return np.zeros((batch, h), dt) if s is None else as_dtype(s, dt)


def _input_grads(dpre, xs, w_ih, reverse, needs, b_ih):
    """Gradients of x, w_ih and b_ih from the gradient of the input projection (T, B, G*H)."""
    dx = dw_ih = db_ih = None
    g = dpre.shape[-1]
    if needs[0]:
        dx = np.matmul(dpre, w_ih.astype(dpre.dtype, copy=False))
        if reverse:
            dx = dx[::-1]
    if needs[1]:
        dw_ih = dpre.reshape(-1, g).T @ xs.reshape(-1, xs.shape[-1]).astype(dpre.dtype)
    if needs[3] and b_ih is not None:
        db_ih = dpre.sum(axis=(0, 1))
    return dx, dw_ih, db_ih


# -- lstm ---------------------------------------------------------------------------------------
def _lstm_infer(x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse):
    y, s = _check_types("lstm", 4, x, w_ih, w_hh, b_ih, b_hh, (("h0", h0), ("c0", c0)))
    return y, s, s


def _lstm_forward(x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse):
    dt, xs, w_hh, pre = _prepare(x, w_ih, w_hh, b_ih, b_hh, (h0, c0), reverse)
    if b_hh is not None:
        pre += as_dtype(b_hh, dt)
    seq, batch = x.shape[0], x.shape[1]
    h = w_hh.shape[1]
    hs = np.empty((seq + 1, batch, h), dt)
    cs = np.empty((seq + 1, batch, h), dt)
    hs[0], cs[0] = _state(h0, batch, h, dt), _state(c0, batch, h, dt)
    acts = np.empty((seq, batch, 4 * h), dt)  # i, f, g, o after their activations
    wt = np.ascontiguousarray(w_hh.T)
    for t in range(seq):
        a = pre[t] + hs[t] @ wt
        act = acts[t]
        act[:, :2 * h] = _sigmoid(a[:, :2 * h])
        act[:, 2 * h:3 * h] = np.tanh(a[:, 2 * h:3 * h])
        act[:, 3 * h:] = _sigmoid(a[:, 3 * h:])
        i, f, g, o = act[:, :h], act[:, h:2 * h], act[:, 2 * h:3 * h], act[:, 3 * h:]
        cs[t + 1] = f * cs[t] + i * g
        hs[t + 1] = o * np.tanh(cs[t + 1])
    y = hs[1:][::-1] if reverse else hs[1:]
    return (np.ascontiguousarray(y), hs[seq].copy(), cs[seq].copy()), (acts, hs, cs)


def _lstm_kernel(*args, **params):
    return _lstm_forward(*args, **params)[0]


def _lstm_vjp(ctx, gy, ghn, gcn):
    x, w_ih, w_hh, b_ih, b_hh, h0, c0 = ctx.inputs
    acts, hs, cs = ctx.saved
    reverse = ctx.params["reverse"]
    dt = acts.dtype
    seq = acts.shape[0]
    h = hs.shape[-1]
    w = as_dtype(w_hh, dt)
    gy = as_dtype(gy, dt)
    gys = gy[::-1] if reverse else gy
    dh = np.array(ghn, dtype=dt)
    dc = np.array(gcn, dtype=dt)
    dpre = np.empty_like(acts)
    for t in range(seq - 1, -1, -1):
        dh += gys[t]
        act = acts[t]
        i, f, g, o = act[:, :h], act[:, h:2 * h], act[:, 2 * h:3 * h], act[:, 3 * h:]
        tc = np.tanh(cs[t + 1])
        dc += dh * o * (1.0 - tc * tc)
        d = dpre[t]
        d[:, :h] = dc * g * i * (1.0 - i)
        d[:, h:2 * h] = dc * cs[t] * f * (1.0 - f)
        d[:, 2 * h:3 * h] = dc * i * (1.0 - g * g)
        d[:, 3 * h:] = dh * tc * o * (1.0 - o)
        dc = dc * f
        dh = d @ w
    needs = ctx.needs_grad
    xs = x[::-1] if reverse else x
    dx, dw_ih, db_ih = _input_grads(dpre, xs, w_ih, reverse, needs, b_ih)
    flat = dpre.reshape(-1, 4 * h)
    dw_hh = flat.T @ hs[:-1].reshape(-1, h) if needs[2] else None
    db_hh = flat.sum(axis=0) if needs[4] and b_hh is not None else None
    dh0 = dh if h0 is not None else None
    dc0 = dc if c0 is not None else None
    return dx, dw_ih, dw_hh, db_ih, db_hh, dh0, dc0


# -- gru ----------------------------------------------------------------------------------------
def _gru_infer(x, w_ih, w_hh, b_ih, b_hh, h0, reverse, linear_before_reset):
    y, s = _check_types("gru", 3, x, w_ih, w_hh, b_ih, b_hh, (("h0", h0),))
    return y, s


def _gru_forward(x, w_ih, w_hh, b_ih, b_hh, h0, reverse, linear_before_reset):
    dt, xs, w_hh, pre = _prepare(x, w_ih, w_hh, b_ih, b_hh, (h0,), reverse)
    seq, batch = x.shape[0], x.shape[1]
    h = w_hh.shape[1]
    bhh = np.zeros(3 * h, dt) if b_hh is None else as_dtype(b_hh, dt)
    hs = np.empty((seq + 1, batch, h), dt)
    hs[0] = _state(h0, batch, h, dt)
    rzn = np.empty((seq, batch, 3 * h), dt)  # r, z, n after their activations
    hn = np.empty((seq, batch, h), dt)  # what r multiplies (W_hn h + b_hn), or its result
    w_rz, w_n = np.ascontiguousarray(w_hh[:2 * h].T), np.ascontiguousarray(w_hh[2 * h:].T)
    for t in range(seq):
        prev = hs[t]
        a_rz = pre[t, :, :2 * h] + prev @ w_rz + bhh[:2 * h]
        rzn[t, :, :2 * h] = _sigmoid(a_rz)
        r, z = rzn[t, :, :h], rzn[t, :, h:2 * h]
        if linear_before_reset:
            hn[t] = prev @ w_n + bhh[2 * h:]
            n = np.tanh(pre[t, :, 2 * h:] + r * hn[t])
        else:
            hn[t] = (r * prev) @ w_n + bhh[2 * h:]
            n = np.tanh(pre[t, :, 2 * h:] + hn[t])
        rzn[t, :, 2 * h:] = n
        hs[t + 1] = n + z * (prev - n)
    y = hs[1:][::-1] if reverse else hs[1:]
    return (np.ascontiguousarray(y), hs[seq].copy()), (rzn, hn, hs)


def _gru_kernel(*args, **params):
    return _gru_forward(*args, **params)[0]


def _gru_vjp(ctx, gy, ghn):
    x, w_ih, w_hh, b_ih, b_hh, h0 = ctx.inputs
    rzn, hn, hs = ctx.saved
    reverse, lbr = ctx.params["reverse"], ctx.params["linear_before_reset"]
    dt = rzn.dtype
    seq = rzn.shape[0]
    h = hs.shape[-1]
    w = as_dtype(w_hh, dt)
    w_rz, w_n = w[:2 * h], w[2 * h:]
    gy = as_dtype(gy, dt)
    gys = gy[::-1] if reverse else gy
    dh = np.array(ghn, dtype=dt)
    dpre = np.empty_like(rzn)
    dw_hh = np.zeros_like(w)
    db_hh = np.zeros(3 * h, dt)
    for t in range(seq - 1, -1, -1):
        dh += gys[t]
        prev = hs[t]
        r, z, n = rzn[t, :, :h], rzn[t, :, h:2 * h], rzn[t, :, 2 * h:]
        dan = dh * (1.0 - z) * (1.0 - n * n)  # through n's tanh
        daz = dh * (prev - n) * z * (1.0 - z)
        dprev = dh * z
        if lbr:
            dhn = dan * r
            dar = dan * hn[t] * r * (1.0 - r)
            dprev += dhn @ w_n
            dw_hh[2 * h:] += dhn.T @ prev
            db_hh[2 * h:] += dhn.sum(axis=0)
        else:
            drh = dan @ w_n  # gradient of r * prev
            dar = drh * prev * r * (1.0 - r)
            dprev += drh * r
            dw_hh[2 * h:] += dan.T @ (r * prev)
            db_hh[2 * h:] += dan.sum(axis=0)
        d = dpre[t]
        d[:, :h], d[:, h:2 * h], d[:, 2 * h:] = dar, daz, dan
        drz = d[:, :2 * h]
        dprev += drz @ w_rz
        dw_hh[:2 * h] += drz.T @ prev
        db_hh[:2 * h] += drz.sum(axis=0)
        dh = dprev
    needs = ctx.needs_grad
    xs = x[::-1] if reverse else x
    dx, dw_ih, db_ih = _input_grads(dpre, xs, w_ih, reverse, needs, b_ih)
    return (dx, dw_ih, dw_hh if needs[2] else None, db_ih,
            db_hh if needs[4] and b_hh is not None else None, dh if h0 is not None else None)


# -- records ------------------------------------------------------------------------------------
def _rnn_cost(gates):
    def cost(ins, outs, params) -> OpCost:
        x, w_hh = ins[0], ins[2]
        seq, batch, size = (int(d) for d in x.shape)
        h = int(w_hh.shape[1])
        flops = 2.0 * seq * batch * gates * h * (size + h)
        return OpCost(flops=flops, bytes=(gates + 2) * seq * batch * h * outs[0].dtype.itemsize)
    return cost


def _rnn_samples(gates, states):
    def samples(rng):
        def r(*shape, scale=0.5):
            return rng.standard_normal(shape) * scale

        seq, batch, size, h = 3, 2, 3, 2
        x = r(seq, batch, size, scale=1.0)
        w = (r(gates * h, size), r(gates * h, h), r(gates * h), r(gates * h))
        st = tuple(r(batch, h) for _ in range(states))
        yield Sample(args=(x, *w, *st), name="states")
        yield Sample(args=(x, *w, *st), params={"reverse": True}, name="reverse")
        yield Sample(args=(x, *w[:2], None, None, *(None,) * states), name="nobias_zero_state")
        yield Sample(args=(r(4, 1, 2, scale=1.0), r(gates * 3, 2), r(gates * 3, 3), r(gates * 3),
                           None, *(r(1, 3) for _ in range(states))), name="one_bias")
        yield Sample(args=(r(2, 2, 2, scale=8.0), r(gates * h, 2, scale=4.0),
                           r(gates * h, h, scale=4.0), None, None, *(None,) * states),
                     grad=False, name="saturated")
        if gates == 3:
            yield Sample(args=(x, *w, *st), params={"linear_before_reset": False},
                         name="onnx_default_reset")
            yield Sample(args=(x, *w, *st), params={"linear_before_reset": False,
                                                    "reverse": True}, name="reset_reverse")
    return samples


lstm = OpDef(
    name="lstm", inputs=("x", "w_ih", "w_hh", "b_ih?", "b_hh?", "h0?", "c0?"),
    params={"reverse": Param(kind="bool", default=False,
                             doc="run from the last step (a bidirectional layer's 2nd direction)")},
    kernel=_lstm_kernel, forward=_lstm_forward, infer=_lstm_infer, vjp=_lstm_vjp,
    samples=_rnn_samples(4, 2), traits=OpTraits(cost=_rnn_cost(4)),
    doc="One direction of an LSTM layer over time-major x (seq, batch, input): returns (y, h_n, "
        "c_n). Weights as torch.nn.LSTM's weight_ih_l0 (4H, input) and weight_hh_l0 (4H, H), "
        "gates i, f, g, o; absent biases and states are zeros.",
)

gru = OpDef(
    name="gru", inputs=("x", "w_ih", "w_hh", "b_ih?", "b_hh?", "h0?"),
    params={"reverse": Param(kind="bool", default=False,
                             doc="run from the last step (a bidirectional layer's 2nd direction)"),
            "linear_before_reset": Param(kind="bool", default=True,
                                         doc="True: r * (W_hn h + b_hn) as PyTorch; False: "
                                             "W_hn (r * h) + b_hn (ONNX GRU's default)")},
    kernel=_gru_kernel, forward=_gru_forward, infer=_gru_infer, vjp=_gru_vjp,
    samples=_rnn_samples(3, 1), traits=OpTraits(cost=_rnn_cost(3)),
    doc="One direction of a GRU layer over time-major x (seq, batch, input): returns (y, h_n). "
        "Weights as torch.nn.GRU's weight_ih_l0 (3H, input) and weight_hh_l0 (3H, H), gates r, "
        "z, n; absent biases and state are zeros.",
)

OPS = (lstm, gru)
