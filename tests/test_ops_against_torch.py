"""The issue 23 ops against PyTorch itself, values and gradients, where torch is installed (the
project does not need it; the numpy references in tests/references/ run everywhere)."""
import math

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor

torch = pytest.importorskip("torch", reason="PyTorch is not installed (an optional cross-check)")
ops = om.ops
F = torch.nn.functional

R = np.random.default_rng(23)
A = R.standard_normal((3, 4))
B = R.standard_normal((2, 3, 4))
V = R.standard_normal(5)
IDX = np.array([[2, 0, 1, 2], [1, 1, 0, 0]])
TIES = np.array([[3.0, 1.0, 3.0, 1.0, 2.0]])

#: name -> (onemodel call, torch call, float inputs); both get one tensor per input
CASES = {
    "cumsum": (lambda x: x.cumsum(dim=1), lambda x: x.cumsum(dim=1), [A]),
    "cumprod": (lambda x: x.cumprod(dim=-1), lambda x: x.cumprod(dim=-1), [A]),
    "logsumexp": (lambda x: x.logsumexp(dim=(0, 2)), lambda x: x.logsumexp(dim=(0, 2)), [B]),
    "var": (lambda x: x.var(dim=1, keepdim=True), lambda x: x.var(dim=1, keepdim=True), [A]),
    "var_correction": (lambda x: x.var(dim=(0, 1), correction=0),
                       lambda x: x.var(dim=(0, 1), correction=0), [B]),
    "std_unbiased": (lambda x: x.std(0, False), lambda x: x.std(0, False), [A]),
    "std_all": (lambda x: x.std(), lambda x: x.std(), [A]),
    "norm": (lambda x: x.norm(), lambda x: x.norm(), [A]),
    "norm_p1": (lambda x: x.norm(p=1, dim=1), lambda x: x.norm(p=1, dim=1), [A]),
    "norm_inf": (lambda x: x.norm(p=math.inf, dim=0, keepdim=True),
                 lambda x: x.norm(p=math.inf, dim=0, keepdim=True), [A]),
    "norm_fro": (lambda x: x.norm(p="fro", dim=(1, 2)), lambda x: x.norm(p="fro", dim=(1, 2)),
                 [B]),
    "norm_p3": (lambda x: ops.norm(x, 3, dim=-1), lambda x: torch.norm(x, 3, dim=-1), [A]),
    "amax": (lambda x: x.amax(dim=(0, 1)), lambda x: x.amax(dim=(0, 1)), [B]),
    "amin": (lambda x: x.amin(dim=-1, keepdim=True), lambda x: x.amin(dim=-1, keepdim=True),
             [A]),
    "prod": (lambda x: x.prod(dim=1), lambda x: x.prod(dim=1), [A]),
    "argmin": (lambda x: x.argmin(dim=1), lambda x: x.argmin(dim=1), [A]),
    "sort": (lambda x: x.sort(dim=0, descending=True), lambda x: tuple(x.sort(dim=0,
                                                                             descending=True)),
             [A]),
    "sort_ties_stable": (lambda x: x.sort(stable=True)[1],
                         lambda x: x.sort(stable=True)[1], [TIES]),
    "sort_ties_descending": (lambda x: x.sort(descending=True, stable=True)[1],
                             lambda x: x.sort(descending=True, stable=True)[1], [TIES]),
    "argsort": (lambda x: x.argsort(dim=1, descending=True),
                lambda x: x.argsort(dim=1, descending=True), [A]),
    "topk": (lambda x: x.topk(2, dim=1), lambda x: tuple(x.topk(2, dim=1)), [A]),
    "topk_smallest": (lambda x: x.topk(3, dim=0, largest=False),
                      lambda x: tuple(x.topk(3, dim=0, largest=False)), [A]),
    "stack": (lambda x, y: ops.stack([x, y], dim=1), lambda x, y: torch.stack([x, y], dim=1),
              [A, A * 2]),
    "unbind": (lambda x: x.unbind(1), lambda x: x.unbind(1), [A]),
    "chunk": (lambda x: x.chunk(3, dim=1), lambda x: x.chunk(3, dim=1), [A]),
    "flip": (lambda x: x.flip(0, 2), lambda x: x.flip(0, 2), [B]),
    "roll": (lambda x: x.roll((1, -2), (0, 2)), lambda x: x.roll((1, -2), (0, 2)), [B]),
    "roll_flat": (lambda x: x.roll(3), lambda x: x.roll(3), [A]),
    "repeat": (lambda x: x.repeat(2, 1, 2), lambda x: x.repeat(2, 1, 2), [A]),
    "tile": (lambda x: x.tile((2,)), lambda x: x.tile((2,)), [A]),
    "pad_constant": (lambda x: ops.pad(x, (1, 2, 0, 1), value=0.5),
                     lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), [B]),
    "pad_crop": (lambda x: ops.pad(x, (-1, 2)), lambda x: F.pad(x, (-1, 2)), [A]),
    "pad_reflect": (lambda x: ops.pad(x, (2, 1), mode="reflect"),
                    lambda x: F.pad(x, (2, 1), mode="reflect"), [B]),
    "pad_replicate": (lambda x: ops.pad(x, (1, 2, 2, 0), mode="replicate"),
                      lambda x: F.pad(x, (1, 2, 2, 0), mode="replicate"), [B]),
    "movedim": (lambda x: x.movedim((0, 1), (2, 0)), lambda x: x.movedim((0, 1), (2, 0)), [B]),
    "unflatten": (lambda x: x.unflatten(1, (2, -1)), lambda x: x.unflatten(1, (2, -1)), [A]),
    "masked_fill": (lambda x: x.masked_fill(x > 0.3, -2.0),
                    lambda x: x.masked_fill(x > 0.3, -2.0), [A]),
    "index_select": (lambda x: x.index_select(1, Tensor.from_numpy(np.array([3, 0, 3]))),
                     lambda x: x.index_select(1, torch.tensor([3, 0, 3])), [A]),
    "narrow": (lambda x: x.narrow(2, 1, 2), lambda x: x.narrow(2, 1, 2), [B]),
    "bmm": (lambda x, y: ops.bmm(x, y), lambda x, y: torch.bmm(x, y),
            [B, R.standard_normal((2, 4, 2))]),
    "outer": (lambda x, y: ops.outer(x, y), lambda x, y: torch.outer(x, y), [V, V[:3]]),
    # (scatter: torch cannot differentiate a larger src)
    "scatter": (lambda x, s: x.scatter(0, Tensor.from_numpy(np.array([[2, 0, 1, 0]])), s),
                lambda x, s: x.scatter(0, torch.tensor([[2, 0, 1, 0]]), s), [A, A[:1] + 5]),
    "scatter_add": (lambda x, s: x.scatter_add(1, Tensor.from_numpy(IDX), s),
                    lambda x, s: x.scatter_add(1, torch.tensor(IDX), s), [A, A[:2] * 3]),
    "diag_build": (lambda x: ops.diag(x, -2), lambda x: torch.diag(x, -2), [V]),
    "diag_read": (lambda x: x.diag(1), lambda x: x.diag(1), [A]),
    "einsum": (lambda x, y: ops.einsum([x, y], "bij,bkj->bik"),
               lambda x, y: torch.einsum("bij,bkj->bik", x, y), [B, B]),
    "einsum_implicit": (lambda x: ops.einsum([x], "ji"), lambda x: torch.einsum("ji", x), [A]),
    "einsum_ellipsis": (lambda x: ops.einsum([x], "...ij->...j"),
                        lambda x: torch.einsum("...ij->...j", x), [B]),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, dim=1),
                          lambda x: x.repeat_interleave(2, dim=1), [A]),
    "repeat_interleave_flat": (lambda x: x.repeat_interleave(2),
                               lambda x: x.repeat_interleave(2), [A]),
}


