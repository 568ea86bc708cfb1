"""ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean").

PyTorch's layout and semantics: log_probs (T, N, C), targets (N, S) padded (or 1-d, the targets
concatenated), lengths (N,). The forward-backward recursions run in log space, vectorised over the
batch and the extended label sequence ``blank l1 blank l2 ... blank`` (a loop over time only).
The gradient is that of the loss with respect to log_probs taken as independent inputs:
``-sum_{s: l'_s = c} alpha_t(s) beta_t(s) / (y_t(c) p)``. An impossible alignment gives an infinite
loss (zero_infinity=False) and, as in PyTorch, a NaN gradient for that sequence.
"""
from __future__ import annotations

import numpy as np

from onemodel.core import TensorType
from onemodel.errors import OpError
from onemodel.registry import OpDef, Param, Sample

from ._common import LOSS_UNTRACEABLE, REDUCTIONS, check_dim, float_dtype, int_dtype

_NEG_INF = -np.inf


def _infer(log_probs, targets, input_lengths, target_lengths, blank, reduction):
    dtype = float_dtype("ctc_loss", log_probs)
    if log_probs.ndim != 3:
        raise ValueError(f"log_probs must be (T, N, C), got {log_probs}")
    for name, t in (("targets", targets), ("input_lengths", input_lengths),
                    ("target_lengths", target_lengths)):
        int_dtype("ctc_loss", name, t)
    t_, n, c = log_probs.shape
    if targets.ndim == 2:
        check_dim("ctc_loss", f"the batch size of targets {targets} (log_probs {log_probs})",
                  targets.shape[0], n)
    elif targets.ndim != 1:
        raise ValueError(f"targets must be (N, S) padded or 1-d concatenated, got {targets}")
    for name, t in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if t.ndim != 1:
            raise ValueError(f"{name} must be 1-d (N,), got {t}")
        check_dim("ctc_loss", f"the size of {name} {t} (log_probs {log_probs})", t.shape[0], n)
    if isinstance(c, int) and not 0 <= blank < c:
        raise ValueError(f"blank {blank} is out of range for {c} classes")
    return TensorType(dtype, (n,) if reduction == "none" else ())


def _padded_targets(targets, tl, n):
    if targets.ndim == 2:
        return targets
    if targets.size != tl.sum():
        raise OpError(f"ops.ctc_loss: 1-d targets hold {targets.size} labels but target_lengths "
                      f"sum to {tl.sum()}")
    out = np.zeros((n, max(int(tl.max(initial=0)), 1)), dtype=targets.dtype)
    starts = np.concatenate([[0], np.cumsum(tl)[:-1]])
    pos = np.arange(out.shape[1])
    keep = pos[None, :] < tl[:, None]
    out[keep] = targets[(starts[:, None] + pos[None, :])[keep]]
    return out


