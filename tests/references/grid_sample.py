"""grid_sample, point by point in scalar Python after PyTorch's GridSampler.h (unnormalize,
clip / reflect, then the taps), written apart from the vectorised kernel."""
import itertools
import math

import numpy as np


def _unnormalize(c, size, align_corners):
    return (c + 1) / 2 * (size - 1) if align_corners else ((c + 1) * size - 1) / 2


def _reflect(v, twice_low, twice_high):
    if twice_low == twice_high:
        return 0.0
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    v = abs(v - lo)
    extra = math.fmod(v, span)
    flips = math.floor(v / span)
    return extra + lo if flips % 2 == 0 else span - extra + lo


def _pad(v, size, padding_mode, align_corners):
    if padding_mode == "border":
        return min(max(v, 0.0), size - 1.0)
    if padding_mode == "reflection":
        v = (_reflect(v, 0, 2 * (size - 1)) if align_corners
             else _reflect(v, -1, 2 * size - 1))
        return min(max(v, 0.0), size - 1.0)
    return v


def _cubic_weights(t, a=-0.75):
    def k(x):
        x = abs(x)
        if x <= 1:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        if x < 2:
            return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return 0.0
    return [k(t + 1), k(t), k(1 - t), k(2 - t)]


def _taps(c, size, mode, padding_mode, align_corners):
    """(index or None for a zero, weight) pairs along one axis."""
    u = _unnormalize(float(c), size, align_corners)
    if mode == "bicubic":
        f = math.floor(u)
        out = []
        for k, w in zip(range(-1, 3), _cubic_weights(u - f)):
            i = int(_pad(float(f + k), size, padding_mode, align_corners))
            out.append((i if 0 <= i < size else None, w))
        return out
    u = _pad(u, size, padding_mode, align_corners)
    if mode == "nearest":
        i = int(np.rint(u))
        return [(i if 0 <= i < size else None, 1.0)]
    f = math.floor(u)
    t = u - f
    return [(i if 0 <= i < size else None, w) for i, w in ((f, 1 - t), (f + 1, t))]


def grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    n_sp = x.ndim - 2
    spatial = x.shape[2:]
    out = np.zeros(x.shape[:2] + grid.shape[1:-1])
    for n in range(x.shape[0]):
        for pos in np.ndindex(*grid.shape[1:-1]):
            point = grid[(n,) + pos]
            taps = [_taps(point[n_sp - 1 - a], spatial[a], mode, padding_mode, align_corners)
                    for a in range(n_sp)]
            for combo in itertools.product(*taps):
                if any(i is None for i, _ in combo):
                    continue
                w = math.prod(w for _, w in combo)
                out[(n, slice(None)) + pos] += w * x[(n, slice(None)) + tuple(i for i, _ in combo)]
    return out


REFERENCES = {"grid_sample": grid_sample}