def _tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


@pytest.mark.parametrize("name", CASES)
def test_values_and_gradients_match_pytorch(name):
    ours, theirs, arrays = CASES[name]
    xs = [Tensor.from_numpy(a.copy()).requires_grad_() for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    got, want = _tuple(ours(*xs)), _tuple(theirs(*ts))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-6, atol=1e-9)
        assert g.numpy().dtype == w.detach().numpy().dtype
    weights = [R.standard_normal(w.shape) for w in want]
    floats = [k for k, w in enumerate(want) if w.dtype.is_floating_point]
    if not floats:
        return
    total = sum((got[k] * Tensor.from_numpy(weights[k])).sum() for k in floats)
    total.backward()
    sum((want[k] * torch.tensor(weights[k])).sum() for k in floats).backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_integer_dtypes_follow_pytorch():
    i32 = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    for ours, theirs in [(lambda x: x.cumsum(dim=0), lambda x: x.cumsum(dim=0)),
                         (lambda x: x.cumprod(dim=1), lambda x: x.cumprod(dim=1)),
                         (lambda x: x.prod(dim=1), lambda x: x.prod(dim=1)),
                         (lambda x: x.amax(dim=1), lambda x: x.amax(dim=1)),
                         (lambda x: x.topk(2)[0], lambda x: x.topk(2)[0]),
                         (lambda x: x.sort(dim=0)[0], lambda x: x.sort(dim=0)[0]),
                         (lambda x: ops.one_hot(x.long(), 7), lambda x: F.one_hot(x.long(), 7))]:
        got = ours(Tensor.from_numpy(i32)).numpy()
        want = theirs(torch.tensor(i32)).numpy()
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
