"""References for the newer onemodel-ops-nn ops (losses_more, conv_more, pool_more, norm_more,
resize...): element loops and textbook formulas, written apart from the kernels."""
import math

import numpy as np

from .nn import max_pool2d


def _reduce(per, reduction):
    per = np.asarray(per, dtype=float)
    if reduction == "none":
        return per
    return per.sum() if reduction == "sum" else per.mean()


def _each(fn, *arrays):
    b = np.broadcast_arrays(*[np.asarray(a, dtype=float) for a in arrays])
    out = np.empty(b[0].shape)
    for idx in np.ndindex(*out.shape):
        out[idx] = fn(*(a[idx] for a in b))
    return out


# -- losses -------------------------------------------------------------------------------------
def l1_loss(input, target, reduction="mean"):
    return _reduce(_each(lambda x, t: abs(x - t), input, target), reduction)


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    def f(x, t):
        d = abs(x - t)
        return 0.5 * d * d / beta if d < beta else d - 0.5 * beta
    return _reduce(_each(f, input, target), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    def f(x, t):
        d = abs(x - t)
        return 0.5 * d * d if d < delta else delta * (d - 0.5 * delta)
    return _reduce(_each(f, input, target), reduction)


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    def f(x, t, w):
        lx = max(math.log(x), -100.0) if x > 0 else -100.0
        l1x = max(math.log(1 - x), -100.0) if x < 1 else -100.0
        return -w * (t * lx + (1 - t) * l1x)
    w = np.ones_like(input) if weight is None else weight
    return _reduce(_each(f, input, target, w), reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction="mean"):
    def f(x, t, w, pw):
        # -w (pw t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))), logs by cases for large |x|
        log_sig = -math.log1p(math.exp(-x)) if x > 0 else x - math.log1p(math.exp(x))
        log_one_minus = log_sig - x
        return -w * (pw * t * log_sig + (1 - t) * log_one_minus)
    w = np.ones_like(input) if weight is None else weight
    pw = np.ones_like(input) if pos_weight is None else pos_weight
    return _reduce(_each(f, input, target, w, pw), reduction)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    x = np.asarray(input, dtype=float)
    if x.ndim == 1:
        x, target = x[None], np.asarray(target)[None]
    c = x.shape[1]
    w = np.ones(c) if weight is None else np.asarray(weight, dtype=float)
    t = np.asarray(target)
    per = np.zeros(t.shape)
    total_w = 0.0
    for idx in np.ndindex(*t.shape):
        k = int(t[idx])
        if k == ignore_index:
            continue
        full = (idx[0], k) + idx[1:]
        per[idx] = -w[k] * x[full]
        total_w += w[k]
    if np.asarray(input).ndim == 1:
        per = per[0]
    if reduction == "none":
        return per
    return per.sum() if reduction == "sum" else per.sum() / total_w


def kl_div(input, target, reduction="mean", log_target=False):
    def f(x, t):
        if log_target:
            return math.exp(t) * (t - x)
        return 0.0 if t == 0 else t * (math.log(t) - x)
    per = _each(f, input, target)
    if reduction == "batchmean":
        return per.sum() / (per.shape[0] if per.ndim else 1)
    return _reduce(per, reduction)


REFERENCES = {
    "l1_loss": l1_loss,
    "smooth_l1_loss": smooth_l1_loss,
    "huber_loss": huber_loss,
    "binary_cross_entropy": binary_cross_entropy,
    "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits,
    "nll_loss": nll_loss,
    "kl_div": kl_div,
}


# -- conv1d / pools ---------------------------------------------------------------------------
def _one(v):
    return v[0] if isinstance(v, (tuple, list)) else v


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    s, p, d = _one(stride), _one(padding), _one(dilation)
    n, c, length = x.shape
    o, cg, k = weight.shape
    xp = np.zeros((n, c, length + 2 * p))
    xp[:, :, p:p + length] = x
    lo = (length + 2 * p - d * (k - 1) - 1) // s + 1
    og = o // groups
    out = np.zeros((n, o, lo))
    for b in range(n):
        for oc in range(o):
            g = oc // og
            for i in range(lo):
                out[b, oc, i] = sum(weight[oc, ci, j] * xp[b, g * cg + ci, i * s + j * d]
                                    for ci in range(cg) for j in range(k))
                out[b, oc, i] += 0.0 if bias is None else bias[oc]
    return out


def _pool1d(x, k, s, p, d, ceil_mode, reduce, include_pad=True):
    k, p, d = _one(k), _one(p), _one(d)
    s = k if s is None else _one(s)
    n, c, length = x.shape
    span = length + 2 * p - d * (k - 1) - 1
    lo = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (lo - 1) * s >= length + p:
        lo -= 1
    out = np.zeros((n, c, lo))
    for i in range(lo):
        taps = [i * s + j * d - p for j in range(k)]
        inside = [t for t in taps if 0 <= t < length]
        if reduce == "max":
            out[:, :, i] = np.max(x[:, :, inside], axis=-1)
        else:
            count = len([t for t in taps if -p <= t < length + p]) if include_pad else len(inside)
            out[:, :, i] = x[:, :, inside].sum(axis=-1) / count
    return out


def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:  # a plane of height one: the 2-D reference's index is the position
        values, idx = max_pool2d(x[:, :, None, :], (1, _one(kernel_size)),
                                 None if stride is None else (1, _one(stride)),
                                 (0, _one(padding)), (1, _one(dilation)), ceil_mode, True)
        return values[:, :, 0, :], idx[:, :, 0, :]
    return _pool1d(x, kernel_size, stride, padding, dilation, ceil_mode, "max")


def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _pool1d(x, kernel_size, stride, padding, 1, ceil_mode, "avg", count_include_pad)


def _cells(length, out):
    return [(math.floor(i * length / out), math.ceil((i + 1) * length / out)) for i in range(out)]


def _adaptive_max_indices(x, output_size):
    """Each window's first maximum (row-major) as a flat index into its (H, W) plane."""
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * 2
    h, w = x.shape[-2:]
    sizes = [(h, w)[a] if o is None else o for a, o in enumerate(sizes)]
    out = np.zeros(x.shape[:-2] + tuple(sizes), np.int64)
    for lead in np.ndindex(*x.shape[:-2]):
        for ci, (r0, r1) in enumerate(_cells(h, sizes[0])):
            for cj, (c0, c1) in enumerate(_cells(w, sizes[1])):
                best = None
                for r in range(r0, r1):
                    for c in range(c0, c1):
                        if best is None or x[lead + (r, c)] > x[lead + best]:
                            best = (r, c)
                out[lead + (ci, cj)] = best[0] * w + best[1]
    return out


def _adaptive_max(x, output_size, return_indices=False):
    values = _adaptive(x, output_size, 2, "max")
    return (values, _adaptive_max_indices(x, output_size)) if return_indices else values


def _adaptive(x, output_size, n, reduce):
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * n
    sizes = [x.shape[-n + a] if o is None else o for a, o in enumerate(sizes)]
    lead = x.shape[:-n]
    out = np.zeros(lead + tuple(sizes))
    grids = [_cells(x.shape[-n + a], sizes[a]) for a in range(n)]
    for cell in np.ndindex(*sizes):
        sl = tuple(slice(*grids[a][cell[a]]) for a in range(n))
        win = x[(Ellipsis,) + sl].reshape(lead + (-1,))
        out[(Ellipsis,) + cell] = win.max(axis=-1) if reduce == "max" else win.mean(axis=-1)
    return out


REFERENCES.update({
    "conv1d": conv1d,
    "max_pool1d": max_pool1d,
    "avg_pool1d": avg_pool1d,
    "adaptive_avg_pool1d": lambda x, output_size: _adaptive(x, output_size, 1, "avg"),
    "adaptive_avg_pool2d": lambda x, output_size: _adaptive(x, output_size, 2, "avg"),
    "adaptive_max_pool2d": _adaptive_max,
})


# -- norms --------------------------------------------------------------------------------------
def group_norm(x, weight=None, bias=None, num_groups=1, eps=1e-5):
    n, c = x.shape[:2]
    out = np.empty(x.shape)
    per = c // num_groups
    for b in range(n):
        for g in range(num_groups):
            block = x[b, g * per:(g + 1) * per]
            mu = block.sum() / block.size
            var = ((block - mu) ** 2).sum() / block.size
            out[b, g * per:(g + 1) * per] = (block - mu) / math.sqrt(var + eps)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        out = out * np.reshape(weight, shape)
    if bias is not None:
        out = out + np.reshape(bias, shape)
    return out


def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    c = x.shape[1]
    if use_input_stats:
        out = group_norm(x, None, None, c, eps)
    else:
        shape = (1, c) + (1,) * (x.ndim - 2)
        out = (x - np.reshape(running_mean, shape)) / np.sqrt(np.reshape(running_var, shape) + eps)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        out = out * np.reshape(weight, shape)
    if bias is not None:
        out = out + np.reshape(bias, shape)
    return out


def rms_norm(x, weight=None, normalized_shape=None, eps=None):
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    eps = np.finfo(x.dtype).eps if eps is None else eps
    lead = x.shape[:x.ndim - k]
    out = np.empty(x.shape)
    for idx in np.ndindex(*lead):
        block = x[idx]
        out[idx] = block / math.sqrt((block ** 2).sum() / block.size + eps)
    return out if weight is None else out * weight


def normalize(x, p=2.0, axis=1, eps=1e-12):
    moved = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    out = np.empty(moved.shape)
    for idx in np.ndindex(*moved.shape[:-1]):
        v = moved[idx]
        norm = sum(abs(e) ** p for e in v) ** (1.0 / p)
        out[idx] = v / max(norm, eps)
    return np.moveaxis(out, -1, axis)


def cosine_similarity(x1, x2, axis=1, eps=1e-8):
    a, b = np.broadcast_arrays(np.asarray(x1, dtype=float), np.asarray(x2, dtype=float))
    a, b = np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1)
    out = np.empty(a.shape[:-1])
    for idx in np.ndindex(*out.shape):
        u, v = a[idx], b[idx]
        nu, nv = math.sqrt(sum(e * e for e in u)), math.sqrt(sum(e * e for e in v))
        out[idx] = sum(p * q for p, q in zip(u, v)) / (max(nu, eps) * max(nv, eps))
    return out


