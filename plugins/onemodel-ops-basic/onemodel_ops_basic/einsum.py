"""einsum: products and sums written as an index equation (numpy's / torch's einsum).

The equation is normalised once per call (`normalize`): ``...`` becomes explicit letters (the
broadcast ellipsis aligned on the right), an implicit output (no ``->``) becomes numpy's
(ellipsis axes, then the letters used once, sorted). A letter of size 1 broadcasts against the
same letter elsewhere. Repeated letters in one operand take its diagonal ("ii->i").
"""
from __future__ import annotations

import string

import attrs
import numpy as np

from onemodel.registry import OpDef, Param, Sample

from ._common import Dim, OpError, TensorType, common, promote_types, same_dim


@attrs.frozen
class Equation:
    """An einsum equation with explicit letters: one term per operand and the output term."""

    terms: tuple
    output: str

    @property
    def text(self) -> str:
        return ",".join(self.terms) + "->" + self.output


def _fail(equation, why):
    raise OpError(f"ops.einsum: parameter 'equation' {equation!r}: {why}")


def normalize(equation, ranks) -> Equation:
    if not isinstance(equation, str):
        raise OpError(f"ops.einsum: parameter 'equation' must be a string, got {equation!r}")
    eq = equation.replace(" ", "")
    if set(eq) - set(string.ascii_letters + ",.->"):
        _fail(equation, "only letters, ',', '...' and '->' are allowed")
    if eq.count("->") > 1:
        _fail(equation, "'->' may appear once")
    lhs, arrow, rhs = eq.partition("->")
    raw = lhs.split(",")
    if len(raw) != len(ranks):
        _fail(equation, f"it has {len(raw)} operand terms, {len(ranks)} tensors were given")
    free = [c for c in string.ascii_letters if c not in eq]
    ell_ranks = []
    for term, rank in zip(raw, ranks):
        if "." in term.replace("...", "") or term.count("...") > 1:
            _fail(equation, f"term {term!r} has a stray '.' (use one '...')")
        if "..." in term:
            e = rank - (len(term) - 3)
            if e < 0:
                _fail(equation, f"term {term!r} has more letters than its tensor has axes ({rank})")
            ell_ranks.append(e)
        elif len(term) != rank:
            _fail(equation, f"term {term!r} has {len(term)} letters, its tensor has {rank} axes")
        else:
            ell_ranks.append(0)
    width = max(ell_ranks, default=0)
    ell = "".join(free[:width])
    terms = tuple(t.replace("...", ell[width - e:]) for t, e in zip(raw, ell_ranks))
    if arrow:
        if "." in rhs.replace("...", "") or rhs.count("...") > 1:
            _fail(equation, "the output has a stray '.'")
        output = rhs.replace("...", ell)
        used = set("".join(terms))
        for c in output:
            if c not in used:
                _fail(equation, f"output letter {c!r} is in no operand")
        if len(set(output)) != len(output):
            _fail(equation, "the output repeats a letter")
    else:
        letters = "".join(t.replace("...", "") for t in raw)
        output = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return Equation(terms, output)


def letter_sizes(eq: Equation, shapes) -> dict:
    """Each letter's size (a size of 1 gives way to the other), or an OpError."""
    sizes: dict = {}
    for term, shape in zip(eq.terms, shapes):
        for c, d in zip(term, shape):
            if c not in sizes or (not isinstance(sizes[c], Dim) and sizes[c] == 1):
                sizes[c] = d
            elif not same_dim(sizes[c], d) and not (not isinstance(d, Dim) and d == 1):
                raise OpError(f"ops.einsum: letter {c!r} of {eq.text!r} has sizes {sizes[c]} and "
                              f"{d}")
    return sizes


def _infer(*xs, equation):
    eq = normalize(equation, [x.ndim for x in xs])
    sizes = letter_sizes(eq, [x.shape for x in xs])
    return TensorType(promote_types(*(x.dtype for x in xs)), [sizes[c] for c in eq.output])


def _broadcast(xs, eq):
    sizes = letter_sizes(eq, [x.shape for x in xs])
    return [np.broadcast_to(x, [sizes[c] for c in t]) for x, t in zip(xs, eq.terms)], sizes


def _einsum(*xs, equation):
    eq = normalize(equation, [x.ndim for x in xs])
    dt = common(*xs)
    full, _sizes = _broadcast([x.astype(dt, copy=False) for x in xs], eq)
    return np.asarray(np.einsum(eq.text, *full, optimize=len(xs) > 2), dtype=dt)


def _vjp(ctx, g):
    xs = ctx.inputs
    eq = normalize(ctx.params["equation"], [x.ndim for x in xs])
    full, sizes = _broadcast(xs, eq)
    grads = []
    for i, (x, term) in enumerate(zip(xs, eq.terms)):
        if not ctx.needs_grad[i]:
            grads.append(None)
            continue
        others = [t for j, t in enumerate(eq.terms) if j != i]
        arrays = [a for j, a in enumerate(full) if j != i]
        unique = "".join(dict.fromkeys(term))
        have = set(eq.output).union(*others) if others else set(eq.output)
        kept = "".join(c for c in unique if c in have)
        r = np.einsum(",".join([eq.output, *others]) + "->" + kept, g, *arrays)
        # letters summed inside this operand only: the gradient is the same along them
        r = np.expand_dims(r, tuple(k for k, c in enumerate(unique) if c not in have))
        r = np.broadcast_to(r, [sizes[c] for c in unique])
        gx = np.zeros([sizes[c] for c in term], g.dtype)
        np.einsum(term + "->" + unique, gx)[...] = r  # a view: the diagonal of repeated letters
        axes = tuple(k for k, (d, e) in enumerate(zip(x.shape, gx.shape)) if d == 1 and e != 1)
        grads.append(gx.sum(axis=axes, keepdims=True) if axes else gx)
    return tuple(grads)


def _samples(rng):
    r = rng.standard_normal
    yield Sample(args=([r((2, 3)), r((3, 4))],), params={"equation": "ij,jk->ik"}, name="matmul")
    yield Sample(args=([r((2, 2, 3)), r((2, 3, 2))],), params={"equation": "bij,bjk->bik"},
                 name="batched")
    yield Sample(args=([r((3, 3))],), params={"equation": "ii->"}, name="trace")
    yield Sample(args=([r((3, 3))],), params={"equation": "ii->i"}, name="diagonal")
    yield Sample(args=([r((2, 3, 4))],), params={"equation": "...ij->...ji"}, name="ellipsis")
    yield Sample(args=([r((2, 3)), r((3, 2))],), params={"equation": "ij,jk"}, name="implicit")
    yield Sample(args=([r(3), r(4)],), params={"equation": "i,j->ij"}, name="outer")
    yield Sample(args=([r((1, 2, 3)), r((2, 3, 2))],), params={"equation": "...ij,...jk->...ik"},
                 name="broadcast")
    yield Sample(args=([r((2, 3)), r(3), r((3, 2))],), params={"equation": "ij, j, jk -> ik"},
                 name="three")


einsum = OpDef(
    name="einsum", inputs=("operands*",), params={"equation": Param(kind="str")},
    signature=("equation", "operands"),
    kernel=_einsum, infer=_infer, vjp=_vjp, samples=_samples,
    doc="Sums of products by an index equation, as torch.einsum (om.ops.einsum('ij,jk->ik', a, "
        "b), or the operands as one list; the list first, then the equation, works too): "
        "letters, '...', an optional '->'; dtypes promote.",
)

OPS = (einsum,)
