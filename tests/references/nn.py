"""References for onemodel-ops-nn: plain loops and textbook formulas, written apart from the
kernels (direct convolution, per-window pooling, probability-space CTC dynamic programming)."""
import copy
import math

import numpy as np

import onemodel.core.random as om_random


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _lse(x, axis):
    return np.logaddexp.reduce(x, axis=axis, keepdims=True)


def linear(x, weight, bias=None):
    y = np.einsum("...i,oi->...o", x, weight)
    return y if bias is None else y + bias


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    xp = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    xp[:, :, ph:ph + h, pw:pw + w] = x
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, ho, wo))
    for b in range(n):
        for oc in range(o):
            grp = oc // og
            for y in range(ho):
                for xx in range(wo):
                    acc = 0.0
                    for ci in range(cg):
                        for i in range(kh):
                            for j in range(kw):
                                acc += (weight[oc, ci, i, j]
                                        * xp[b, grp * cg + ci, y * sh + i * dh, xx * sw + j * dw])
                    out[b, oc, y, xx] = acc + (0.0 if bias is None else bias[oc])
    return out


def _pool(x, kernel_size, stride, padding, dilation, ceil_mode, reduce, include=None):
    """Window by window, with PyTorch's output-size rule (written apart from the kernels)."""
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(kernel_size if stride is None else stride)
    dh, dw = _pair(dilation)
    if isinstance(padding, (tuple, list)) and len(padding) == 4:
        pt, pl, pb, pr = padding
    else:
        pt, pl = _pair(padding)
        pb, pr = pt, pl
    n, c, h, w = x.shape

    def size(length, k, s, d, b, e):
        span = length + b + e - d * (k - 1) - 1
        if not ceil_mode:
            return span // s + 1
        out = math.ceil(span / s) + 1
        return out - 1 if (out - 1) * s >= length + b else out

    ho, wo = size(h, kh, sh, dh, pt, pb), size(w, kw, sw, dw, pl, pr)
    out = np.zeros((n, c, ho, wo))
    for y in range(ho):
        for xx in range(wo):
            vals, count, places = [], 0, []
            for i in range(kh):
                for j in range(kw):
                    r, q = y * sh + i * dh - pt, xx * sw + j * dw - pl
                    inside = 0 <= r < h and 0 <= q < w
                    in_pads = -pt <= r < h + pb and -pl <= q < w + pr
                    if inside:
                        vals.append(x[:, :, r, q])
                        places.append(r * w + q)
                    if inside or (include and in_pads):
                        count += 1
            out[:, :, y, xx] = reduce(vals, count) if reduce else \
                np.asarray(places)[np.argmax(vals, axis=0)]  # first maximum, row-major taps
    return out


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    values = _pool(x, kernel_size, stride, padding, dilation, ceil_mode,
                   lambda vals, count: np.max(vals, axis=0))
    if not return_indices:
        return values
    return values, _pool(x, kernel_size, stride, padding, dilation, ceil_mode, None).astype(
        np.int64)


def avg_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               count_include_pad=True):
    return _pool(x, kernel_size, stride, padding, dilation, ceil_mode,
                 lambda vals, count: np.sum(vals, axis=0) / count, include=count_include_pad)


def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    axes = tuple(i for i in range(x.ndim) if i != 1)
    if training:
        mean, var = x.mean(axis=axes), x.var(axis=axes)
    else:
        mean, var = running_mean, running_var
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def layer_norm(x, weight=None, bias=None, normalized_shape=None, eps=1e-5):
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    flat = x.reshape(x.shape[:x.ndim - k] + (-1,))
    y = ((flat - flat.mean(-1, keepdims=True)) / np.sqrt(flat.var(-1, keepdims=True) + eps))
    y = y.reshape(x.shape)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def softmax(x, axis=-1):
    return np.exp(x - _lse(x, axis))


def log_softmax(x, axis=-1):
    return x - _lse(x, axis)


def gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(x)


def dropout(x, p=0.5, training=True):
    if not training or p == 0:
        return x
    if p == 1:
        return np.zeros_like(x)
    # the documented draw: keep where generator().random(shape, float32) >= p; a copy of the
    # generator predicts the mask the op is about to draw
    rng = copy.deepcopy(om_random.generator())
    keep = rng.random(x.shape, dtype=np.float32) >= np.float32(p)
    return np.where(keep, x / (1 - p), 0.0)


