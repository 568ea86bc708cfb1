"""``sized_from_data``: ONNX ops whose output sizes are the *values* of an input read at run time
and that ``shape_from_data``'s kinds do not cover: Tile (repeats), OneHot (depth), CenterCropPad
(the target shape), the Hann / Hamming / Blackman windows (the window size) and
NonMaxSuppression (as many index triples as boxes survive), AffineGrid and Col2Im (the image
and block sizes), STFT (the frame step and length), MelWeightMatrix (the bin counts) and DFT
(a one-sided transform over an axis read at run time).

Why an op apart from the ops with static params (``tile``, ``one_hot``): those keep PyTorch's
signatures and params that passes specialise on; these forms follow ONNX's rules for the data
(OneHot counts negative indices from the end, CenterCropPad centres with the smaller half first).
As in ``shape_from_data``, ``dims`` declares the output shape: sizes known at import are kept,
every other is a data size bound when the node runs, and the kernel checks its result against it.
"""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import Dim, DType, OpError, TensorType

KINDS = ("Tile", "OneHot", "CenterCropPad", "HannWindow", "HammingWindow", "BlackmanWindow",
         "NonMaxSuppression", "AffineGrid", "Col2Im", "STFT", "MelWeightMatrix", "DFT")
WINDOWS = ("HannWindow", "HammingWindow", "BlackmanWindow")


def _ints(a, what: str) -> list[int]:
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise OpError(f"ops.sized_from_data: {what} must be an integer tensor, got {a.dtype}")
    return [int(v) for v in a.reshape(-1)]


def _tile(x, repeats):
    reps = _ints(repeats, "Tile repeats")
    if len(reps) != x.ndim or any(r < 0 for r in reps):
        raise OpError(f"ops.sized_from_data: Tile repeats {reps} must be {x.ndim} sizes >= 0")
    return np.tile(x, reps)


def _one_hot(indices, depth, values, axis):
    """ONNX OneHot: ``values[1]`` where the (float indices truncated) index, negative ones
    counted from the end, equals the position along the new axis, ``values[0]`` elsewhere."""
    depth = np.asarray(depth).reshape(-1)
    if depth.size != 1:
        raise OpError(f"ops.sized_from_data: OneHot depth must hold one value, got {depth.size}")
    n = int(depth[0])
    if n < 1:
        raise OpError(f"ops.sized_from_data: OneHot depth must be >= 1, got {depth[0]}")
    values = np.asarray(values).reshape(-1)
    if values.size != 2:
        raise OpError(f"ops.sized_from_data: OneHot values must hold [off, on], got "
                      f"{values.size} values")
    idx = np.asarray(indices)
    idx = np.trunc(idx).astype(np.int64) if idx.dtype.kind == "f" else idx.astype(np.int64)
    idx = np.where(idx < 0, idx + n, idx)
    a = axis % (idx.ndim + 1)
    hit = np.expand_dims(idx, a) == np.arange(n).reshape((n,) + (1,) * (idx.ndim - a))
    return np.where(hit, values[1], values[0]).astype(values.dtype)