REFERENCES.update({"group_norm": group_norm, "instance_norm": instance_norm,
                   "rms_norm": rms_norm, "normalize": normalize,
                   "cosine_similarity": cosine_similarity})


# -- transposed convolutions: every input pixel scatters its weighted kernel ----------------------
def _pair2(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    (sh, sw), (ph, pw), (oh, ow), (dh, dw) = map(_pair2, (stride, padding, output_padding,
                                                           dilation))
    n, cin, h, w = x.shape
    _, cog, kh, kw = weight.shape
    H = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oh + 1
    W = (w - 1) * sw - 2 * pw + dw * (kw - 1) + ow + 1
    full = np.zeros((n, cog * groups, H + 2 * ph + sh + dh * kh, W + 2 * pw + sw + dw * kw))
    cig = cin // groups
    for b in range(n):
        for ci in range(cin):
            g = ci // cig
            for y in range(h):
                for xx in range(w):
                    for co in range(cog):
                        for i in range(kh):
                            for j in range(kw):
                                full[b, g * cog + co, y * sh + i * dh, xx * sw + j * dw] += \
                                    x[b, ci, y, xx] * weight[ci, co, i, j]
    out = full[:, :, ph:ph + H, pw:pw + W]
    if bias is not None:
        out = out + np.reshape(bias, (1, -1, 1, 1))
    return out


def conv_transpose1d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return conv_transpose2d(x[:, :, None, :], weight[:, :, None, :], bias, (1, _one(stride)),
                            (0, _one(padding)), (0, _one(output_padding)), groups,
                            (1, _one(dilation)))[:, :, 0, :]


REFERENCES.update({"conv_transpose2d": conv_transpose2d, "conv_transpose1d": conv_transpose1d})


# -- interpolate / pixel_shuffle: output pixel by output pixel -----------------------------------
def _source(j, n_in, n_out, mode, align_corners, scale):
    """(index, weight) pairs of output j along one axis, PyTorch's coordinate rules."""
    if mode == "nearest":
        s = n_in / n_out if scale is None else 1.0 / scale
        return [(min(int(math.floor(j * s)), n_in - 1), 1.0)]
    if align_corners:
        src = j * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        s = n_in / n_out if scale is None else 1.0 / scale
        src = max((j + 0.5) * s - 0.5, 0.0)
    lo = min(int(math.floor(src)), n_in - 1)
    hi = min(lo + 1, n_in - 1)
    return [(lo, 1.0 - (src - lo)), (hi, src - lo)]


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    n = x.ndim - 2
    sizes = size if isinstance(size, (tuple, list)) else ([size] * n if size is not None else None)
    scales = scale_factor if isinstance(scale_factor, (tuple, list)) else [scale_factor] * n
    outs = [sizes[a] if sizes else int(math.floor(x.shape[2 + a] * scales[a])) for a in range(n)]
    out = np.zeros(x.shape[:2] + tuple(outs))
    for cell in np.ndindex(*outs):
        taps = [_source(cell[a], x.shape[2 + a], outs[a], mode, align_corners,
                        None if sizes else scales[a]) for a in range(n)]
        for combo in np.ndindex(*[len(t) for t in taps]):
            idx = tuple(taps[a][combo[a]][0] for a in range(n))
            w = math.prod(taps[a][combo[a]][1] for a in range(n))
            out[(Ellipsis,) + cell] += w * x[(Ellipsis,) + idx]
    return out


def pixel_shuffle(x, upscale_factor):
    r = upscale_factor
    *lead, c, h, w = x.shape
    out = np.zeros((*lead, c // (r * r), h * r, w * r))
    for co in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[..., co, i::r, j::r] = x[..., co * r * r + i * r + j, :, :]
    return out


def pixel_unshuffle(x, downscale_factor):
    r = downscale_factor
    *lead, c, h, w = x.shape
    out = np.zeros((*lead, c * r * r, h // r, w // r))
    for ci in range(c):
        for i in range(r):
            for j in range(r):
                out[..., ci * r * r + i * r + j, :, :] = x[..., ci, i::r, j::r]
    return out


REFERENCES.update({"interpolate": interpolate, "pixel_shuffle": pixel_shuffle,
                   "pixel_unshuffle": pixel_unshuffle})