def embedding(indices, weight):
    flat = [weight[i] for i in np.asarray(indices).reshape(-1)]
    return np.array(flat).reshape(np.shape(indices) + (weight.shape[1],))


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = np.einsum("...le,...se->...ls", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        if mask.dtype == bool:
            scores = np.where(mask, scores, -np.inf)
        else:
            scores = scores + mask
    return np.einsum("...ls,...sv->...lv", softmax(scores, -1), v)


def _reduce(per, reduction, denominator=None):
    if reduction == "none":
        return per
    if reduction == "sum":
        return per.sum()
    return per.sum() / (per.size if denominator is None else denominator)


def mse_loss(input, target, reduction="mean"):
    return _reduce((input - target) ** 2, reduction)


def cross_entropy(logits, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """PyTorch's formula, one row at a time: the target (one-hot, or the given probabilities)
    mixed with the uniform distribution by ``label_smoothing``, each class scaled by ``weight``;
    'mean' divides by the summed weights of the class-index targets kept (by the row count for
    probability targets)."""
    if logits.ndim == 1:
        logits, target = logits[None], np.asarray(target)[None]
        squeeze = True
    else:
        squeeze = False
    c = logits.shape[1]
    w = np.ones(c) if weight is None else np.asarray(weight, np.float64)
    eps = label_smoothing
    lsm = np.moveaxis(logits, 1, -1).reshape(-1, c)
    logp = lambda r, j: lsm[r, j] - np.logaddexp.reduce(lsm[r])  # noqa: E731
    if target.dtype.kind == "f":
        tp = np.moveaxis(target, 1, -1).reshape(-1, c)
        per = np.array([-sum(w[j] * (tp[r, j] * (1 - eps) + eps / c) * logp(r, j)
                             for j in range(c)) for r in range(len(lsm))])
        per = per.reshape(np.moveaxis(logits, 1, -1).shape[:-1])
        count = per.size
    else:
        flat_t = target.reshape(-1)
        per = np.zeros(len(flat_t))
        count = 0.0
        for r, t in enumerate(flat_t):
            if t == ignore_index:
                continue
            count += w[t]
            per[r] = -sum(w[j] * ((1 - eps) * (j == t) + eps / c) * logp(r, j) for j in range(c))
        per = per.reshape(target.shape)
    if squeeze:
        per = per[0]
    return _reduce(per, reduction, count)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean"):
    """Plain dynamic programming in probability space, one sequence and one frame at a time."""
    probs = np.exp(log_probs)
    t_max, n, c = probs.shape
    if targets.ndim == 1:
        starts = np.concatenate([[0], np.cumsum(target_lengths)[:-1]])
        seqs = [list(targets[s:s + ln]) for s, ln in zip(starts, target_lengths)]
    else:
        seqs = [list(targets[b, :target_lengths[b]]) for b in range(n)]
    losses = []
    for b in range(n):
        label = [blank]
        for ch in seqs[b]:
            label += [int(ch), blank]
        big_l = len(label)
        frames = int(input_lengths[b])
        a = [0.0] * big_l
        a[0] = probs[0, b, label[0]]
        if big_l > 1:
            a[1] = probs[0, b, label[1]]
        for t in range(1, frames):
            new = [0.0] * big_l
            for s in range(big_l):
                total = a[s]
                if s >= 1:
                    total += a[s - 1]
                if s >= 2 and label[s] != blank and label[s] != label[s - 2]:
                    total += a[s - 2]
                new[s] = total * probs[t, b, label[s]]
            a = new
        p = a[big_l - 1] + (a[big_l - 2] if big_l > 1 else 0.0)
        losses.append(-math.log(p) if p > 0 else math.inf)
    losses = np.array(losses)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return np.mean(losses / np.maximum(np.asarray(target_lengths), 1))


def hardsigmoid(x, alpha=1.0 / 6.0, beta=0.5):
    flat = [min(1.0, max(0.0, alpha * float(v) + beta)) for v in np.asarray(x).reshape(-1)]
    return np.array(flat).reshape(np.shape(x))


def hardswish(x):
    # PyTorch's definition: x * relu6(x + 3) / 6, element by element
    flat = [float(v) * min(6.0, max(0.0, float(v) + 3.0)) / 6.0 for v in np.asarray(x).reshape(-1)]
    return np.array(flat).reshape(np.shape(x))


_ACTIVATIONS = {
    "relu": lambda y: np.where(y > 0, y, 0.0),
    "sigmoid": lambda y: 1.0 / (1.0 + np.exp(-y)),
    "tanh": np.tanh,
    "gelu": gelu,
    "gelu_tanh": lambda y: gelu(y, approximate="tanh"),
}


def fused_linear(x, weight, bias=None, activation="relu"):
    return _ACTIVATIONS[activation](linear(x, weight, bias))


def fused_conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                 activation="relu"):
    return _ACTIVATIONS[activation](conv2d(x, weight, bias, stride, padding, dilation, groups))


REFERENCES = {
    "fused_linear": fused_linear,
    "fused_conv2d": fused_conv2d,
    "hardsigmoid": hardsigmoid,
    "hardswish": hardswish,
    "linear": linear,
    "conv2d": conv2d,
    "max_pool2d": max_pool2d,
    "avg_pool2d": avg_pool2d,
    "batch_norm": batch_norm,
    "layer_norm": layer_norm,
    "softmax": softmax,
    "log_softmax": log_softmax,
    "gelu": gelu,
    "dropout": dropout,
    "embedding": embedding,
    "scaled_dot_product_attention": scaled_dot_product_attention,
    "mse_loss": mse_loss,
    "cross_entropy": cross_entropy,
    "ctc_loss": ctc_loss,
}