def _setup(log_probs, targets, input_lengths, target_lengths, blank):
    t_max, n, c = log_probs.shape
    il = np.asarray(input_lengths, dtype=np.int64).reshape(n)
    tl = np.asarray(target_lengths, dtype=np.int64).reshape(n)
    targets = _padded_targets(np.asarray(targets), tl, n)
    s = targets.shape[1]
    if n and (il.min() < 0 or il.max() > t_max):
        raise OpError(f"ops.ctc_loss: input_lengths must be in [0, {t_max}], got {il.tolist()}")
    if n and (tl.min() < 0 or tl.max() > s):
        raise OpError(f"ops.ctc_loss: target_lengths must be in [0, {s}], got {tl.tolist()}")
    pos = np.arange(s)
    inside = pos[None, :] < tl[:, None]
    labels = np.where(inside, targets, blank).astype(np.int64)
    if labels.size and (labels.min() < 0 or labels.max() >= c):
        raise OpError(f"ops.ctc_loss: a target label is out of range for {c} classes")
    big_l = 2 * s + 1
    ext = np.full((n, big_l), blank, dtype=np.int64)
    ext[:, 1::2] = labels
    # the skip transition s-2 -> s: only onto a label that differs from the one two back
    skip = np.zeros((n, big_l), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    lpe = np.take_along_axis(log_probs, ext[None, :, :], axis=2)  # (T, N, L)
    # the recursions run in float64 whatever the input: alpha and beta sum log-probabilities as
    # large as the input's (-2e4 from logits of +-1e4), where float32's spacing (0.002) would
    # make the gradient (exp of their differences) off by ~0.4%
    return il, tl, ext, skip, lpe.astype(np.float64, copy=False)


def _lse3(a, b, c):
    return np.logaddexp(np.logaddexp(a, b), c)


def _alpha(lpe, skip, tl):
    t_max, n, big_l = lpe.shape
    alpha = np.full((t_max, n, big_l), _NEG_INF, dtype=lpe.dtype)
    if t_max == 0:
        return alpha
    alpha[0, :, 0] = lpe[0, :, 0]
    if big_l > 1:
        alpha[0, :, 1] = np.where(tl > 0, lpe[0, :, 1], _NEG_INF)
    prev = np.full((n, big_l + 2), _NEG_INF, dtype=lpe.dtype)  # two -inf columns in front
    neg = np.full((n, big_l), _NEG_INF, dtype=lpe.dtype)
    for t in range(1, t_max):
        prev[:, 2:] = alpha[t - 1]
        two_back = np.where(skip, prev[:, :-2], neg)
        alpha[t] = _lse3(prev[:, 2:], prev[:, 1:-1], two_back) + lpe[t]
    return alpha


def _beta(lpe, skip, il, tl):
    t_max, n, big_l = lpe.shape
    beta = np.full((t_max, n, big_l), _NEG_INF, dtype=lpe.dtype)
    pos = np.arange(big_l)
    ends = (pos[None, :] == 2 * tl[:, None]) | ((pos[None, :] == 2 * tl[:, None] - 1)
                                                 & (tl[:, None] > 0))
    skip_next = np.zeros((n, big_l), dtype=bool)  # s -> s+2 allowed iff skip[s+2]
    skip_next[:, :-2] = skip[:, 2:]
    nxt = np.full((n, big_l + 2), _NEG_INF, dtype=lpe.dtype)  # two -inf columns behind
    neg = np.full((n, big_l), _NEG_INF, dtype=lpe.dtype)
    for t in range(t_max - 1, -1, -1):
        if t + 1 < t_max:
            nxt[:, :big_l] = beta[t + 1]
        two_ahead = np.where(skip_next, nxt[:, 2:], neg)
        rec = _lse3(nxt[:, :big_l], nxt[:, 1:big_l + 1], two_ahead) + lpe[t]
        start = (il == t + 1)[:, None] & ends
        beta[t] = np.where(start, lpe[t], rec)
    return beta


def _forward(log_probs, targets, input_lengths, target_lengths, blank, reduction):
    t_max, n, c = log_probs.shape
    il, tl, ext, skip, lpe = _setup(log_probs, targets, input_lengths, target_lengths, blank)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        alpha = _alpha(lpe, skip, tl)
        rows = np.arange(n)
        last = alpha[np.maximum(il - 1, 0), rows]  # (N, L) at each sequence's last frame
        end = last[rows, 2 * tl]
        end = np.logaddexp(end, np.where(tl > 0, last[rows, np.maximum(2 * tl - 1, 0)],
                                         _NEG_INF))
        end = np.where(il > 0, end, np.where(tl == 0, 0.0, _NEG_INF))  # empty input
        nll = (-end).astype(log_probs.dtype)
    out = _reduce(nll, tl, reduction)
    return out, (-end, il, tl, ext, skip, lpe, alpha)  # the float64 nll: the vjp needs it


def _reduce(nll, tl, reduction):
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum(dtype=nll.dtype)
    return (nll / np.maximum(tl, 1).astype(nll.dtype)).mean(dtype=nll.dtype)


def _kernel(*args, **params):
    return _forward(*args, **params)[0]


def _vjp(ctx, g):
    log_probs = ctx.inputs[0]
    if not ctx.needs_grad[0]:
        return None, None, None, None
    nll, il, tl, ext, skip, lpe, alpha = ctx.saved
    t_max, n, c = log_probs.shape
    reduction = ctx.params["reduction"]
    dt = lpe.dtype  # float64 (see _setup); the gradient is cast back to the input's dtype
    g = np.asarray(g, dtype=dt)
    if reduction == "none":
        scale = g
    elif reduction == "sum":
        scale = np.broadcast_to(g, (n,))
    else:
        scale = g / (n * np.maximum(tl, 1).astype(dt))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        beta = _beta(lpe, skip, il, tl)
        ab = alpha + beta
        # occupancy of each extended position: alpha * beta / (y * p), in [0, 1]
        occ = np.where(ab == _NEG_INF, 0.0, np.exp(ab - lpe + nll[None, :, None])).astype(dt)
        onehot = (ext[:, :, None] == np.arange(c)[None, None, :]).astype(dt)  # (N, L, C)
        post = np.matmul(occ.transpose(1, 0, 2), onehot).transpose(1, 0, 2)  # (T, N, C)
        grad = -post * scale[None, :, None]
        impossible = np.isinf(nll)
        if impossible.any():  # PyTorch (zero_infinity=False): NaN over the sequence's frames
            frames = np.arange(t_max)[:, None] < il[None, :]
            grad[frames & impossible[None, :]] = np.nan
    return grad.astype(log_probs.dtype, copy=False), None, None, None


def _samples(rng):
    def log_probs(t, n, c):
        x = rng.standard_normal((t, n, c))
        return x - np.log(np.exp(x).sum(axis=2, keepdims=True))

    targets = np.array([[1, 2, 2], [3, 1, 0]], dtype=np.int64)  # repeated label, padding
    il = np.array([6, 5], dtype=np.int64)
    tl = np.array([3, 2], dtype=np.int64)
    for red in REDUCTIONS:
        yield Sample(args=(log_probs(6, 2, 4), targets, il, tl), params={"reduction": red},
                     name=red)
    yield Sample(args=(log_probs(5, 3, 3), np.array([[1, 1], [2, 0], [0, 0]]),
                       np.array([5, 4, 3]), np.array([2, 1, 0])), params={"reduction": "sum"},
                 name="empty_target")
    yield Sample(args=(log_probs(5, 2, 4), np.array([2, 2, 3, 1, 3], dtype=np.int32),
                       np.array([5, 4], dtype=np.int32), np.array([3, 2], dtype=np.int32)),
                 params={"blank": 0}, name="concatenated")
    yield Sample(args=(log_probs(4, 2, 3), np.array([[0, 1], [1, 1]]), np.array([4, 4]),
                       np.array([2, 2])), params={"blank": 2, "reduction": "none"},
                 name="blank_last")
    yield Sample(args=(log_probs(3, 2, 3), np.array([[1, 1], [1, 1]]), np.array([3, 2]),
                       np.array([2, 2])), params={"reduction": "none"}, grad=False,
                 name="impossible")


ctc_loss = OpDef(
    name="ctc_loss", inputs=("log_probs", "targets", "input_lengths", "target_lengths"),
    params={"blank": Param(kind="int", default=0),
            "reduction": Param(kind="str", default="mean", choices=REDUCTIONS)},
    kernel=_kernel, forward=_forward, infer=_infer, vjp=_vjp, samples=_samples,
    untraceable=LOSS_UNTRACEABLE,
    doc="Connectionist temporal classification loss (torch.nn.functional.ctc_loss, "
        "zero_infinity=False): log_probs (T, N, C), targets (N, S) padded or concatenated, "
        "lengths (N,); 'mean' divides each loss by its target length, then averages.",
)

OPS = (ctc_loss,)
