"""References for the further shape, indexing, factory and product ops of onemodel-ops-basic:
element-by-element loops over output positions (np.ndindex), written apart from the kernels
(which use np.stack, np.pad, np.roll, np.tile...)."""
import math

import numpy as np

from onemodel import DType

from .basic import _promote


def _dt(dtype, default):
    return DType.parse(dtype).numpy if dtype is not None else default


def _each(shape):
    return np.ndindex(*shape) if shape else [()]


def _stack(xs, axis=0):
    dt = _promote(*xs)
    xs = [np.asarray(x) for x in xs]
    a = axis % (xs[0].ndim + 1)
    shape = list(xs[0].shape)
    shape.insert(a, len(xs))
    out = np.zeros(shape, dt)
    for idx in _each(shape):
        out[idx] = xs[idx[a]][idx[:a] + idx[a + 1:]]
    return out


def _unbind(x, axis=0):
    x = np.asarray(x)
    a = axis % x.ndim
    return tuple(x[(slice(None),) * a + (i,)] for i in range(x.shape[a]))


def _chunk(x, chunks, axis=0):
    x = np.asarray(x)
    a = axis % x.ndim
    n = x.shape[a]
    size = math.ceil(n / chunks)
    return tuple(x[(slice(None),) * a + (slice(s, min(s + size, n)),)] for s in range(0, n, size))


def _flip(x, axes):
    x = np.asarray(x)
    axes = {a % x.ndim for a in ((axes,) if isinstance(axes, int) else axes)}
    out = np.empty_like(x)
    for idx in _each(x.shape):
        src = tuple(x.shape[k] - 1 - i if k in axes else i for k, i in enumerate(idx))
        out[idx] = x[src]
    return out


def _roll(x, shifts, axes=None):
    x = np.asarray(x)
    if axes is None:
        flat = x.reshape(-1)
        n = flat.size
        s = shifts if isinstance(shifts, int) else shifts[0]
        return np.array([flat[(i - s) % n] for i in range(n)], x.dtype).reshape(x.shape)
    shifts = (shifts,) if isinstance(shifts, int) else shifts
    axes = (axes,) if isinstance(axes, int) else axes
    move = {}
    for s, a in zip(shifts, axes):
        move[a % x.ndim] = move.get(a % x.ndim, 0) + s
    out = np.empty_like(x)
    for idx in _each(x.shape):
        src = tuple((i - move.get(k, 0)) % x.shape[k] for k, i in enumerate(idx))
        out[idx] = x[src]
    return out


def _repeat(x, sizes):
    x = np.asarray(x)
    shape = (1,) * (len(sizes) - x.ndim) + x.shape
    x = x.reshape(shape)
    out = np.empty([d * s for d, s in zip(shape, sizes)], x.dtype)
    for idx in _each(out.shape):
        out[idx] = x[tuple(i % d for i, d in zip(idx, shape))]
    return out


def _tile(x, dims):
    x = np.asarray(x)
    return _repeat(x, (1,) * (x.ndim - len(dims)) + tuple(dims))


def _pad(x, pad, mode="constant", value=0.0):
    x = np.asarray(x)
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    shape = [d + b + a for d, (b, a) in zip(x.shape, widths)]
    out = np.empty(shape, x.dtype)
    for idx in _each(shape):
        src, fill = [], False
        for i, d, (b, _a) in zip(idx, x.shape, widths):
            j = i - b
            if mode == "replicate":
                j = min(max(j, 0), d - 1)
            elif mode == "circular":
                j %= d
            elif mode == "reflect":
                while j < 0 or j >= d:
                    j = -j if j < 0 else 2 * (d - 1) - j
            elif not 0 <= j < d:
                fill = True
            src.append(j)
        out[idx] = value if fill else x[tuple(src)]
    return out


def _movedim(x, source, destination):
    x = np.asarray(x)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    order = [None] * x.ndim
    for s, d in zip(src, dst):
        order[d % x.ndim] = s % x.ndim
    rest = [a for a in range(x.ndim) if a not in order]
    order = [o if o is not None else rest.pop(0) for o in order]
    return np.transpose(x, order)


def _unflatten(x, axis, sizes):
    x = np.asarray(x)
    a = axis % x.ndim
    sizes = list(sizes)
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[a] // -math.prod(sizes)
    return x.reshape(x.shape[:a] + tuple(sizes) + x.shape[a + 1:])


def _masked_fill(x, mask, value):
    x = np.asarray(x)
    m = np.broadcast_to(mask, x.shape)
    out = x.copy()
    for idx in _each(x.shape):
        if m[idx]:
            out[idx] = value
    return out


def _index_select(x, index, axis):
    x = np.asarray(x)
    a = axis % x.ndim
    parts = [x[(slice(None),) * a + (slice(i % x.shape[a], i % x.shape[a] + 1),)]
             for i in np.reshape(index, -1).tolist()]
    return np.concatenate(parts, axis=a)