def _center_crop_pad(x, shape, axes):
    target = _ints(shape, "CenterCropPad shape")
    axes = list(range(x.ndim)) if axes is None else [a % x.ndim for a in axes]
    if len(target) != len(axes):
        raise OpError(f"ops.sized_from_data: CenterCropPad shape {target} has "
                      f"{len(target)} sizes for {len(axes)} axes")
    out_shape, src, dst = list(x.shape), [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for a, t in zip(axes, target):
        if t < 0:
            raise OpError(f"ops.sized_from_data: CenterCropPad size {t} is negative")
        n = x.shape[a]
        out_shape[a] = t
        if t < n:  # crop: the smaller half of the excess is cut at the start
            src[a] = slice((n - t) // 2, (n - t) // 2 + t)
        elif t > n:  # pad with zeros: the smaller half of the room goes first
            dst[a] = slice((t - n) // 2, (t - n) // 2 + n)
    out = np.zeros(out_shape, x.dtype)
    out[tuple(dst)] = x[tuple(src)]
    return out


def _window(kind, size, periodic, dtype):
    (n,) = _ints(size, f"{kind} size") or [None]
    if n is None or n < 0:
        raise OpError(f"ops.sized_from_data: {kind} size must be one integer >= 0")
    denom = n if periodic else n - 1
    k = np.arange(n, dtype=np.float64)
    phase = 2.0 * np.pi * k / denom if denom > 0 else np.zeros(n)
    if kind == "HannWindow":
        w = 0.5 - 0.5 * np.cos(phase)
    elif kind == "HammingWindow":
        w = 25.0 / 46.0 - (21.0 / 46.0) * np.cos(phase)
    else:
        w = 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2.0 * phase)
    return w.astype((dtype or DType.F32).numpy)


def _corners(boxes, center):
    """(y_min, x_min, y_max, x_max) of each box: corners in either order, or (centre, size)."""
    if center:
        xc, yc, w, h = (boxes[..., k] for k in range(4))
        return yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
    return (np.minimum(boxes[..., 0], boxes[..., 2]), np.minimum(boxes[..., 1], boxes[..., 3]),
            np.maximum(boxes[..., 0], boxes[..., 2]), np.maximum(boxes[..., 1], boxes[..., 3]))


def _iou_above(c, i, j, threshold) -> bool:
    y0, x0, y1, x1 = c
    ih = min(y1[i], y1[j]) - max(y0[i], y0[j])
    iw = min(x1[i], x1[j]) - max(x0[i], x0[j])
    if ih <= 0 or iw <= 0:
        return False
    inter = ih * iw
    a_i, a_j = (y1[i] - y0[i]) * (x1[i] - x0[i]), (y1[j] - y0[j]) * (x1[j] - x0[j])
    union = a_i + a_j - inter
    if a_i <= 0 or a_j <= 0 or union <= 0:
        return False
    return inter / union > threshold


def _first(v, default):
    v = None if v is None else np.asarray(v).reshape(-1)
    return default if v is None or v.size == 0 else v[0].item()


def _nms(boxes, scores, max_out, iou, score, center):
    """ONNX NonMaxSuppression: per batch and class, boxes by falling score (the lower index
    first among equals), above score_threshold when given, each kept unless its IoU with one
    already kept exceeds iou_threshold, at most max_output_boxes_per_class of them."""
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or \
            scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise OpError(f"ops.sized_from_data: NonMaxSuppression boxes {list(boxes.shape)} and "
                      f"scores {list(scores.shape)} must be [B, N, 4] and [B, C, N]")
    limit = max(int(_first(max_out, 0)), 0)
    threshold, floor = float(_first(iou, 0.0)), _first(score, None)
    out = []
    for b in range(boxes.shape[0]):
        c = _corners(boxes[b].astype(np.float64), center)
        for k in range(scores.shape[1]):
            s = scores[b, k]
            order = [i for i in np.argsort(-s.astype(np.float64), kind="stable")
                     if floor is None or s[i] > floor]
            kept = []
            for i in order:
                if len(kept) >= limit:
                    break
                if not any(_iou_above(c, i, j, threshold) for j in kept):
                    kept.append(i)
                    out.append((b, k, int(i)))
    return np.array(out, np.int64).reshape(len(out), 3)


def _affine_grid(theta, size, align_corners):
    """ONNX AffineGrid (torch's affine_grid): theta [N, k, k+1] maps the homogeneous
    (x, y[, z], 1) of each output position, on [-1, 1] corner to corner (align_corners) or
    pixel centre to pixel centre, to the point to sample."""
    dims = _ints(size, "AffineGrid size")
    k = len(dims) - 2
    if k not in (2, 3) or theta.shape != (dims[0], k, k + 1):
        raise OpError(f"ops.sized_from_data: AffineGrid theta {list(theta.shape)} and size "
                      f"{dims} must be [N, 2, 3] with [N, C, H, W], or [N, 3, 4] with "
                      f"[N, C, D, H, W]")
    if any(m < 1 for m in dims[2:]):
        raise OpError(f"ops.sized_from_data: AffineGrid size {dims} holds an empty axis")
    lines = [np.linspace(-1.0, 1.0, m) if align_corners else (np.arange(m) * 2.0 + 1.0) / m - 1
             for m in dims[2:]]
    mesh = np.meshgrid(*lines, indexing="ij")  # (D,) H, W order; the grid holds x first
    homo = np.stack([*reversed(mesh), np.ones_like(mesh[0])], axis=-1).reshape(-1, k + 1)
    grid = np.einsum("nij,pj->npi", theta.astype(np.float64), homo)
    return grid.reshape([dims[0], *dims[2:], k]).astype(theta.dtype)


def _col2im(x, image_shape, block_shape, window):
    """ONNX Col2Im (torch's fold): column ``l`` of x holds, for each channel, one block of the
    (padded) image at sliding position l; overlapping blocks add up, then the pads are cut."""
    img, blk = _ints(image_shape, "Col2Im image_shape"), _ints(block_shape, "Col2Im block_shape")
    k = len(img)
    dil, pads, st = window
    dil, st = list(dil or [1] * k), list(st or [1] * k)
    pads = list(pads or [0] * (2 * k))
    size = int(np.prod(blk))
    if len(blk) != k or x.ndim != 3 or size < 1 or x.shape[1] % size:
        raise OpError(f"ops.sized_from_data: Col2Im input {list(x.shape)} with image_shape "
                      f"{img} and block_shape {blk}: [N, C * prod(block_shape), L] expected")
    padded = [img[i] + pads[i] + pads[i + k] for i in range(k)]
    counts = [(padded[i] - dil[i] * (blk[i] - 1) - 1) // st[i] + 1 for i in range(k)]
    if any(v < 1 for v in counts) or int(np.prod(counts)) != x.shape[2]:
        raise OpError(f"ops.sized_from_data: Col2Im input has {x.shape[2]} columns, the image "
                      f"and window give {counts}")
    n, c = x.shape[0], x.shape[1] // size
    out = np.zeros([n, c, *padded], x.dtype)
    cols = x.reshape(n, c, *blk, *counts)
    every = (slice(None), slice(None))
    for at in np.ndindex(*blk):
        dst = tuple(slice(at[i] * dil[i], at[i] * dil[i] + st[i] * (counts[i] - 1) + 1, st[i])
                    for i in range(k))
        out[every + dst] += cols[every + at]
    return out[every + tuple(slice(pads[i], pads[i] + img[i]) for i in range(k))]


def _stft(signal, frame_step, window, frame_length, onesided):
    """ONNX STFT: frames of ``frame_length`` samples every ``frame_step``, times the window (ones
    by default), each transformed (the first ``L // 2 + 1`` bins when one-sided)."""
    (step,) = _ints(frame_step, "STFT frame_step") or [None]
    if step is None or step < 1:
        raise OpError("ops.sized_from_data: STFT frame_step must be one integer >= 1")
    if frame_length is not None:
        (n,) = _ints(frame_length, "STFT frame_length") or [None]
    else:
        n = np.asarray(window).shape[0] if window is not None else signal.shape[1]
    if window is not None and np.asarray(window).shape != (n,):
        raise OpError(f"ops.sized_from_data: STFT window of shape {list(np.shape(window))} for "
                      f"frame_length {n}")
    if n is None or not 1 <= n <= signal.shape[1]:
        raise OpError(f"ops.sized_from_data: STFT frame_length {n} for a signal of "
                      f"{signal.shape[1]} samples")
    frames = 1 + (signal.shape[1] - n) // step
    at = np.arange(frames)[:, None] * step + np.arange(n)
    z = signal[..., 0] + 1j * signal[..., 1] if signal.shape[-1] == 2 else signal[..., 0]
    z = z.astype(np.complex128)[:, at]
    if window is not None:
        z = z * np.asarray(window, np.float64)
    y = np.fft.fft(z, axis=-1)
    if onesided:
        y = y[..., :n // 2 + 1]
    return np.stack([y.real, y.imag], -1).astype(signal.dtype)


def _mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower, upper, dtype):
    """ONNX MelWeightMatrix, as onnx's reference computes it: triangles between mel-spaced
    edges, rounded down to DFT bins."""
    (mels,) = _ints(num_mel_bins, "MelWeightMatrix num_mel_bins") or [None]
    (length,) = _ints(dft_length, "MelWeightMatrix dft_length") or [None]
    (rate,) = _ints(sample_rate, "MelWeightMatrix sample_rate") or [None]
    if mels is None or length is None or rate is None or mels < 1 or length < 1 or rate < 1:
        raise OpError("ops.sized_from_data: MelWeightMatrix num_mel_bins, dft_length and "
                      "sample_rate must each be one integer >= 1")
    lower, upper = np.asarray(lower).reshape(()), np.asarray(upper).reshape(())
    low_mel = 2595 * np.log1p(lower / 700) / np.log(10)
    high_mel = 2595 * np.log1p(upper / 700) / np.log(10)
    step = (high_mel - low_mel) / (mels + 2)
    edges = np.arange(0, mels + 2) * step + low_mel
    edges = 700 * np.expm1(edges / 2595 * np.log(10))
    edges = ((length + 1) * edges // rate).astype(np.int64)
    bins = length // 2 + 1
    if edges.min() < 0 or edges.max() >= bins:
        raise OpError(f"ops.sized_from_data: MelWeightMatrix edges {float(lower)} to "
                      f"{float(upper)} Hz fall outside the {bins} DFT bins")
    out = np.zeros((bins, mels))
    for i in range(mels):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            out[center, i] = 1
        else:
            j = np.arange(left, center + 1)
            out[j, i] = (j - left) / (center - left)
        if right > center:
            j = np.arange(center, right)
            out[j, i] = (right - j) / (right - center)
    return out.astype((dtype or DType.F32).numpy)


def _dft(x, axis, dft_length, flags):
    """ONNX DFT (opset 20) with its axis read at run time; ``flags`` is (inverse, onesided)."""
    inverse, onesided = (bool(f) for f in flags)
    (a,) = _ints(axis, "DFT axis") or [None]
    r = x.ndim
    if a is None or not (-r <= a <= -2 or 0 <= a <= r - 2):
        raise OpError(f"ops.sized_from_data: DFT axis {a} for a rank-{r} input")
    a %= r
    if dft_length is not None:
        (n,) = _ints(dft_length, "DFT dft_length") or [None]
    else:
        n = 2 * (x.shape[a] - 1) if inverse and onesided else x.shape[a]
    if n is None or n < 1:
        raise OpError(f"ops.sized_from_data: DFT length {n} (must be >= 1)")
    z = x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0]
    z = z.astype(np.complex128)
    if inverse and onesided:
        return np.fft.irfft(z, n=n, axis=a)[..., None].astype(x.dtype)
    y = (np.fft.ifft if inverse else np.fft.fft)(z, n=n, axis=a)
    if onesided:
        y = np.take(y, np.arange(n // 2 + 1), axis=a)
    return np.stack([y.real, y.imag], -1).astype(x.dtype)


def _compute(kind, x, a, b, c, d, axis, axes, periodic, dtype):
    if kind == "DFT":
        return _dft(x, a, b, axes)
    if kind == "STFT":
        return _stft(x, a, b, c, periodic)
    if kind == "MelWeightMatrix":
        return _mel_weight_matrix(x, a, b, c, d, dtype)
    if kind == "Col2Im":
        return _col2im(x, a, b, axes)
    if kind == "AffineGrid":
        return _affine_grid(x, a, periodic)
    if kind == "NonMaxSuppression":
        return _nms(x, a, b, c, d, axis == 1)
    if kind == "Tile":
        return _tile(x, a)
    if kind == "OneHot":
        return _one_hot(x, a, b, axis)
    if kind == "CenterCropPad":
        return _center_crop_pad(x, a, axes)
    return _window(kind, x, periodic, dtype)


def _kernel(x=None, a=None, b=None, c=None, d=None, *, kind, dims, axis=-1, axes=None,
            periodic=True, dtype=None):
    out = np.ascontiguousarray(_compute(kind, x, a, b, c, d, axis, axes, periodic, dtype))
    (want,) = dims
    fixed = [w is not None and not isinstance(w, Dim) for w in want]
    if len(out.shape) != len(want) or any(f and int(w) != n
                                          for f, w, n in zip(fixed, want, out.shape)):
        raise OpError(f"ops.sized_from_data: {kind} gives shape {list(out.shape)}, but dims "
                      f"declares {[str(w) for w in want]}")
    return out


def _infer(x=None, a=None, b=None, c=None, d=None, *, kind, dims, axis=-1, axes=None,
           periodic=True, dtype=None):
    if not (isinstance(dims, tuple) and len(dims) == 1 and isinstance(dims[0], tuple)):
        raise OpError("ops.sized_from_data: dims must hold one shape")
    for v in dims[0]:
        if not isinstance(v, (int, Dim)) or isinstance(v, bool):
            raise OpError(f"ops.sized_from_data: dims holds {v!r}, not a size")
    if x is None:
        raise OpError(f"ops.sized_from_data: {kind} needs its first input")
    if kind == "Col2Im" and (b is None or not b.dtype.is_int):
        raise OpError("ops.sized_from_data: Col2Im needs integer image_shape and block_shape")
    if kind == "AffineGrid" and not x.dtype.is_float:
        raise OpError("ops.sized_from_data: AffineGrid needs a float theta")
    if kind == "NonMaxSuppression":
        if a is None or not (x.dtype.is_float and a.dtype.is_float):
            raise OpError("ops.sized_from_data: NonMaxSuppression needs float boxes and scores")
        return TensorType(DType.I64, dims[0])
    sized_by = x if kind in WINDOWS else a
    if kind != "OneHot" and (sized_by is None or not sized_by.dtype.is_int):
        raise OpError(f"ops.sized_from_data: {kind}'s size input must be an integer tensor")
    if kind == "DFT" and (not x.dtype.is_float or not x.shape or x.shape[-1] not in (1, 2)
                          or not (isinstance(axes, tuple) and len(axes) == 2)):
        raise OpError("ops.sized_from_data: DFT needs a float [..., 1 or 2] input and axes "
                      "(inverse, onesided)")
    if kind == "STFT" and (not x.dtype.is_float or len(x.shape) != 3):
        raise OpError("ops.sized_from_data: STFT needs a float [batch, samples, 1 or 2] signal")
    if kind == "MelWeightMatrix" and (b is None or c is None or d is None):
        raise OpError("ops.sized_from_data: MelWeightMatrix needs all five inputs")
    if kind in WINDOWS or kind == "MelWeightMatrix":
        out = dtype or DType.F32
    elif kind == "OneHot":
        if a is None or b is None:
            raise OpError("ops.sized_from_data: OneHot needs indices, depth and values")
        out = b.dtype
    else:
        out = x.dtype
    return TensorType(out, dims[0])


def _samples(rng):
    r = rng.standard_normal
    i64 = np.int64
    yield Sample(args=(r((2, 3)), np.array([2, 1], i64)),
                 params={"kind": "Tile", "dims": ((4, 3),)}, grad=False, name="tile")
    yield Sample(args=(np.array([[1, -1], [3, -4]], i64), np.array(4, i64),
                       np.array([-2.0, 5.0], np.float32)),
                 params={"kind": "OneHot", "dims": ((2, 4, 2),), "axis": 1}, grad=False,
                 name="one_hot_axis1")
    yield Sample(args=(np.array([1.0, 2.0, -1.0], np.float32), np.array(3.0, np.float32),
                       np.array([0.0, 9.0], np.float32)),
                 params={"kind": "OneHot", "dims": ((3, 3),)}, grad=False,
                 name="one_hot_float_indices")
    yield Sample(args=(r((5, 2, 3)), np.array([2, 5], i64)),
                 params={"kind": "CenterCropPad", "dims": ((2, 5, 3),), "axes": (0, -2)},
                 grad=False, name="center_crop_pad")
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                       [1, 1, 0, 0], [0, 100, 1, 101]]], np.float32)
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3], [0.1, 0.2, 0.9, 0.3, 0.9, 0.0]]],
                      np.float32)
    yield Sample(args=(boxes, scores, np.array([2], i64), np.array([0.5], np.float32),
                       np.array([0.15], np.float32)),
                 params={"kind": "NonMaxSuppression", "dims": ((4, 3),)}, grad=False,
                 name="non_max_suppression")
    centred = np.array([[[0.5, 0.5, 1, 1], [0.5, 0.6, 1, 1], [0.5, 10.5, 1, 1]]], np.float32)
    yield Sample(args=(centred, np.array([[[0.9, 0.8, 0.7]]], np.float32), np.array([3], i64),
                       np.array([0.0], np.float32)),
                 params={"kind": "NonMaxSuppression", "dims": ((2, 3),), "axis": 1},
                 grad=False, name="non_max_suppression_center_no_score_floor")
    yield Sample(args=(r((2, 12, 8)), np.array([4, 5], i64), np.array([2, 3], i64)),
                 params={"kind": "Col2Im", "dims": ((2, 2, 4, 5),),
                         "axes": ((1, 1), (0, 1, 1, 0), (2, 1))}, grad=False,
                 name="col2im_pads_strides")
    for align in (False, True):
        yield Sample(args=(r((2, 2, 3)), np.array([2, 3, 4, 5], i64)),
                     params={"kind": "AffineGrid", "dims": ((2, 4, 5, 2),), "periodic": align},
                     grad=False, name=f"affine_grid_2d_align_{align}")
    yield Sample(args=(r((1, 3, 4)), np.array([1, 1, 2, 3, 2], i64)),
                 params={"kind": "AffineGrid", "dims": ((1, 2, 3, 2, 3),)}, grad=False,
                 name="affine_grid_3d")
    yield Sample(args=(r((2, 20, 2)), np.array(3, i64), r((6,)), np.array(6, i64)),
                 params={"kind": "STFT", "dims": ((2, 5, 4, 2),)}, grad=False, name="stft")
    yield Sample(args=(r((1, 16, 1)), np.array(4, i64), None, np.array(8, i64)),
                 params={"kind": "STFT", "dims": ((1, 3, 8, 2),), "periodic": False},
                 grad=False, name="stft_two_sided_no_window")
    for flags, name in (((0, 1), "rfft"), ((1, 1), "irfft"), ((1, 0), "ifft")):
        n = 4 if flags == (1, 1) else 5
        shape = {(0, 1): (2, 3, 4, 2), (1, 1): (2, 6, 4, 1), (1, 0): (2, 5, 4, 2)}[flags]
        yield Sample(args=(r((2, n, 4, 1 if flags == (0, 1) else 2)), np.array(-3, i64)),
                     params={"kind": "DFT", "dims": (shape,), "axes": flags}, grad=False,
                     name=f"dft_{name}")
    yield Sample(args=(r((3, 5, 1)), np.array(1, i64), np.array(8, i64)),
                 params={"kind": "DFT", "dims": ((3, 5, 2),), "axes": (0, 1)}, grad=False,
                 name="dft_rfft_length")
    yield Sample(args=(np.array(8, np.int32), np.array(16, np.int32), np.array(8192, np.int32),
                       np.array(0.0, np.float32), np.array(4096.0, np.float32)),
                 params={"kind": "MelWeightMatrix", "dims": ((9, 8),)}, grad=False,
                 name="mel_weight_matrix")
    for kind in WINDOWS:
        for periodic in (True, False):
            yield Sample(args=(np.array(7, i64),),
                         params={"kind": kind, "dims": ((7,),), "periodic": periodic,
                                 "dtype": DType.F64}, grad=False,
                         name=f"{kind.lower()}_{'periodic' if periodic else 'symmetric'}")