def _narrow(x, axis, start, length):
    x = np.asarray(x)
    a = axis % x.ndim
    start = start % x.shape[a]
    return np.stack([x[(slice(None),) * a + (start + k,)] for k in range(length)], axis=a)


def _one_hot(x, num_classes=-1):
    x = np.asarray(x)
    if num_classes == -1:  # torch: as many classes as the largest label needs
        num_classes = max((int(v) for v in x.reshape(-1)), default=-1) + 1
    out = np.zeros(x.shape + (num_classes,), np.int64)
    for idx in _each(x.shape):
        out[idx + (int(x[idx]),)] = 1
    return out


def _linspace(start, end, steps, dtype=None):
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    vals = [start + k * step for k in range(steps)]
    if steps > 1:
        vals[-1] = end
    return np.array(vals, dtype=_dt(dtype, np.float32))


def _bmm(a, b):
    dt = _promote(a, b)
    out = np.zeros((a.shape[0], a.shape[1], b.shape[2]), np.float64)
    for n, i, j in np.ndindex(*out.shape):
        out[n, i, j] = sum(float(a[n, i, k]) * float(b[n, k, j]) for k in range(a.shape[2]))
    return out.astype(dt)


def _outer(a, b):
    dt = _promote(a, b)
    return np.array([[float(p) * float(q) for q in b] for p in a], np.float64).astype(dt)


REFERENCES = {
    "stack": _stack,
    "unbind": _unbind,
    "chunk": _chunk,
    "flip": _flip,
    "roll": _roll,
    "repeat": _repeat,
    "tile": _tile,
    "pad": _pad,
    "movedim": _movedim,
    "unflatten": _unflatten,
    "masked_fill": _masked_fill,
    "index_select": _index_select,
    "narrow": _narrow,
    "one_hot": _one_hot,
    "ones_like": lambda x, dtype=None: np.full(np.shape(x), 1, _dt(dtype, np.asarray(x).dtype)),
    "full_like": lambda x, value, dtype=None: np.full(np.shape(x), value,
                                                      _dt(dtype, np.asarray(x).dtype)),
    "linspace": _linspace,
    "bmm": _bmm,
    "outer": _outer,
}


# -- scatter, diag, einsum, repeat_interleave ---------------------------------------------------
def _scatter(add):
    def ref(x, index, src, axis):
        out = np.array(x, copy=True)
        a = axis % out.ndim
        for idx in _each(np.shape(index)):
            dest = list(idx)
            dest[a] = int(index[idx])
            out[tuple(dest)] = out[tuple(dest)] + src[idx] if add else src[idx]
        return out
    return ref


def _diag(x, diagonal=0):
    x = np.asarray(x)
    k = diagonal
    if x.ndim == 1:
        n = x.shape[0] + abs(k)
        out = np.zeros((n, n), x.dtype)
        for i, v in enumerate(x):
            out[i + max(-k, 0), i + max(k, 0)] = v
        return out
    vals = [x[i, i + k] for i in range(x.shape[0]) if 0 <= i + k < x.shape[1]]
    return np.array(vals, x.dtype)


def _einsum(operands, equation):
    """Sum over every assignment of the letters (small sizes only)."""
    import itertools
    import string

    eq = equation.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if "..." in eq:
        width = max(np.ndim(o) - (len(t) - 3) for o, t in zip(operands, terms) if "..." in t)
        free = [c for c in string.ascii_letters if c not in eq][:width]
        terms = [t.replace("...", "".join(free[width - (np.ndim(o) - (len(t) - 3)):]))
                 for o, t in zip(operands, terms)]
        rhs = rhs.replace("...", "".join(free))
    elif "->" not in eq:
        letters = "".join(terms)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    sizes = {}
    for o, t in zip(operands, terms):
        for c, d in zip(t, np.shape(o)):
            sizes[c] = max(sizes.get(c, 1), d)
    letters = sorted(sizes)
    dt = _promote(*operands)
    out = np.zeros([sizes[c] for c in rhs], np.float64)
    for values in itertools.product(*(range(sizes[c]) for c in letters)):
        v = dict(zip(letters, values))
        term = 1.0
        for o, t in zip(operands, terms):
            term *= float(np.asarray(o)[tuple(v[c] if np.shape(o)[k] > 1 else 0
                                              for k, c in enumerate(t))])
        out[tuple(v[c] for c in rhs)] += term
    return out.astype(dt)


def _repeat_interleave(x, repeats, axis=None):
    x = np.asarray(x)
    if axis is None:
        return np.array([v for v in x.reshape(-1).tolist() for _ in range(repeats)], x.dtype)
    a = axis % x.ndim
    parts = [x[(slice(None),) * a + (slice(i, i + 1),)] for i in range(x.shape[a])
             for _ in range(repeats)]
    return np.concatenate(parts, axis=a)


REFERENCES.update({
    "scatter": _scatter(False),
    "scatter_add": _scatter(True),
    "diag": _diag,
    "einsum": _einsum,
    "repeat_interleave": _repeat_interleave,
})