sized_from_data = OpDef(
    name="sized_from_data", inputs=("x", "a?", "b?", "c?", "d?"),
    params={"kind": Param(kind="str", choices=KINDS, doc="the ONNX op type it computes"),
            "dims": Param(kind="any", doc="the output shape: sizes known at import, data sizes "
                                          "(symbols bound at run time) elsewhere"),
            "axis": Param(kind="int", default=-1,
                          doc="OneHot's axis; NonMaxSuppression's center_point_box"),
            "axes": Param(kind="any", default=None, optional=True,
                          doc="CenterCropPad's axes (None: every axis); Col2Im's (dilations, "
                              "pads, strides); DFT's (inverse, onesided)"),
            "periodic": Param(kind="bool", default=True,
                              doc="a window's periodic; AffineGrid's align_corners; STFT's "
                                  "onesided"),
            "dtype": Param(kind="dtype", default=None, optional=True,
                           doc="a window's or MelWeightMatrix's output dtype")},
    kernel=_kernel, infer=_infer,
    vjp=None,  # only ONNX import makes it; sizes read from data are not differentiable
    samples=_samples,
    doc="An ONNX op (kind: Tile, OneHot, CenterCropPad, a window, NonMaxSuppression, "
        "AffineGrid, Col2Im, STFT, MelWeightMatrix, DFT) whose output sizes are values "
        "of an input read at run time; dims declares the output shape.",
)

OPS = (sized_from_data,)
