"""Numerical properties of the nn ops that the generic tests cannot see: random masks, in-place
running statistics, CTC against brute-force path enumeration, stability at huge logits."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import onemodel as om
from onemodel import DType


def _t(a, grad=False):
    t = om.tensor(np.asarray(a))
    return t.requires_grad_() if grad else t


# -- dropout ------------------------------------------------------------------------------------
def test_dropout_mask_is_reproducible_with_manual_seed():
    x = _t(np.ones((50, 40), dtype=np.float32))
    om.manual_seed(123)
    a = om.ops.dropout(x, 0.3).numpy()
    om.manual_seed(123)
    b = om.ops.dropout(x, 0.3).numpy()
    c = om.ops.dropout(x, 0.3).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


def test_dropout_scales_kept_values_and_gradient_by_one_over_keep():
    p = 0.25
    rng = np.random.default_rng(0)
    data = rng.uniform(1.0, 2.0, (200, 100)).astype(np.float32)
    x = _t(data, grad=True)
    om.manual_seed(7)
    y = om.ops.dropout(x, p, True)
    out = y.numpy()
    kept = out != 0
    assert y.dtype == DType.F32
    np.testing.assert_allclose(out[kept], data[kept] / (1 - p), rtol=1e-6)
    assert abs(kept.mean() - (1 - p)) < 0.01
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / (1 - p), rtol=1e-6)


def test_dropout_eval_p0_and_p1():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(om.ops.dropout(_t(data), 0.5, False).numpy(), data)
    np.testing.assert_array_equal(om.ops.dropout(_t(data), 0.0, True).numpy(), data)
    np.testing.assert_array_equal(om.ops.dropout(_t(data), 1.0, True).numpy(), np.zeros_like(data))
    with pytest.raises(om.OneModelError, match="p must be in"):
        om.ops.dropout(_t(data), 1.5)


# -- batch_norm ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5, 2)])
def test_batch_norm_updates_running_stats_in_place(shape):
    rng = np.random.default_rng(1)
    data = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    rm0 = np.array([0.5, -0.5, 0.0], dtype=np.float32)
    rv0 = np.array([1.0, 2.0, 0.5], dtype=np.float32)
    rm, rv = _t(rm0.copy()), _t(rv0.copy())
    w, b = _t(np.ones(3, np.float32)), _t(np.zeros(3, np.float32))
    y = om.ops.batch_norm(_t(data), rm, rv, w, b, training=True, momentum=0.2)
    axes = tuple(i for i in range(len(shape)) if i != 1)
    mean, var_b = data.mean(axes), data.var(axes)
    var_u = data.var(axes, ddof=1)
    np.testing.assert_allclose(rm.numpy(), 0.8 * rm0 + 0.2 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), 0.8 * rv0 + 0.2 * var_u, rtol=1e-5, atol=1e-6)
    sh = (1, 3) + (1,) * (len(shape) - 2)
    expect = (data - mean.reshape(sh)) / np.sqrt(var_b.reshape(sh) + 1e-5)
    np.testing.assert_allclose(y.numpy(), expect, rtol=1e-4, atol=1e-5)
    # eval mode reads the running statistics and leaves them alone
    before = rm.numpy().copy(), rv.numpy().copy()
    y2 = om.ops.batch_norm(_t(data), rm, rv, training=False)
    np.testing.assert_array_equal(rm.numpy(), before[0])
    np.testing.assert_array_equal(rv.numpy(), before[1])
    np.testing.assert_allclose(y2.numpy(), (data - before[0].reshape(sh))
                               / np.sqrt(before[1].reshape(sh) + 1e-5), rtol=1e-5, atol=1e-5)


def test_batch_norm_is_refused_by_the_tracer_only_in_training():
    op = om.registry.ops()["batch_norm"]
    assert op.trace_refusal({"training": True}) is not None
    assert op.trace_refusal({"training": False}) is None
    assert not op.is_pure({"training": True})  # updates the running statistics in place
    assert op.is_pure({"training": False})


# -- ctc_loss against brute force -----------------------------------------------------------------
def _collapse(path, blank):
    out, prev = [], None
    for p in path:
        if p != prev and p != blank:
            out.append(p)
        prev = p
    return out


def _brute_ctc(lp, target, frames, blank):
    """-log P(target) and its gradient w.r.t. lp[:frames], by enumerating every path."""
    c = lp.shape[1]
    total = 0.0
    grad = np.zeros_like(lp)
    for path in itertools.product(range(c), repeat=frames):
        if _collapse(path, blank) == list(target):
            prob = np.exp(sum(lp[t, k] for t, k in enumerate(path)))
            total += prob
            for t, k in enumerate(path):
                grad[t, k] += prob
    if total == 0:
        return np.inf, None
    return -np.log(total), -grad / total


def _ctc_case(seed=0):
    rng = np.random.default_rng(seed)
    t_max, n, c = 5, 4, 3
    x = rng.standard_normal((t_max, n, c))
    lp = x - np.log(np.exp(x).sum(-1, keepdims=True))
    targets = np.array([[1, 1, 0], [2, 1, 2], [2, 0, 0], [1, 2, 0]])  # repeats, padding
    il = np.array([5, 5, 3, 4])
    tl = np.array([2, 3, 1, 0])
    return lp, targets, il, tl


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ctc_loss_and_gradient_match_path_enumeration(dtype):
    lp, targets, il, tl = _ctc_case()
    x = _t(lp.astype(dtype), grad=True)
    loss = om.ops.ctc_loss(x, _t(targets), _t(il), _t(tl), reduction="none")
    assert loss.dtype == DType.from_numpy(dtype)
    weights = np.array([1.0, -0.5, 2.0, 0.7])
    (loss * _t(weights.astype(dtype))).sum().backward()
    tol = 1e-9 if dtype == np.float64 else 2e-5
    for b in range(lp.shape[1]):
        nll, grad = _brute_ctc(lp[:il[b], b], targets[b, :tl[b]], il[b], blank=0)
        np.testing.assert_allclose(loss.numpy()[b], nll, rtol=tol * 10)
        np.testing.assert_allclose(x.grad.numpy()[:il[b], b], weights[b] * grad, rtol=tol * 100,
                                   atol=tol)
        assert np.all(x.grad.numpy()[il[b]:, b] == 0)


def test_ctc_loss_reductions_follow_pytorch():
    lp, targets, il, tl = _ctc_case(1)
    per = om.ops.ctc_loss(_t(lp), _t(targets), _t(il), _t(tl), reduction="none").numpy()
    s = om.ops.ctc_loss(_t(lp), _t(targets), _t(il), _t(tl), reduction="sum").item()
    m = om.ops.ctc_loss(_t(lp), _t(targets), _t(il), _t(tl)).item()
    np.testing.assert_allclose(s, per.sum())
    np.testing.assert_allclose(m, np.mean(per / np.maximum(tl, 1)))


def test_ctc_loss_impossible_alignment_is_infinite():
    lp, _, _, _ = _ctc_case(2)
    targets = np.array([[1, 1, 1]] * 4)
    il = np.array([5, 4, 5, 5])
    tl = np.array([3, 3, 2, 1])  # "1 _ 1 _ 1" needs 5 frames: the second is impossible
    x = _t(lp, grad=True)
    loss = om.ops.ctc_loss(x, _t(targets), _t(il), _t(tl), reduction="none")
    v = loss.numpy()
    assert np.isinf(v[1]) and np.isfinite(v[[0, 2, 3]]).all()
    nll, _ = _brute_ctc(lp[:5, 0], [1, 1, 1], 5, 0)
    np.testing.assert_allclose(v[0], nll)
    loss.sum().backward()
    g = x.grad.numpy()
    assert np.isnan(g[:4, 1]).all() and np.isfinite(g[:, [0, 2, 3]]).all()


def test_ctc_loss_is_untraceable():
    assert om.registry.ops()["ctc_loss"].trace_refusal({"blank": 0, "reduction": "mean"})


# -- stability at huge logits ---------------------------------------------------------------------
def _softmax64(x, axis):
    z = x - x.max(axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_family_is_finite_at_huge_logits(dtype):
    logits = np.array([[1e4, -1e4, 0.0, 1e4 - 1.0], [-1e4, -1e4 + 2.0, -1e4 + 1.0, -1e4]],
                      dtype=dtype)
    target = np.array([3, 0])
    ref = _softmax64(logits.astype(np.float64), 1)
    for op in ("softmax", "log_softmax"):
        x = _t(logits, grad=True)
        y = getattr(om.ops, op)(x, 1)
        assert np.isfinite(y.numpy()).all()
        w = np.array([[1.0, 2.0, -1.0, 0.5], [0.0, 1.0, 3.0, -2.0]], dtype=dtype)
        (y * _t(w)).sum().backward()
        g = x.grad.numpy()
        assert np.isfinite(g).all()
        if op == "softmax":
            expect = ref * (w - (w * ref).sum(1, keepdims=True))
        else:
            expect = w - ref * w.sum(1, keepdims=True)
        np.testing.assert_allclose(g, expect, rtol=1e-5, atol=1e-6)
    x = _t(logits, grad=True)
    loss = om.ops.cross_entropy(x, _t(target))
    assert np.isfinite(loss.item())
    np.testing.assert_allclose(loss.item(), -np.mean(np.log(ref[[0, 1], target])), rtol=1e-5)
    loss.backward()
    onehot = np.eye(4)[target]
    np.testing.assert_allclose(x.grad.numpy(), (ref - onehot) / 2, rtol=1e-5, atol=1e-7)
    assert x.grad.dtype == DType.from_numpy(dtype)


def test_cross_entropy_ignore_index_and_sum():
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((4, 3))
    target = np.array([0, -100, 2, -100])
    x = _t(logits, grad=True)
    loss = om.ops.cross_entropy(x, _t(target))
    p = _softmax64(logits, 1)
    np.testing.assert_allclose(loss.item(), -(np.log(p[0, 0]) + np.log(p[2, 2])) / 2)
    loss.backward()
    g = x.grad.numpy()
    assert np.all(g[[1, 3]] == 0)
    np.testing.assert_allclose(g[0], (p[0] - np.eye(3)[0]) / 2)


# -- dtypes and a conv-net step -------------------------------------------------------------------
def test_float32_stays_float32_through_a_cnn_step():
    rng = np.random.default_rng(0)
    x = _t(rng.standard_normal((4, 1, 8, 8)).astype(np.float32))
    w1 = _t((rng.standard_normal((4, 1, 3, 3)) * 0.3).astype(np.float32), grad=True)
    b1 = _t(np.zeros(4, np.float32), grad=True)
    w2 = _t((rng.standard_normal((3, 64)) * 0.1).astype(np.float32), grad=True)
    y = om.ops.conv2d(x, w1, b1, padding=1).relu()
    y = om.ops.max_pool2d(y, 2)
    logits = om.ops.linear(y.reshape(4, -1), w2)
    loss = om.ops.cross_entropy(logits, _t(np.array([0, 1, 2, 1])))
    assert loss.dtype == DType.F32 and y.dtype == DType.F32
    loss.backward()
    for p in (w1, b1, w2):
        assert p.grad.dtype == DType.F32 and np.isfinite(p.grad.numpy()).all()


def test_conv2d_matches_float64_at_lenet_sizes():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 16, 14, 14))
    w = rng.standard_normal((32, 16, 3, 3)) * 0.1
    b = rng.standard_normal(32)
    y32 = om.ops.conv2d(_t(x.astype(np.float32)), _t(w.astype(np.float32)),
                        _t(b.astype(np.float32)), padding=1).numpy()
    y64 = om.ops.conv2d(_t(x), _t(w), _t(b), padding=1).numpy()
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32, y64, rtol=1e-4, atol=1e-4)


def test_layer_norm_takes_normalized_shape_second():
    x = _t(np.arange(8, dtype=np.float32).reshape(2, 4))
    y = om.ops.layer_norm(x, (4,))
    np.testing.assert_allclose(y.numpy().mean(1), 0, atol=1e-6)
    y2 = om.ops.layer_norm(x, 4, _t(np.full(4, 2, np.float32)), None, 1e-5)
    np.testing.assert_allclose(y2.numpy(), 2 * y.numpy(), rtol=1e-6)


def test_tensor_softmax_methods():
    x = _t(np.array([[1.0, 2.0, 3.0]], dtype=np.float32))
    np.testing.assert_allclose(x.softmax(-1).numpy(), _softmax64(x.numpy().astype(np.float64), 1),
                               rtol=1e-6)
    np.testing.assert_allclose(x.log_softmax(1).numpy().sum(), np.log(_softmax64(
        x.numpy().astype(np.float64), 1)).sum(), rtol=1e-6)


# -- huge and masked logits through every loss (docs/reliability.md) ----------------------------
def _brute_ctc_log(lp, target, blank=0):
    """_brute_ctc in log space (finite where the probabilities underflow): -log P(target) and
    its gradient w.r.t. lp."""
    frames, c = lp.shape
    paths = [p for p in itertools.product(range(c), repeat=frames)
             if _collapse(p, blank) == list(target)]
    scores = np.array([sum(lp[t, k] for t, k in enumerate(p)) for p in paths])
    top = scores.max()
    w = np.exp(scores - top)
    nll = -(top + np.log(w.sum()))
    w /= w.sum()
    grad = np.zeros_like(lp)
    for weight, p in zip(w, paths):
        for t, k in enumerate(p):
            grad[t, k] -= weight
    return nll, grad


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ctc_loss_through_log_softmax_is_exact_at_huge_logits(dtype):
    """log_softmax of logits of +-1e4 (log-probabilities down to -2e4) into ctc_loss: finite,
    and equal to log-space path enumeration, value and gradient w.r.t. the logits."""
    rng = np.random.default_rng(5)
    logits = rng.choice([-1e4, 1e4, 0.0, 1e4 - 3.0], size=(4, 3, 3))
    targets, il, tl = np.array([[1, 2], [2, 2], [1, 0]]), np.array([4, 4, 3]), np.array([2, 2, 1])
    x = _t(logits.astype(dtype), grad=True)
    loss = om.ops.ctc_loss(om.ops.log_softmax(x, -1), _t(targets), _t(il), _t(tl),
                           reduction="none")
    loss.sum().backward()
    assert np.isfinite(loss.numpy()).all() and np.isfinite(x.grad.numpy()).all()
    lp64 = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
        - logits.max(-1, keepdims=True)
    for b in range(3):
        nll, g_lp = _brute_ctc_log(lp64[:il[b], b], targets[b, :tl[b]])
        np.testing.assert_allclose(loss.numpy()[b], nll, rtol=1e-5)
        sm = np.exp(lp64[:il[b], b])
        g_logits = g_lp - sm * g_lp.sum(-1, keepdims=True)  # through log_softmax
        np.testing.assert_allclose(x.grad.numpy()[:il[b], b], g_logits, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_probability_targets_at_huge_logits(dtype):
    logits = np.array([[1e4, -1e4, 0.0, 1e4 - 1.0], [-1e4, -1e4 + 2.0, -1e4 + 1.0, -1e4]])
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
    x = _t(logits.astype(dtype), grad=True)
    loss = om.ops.cross_entropy(x, _t(probs.astype(dtype)))
    loss.backward()
    ref = _softmax64(logits, 1)
    logp = logits - logits.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    np.testing.assert_allclose(loss.item(), -(probs * logp).sum(1).mean(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), (ref - probs) / 2, rtol=1e-5, atol=1e-7)


def test_masked_logits_of_minus_infinity():
    """-inf logits (masked classes) give probability 0, log-probability -inf, and finite
    gradients, as in PyTorch."""
    logits = np.array([[0.0, -np.inf, 1.0], [2.0, -np.inf, -np.inf]])
    x = _t(logits, grad=True)
    p = om.ops.softmax(x, -1)
    assert p.numpy()[0, 1] == 0 and p.numpy()[1, 0] == 1
    (p * _t(np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]))).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    x = _t(logits, grad=True)
    loss = om.ops.cross_entropy(x, _t(np.array([2, 0])))
    loss.backward()
    np.testing.assert_allclose(loss.item(), np.log1p(np.exp(-1.0)) / 2, rtol=1e-12)
    assert np.isfinite(x.grad.numpy()).all() and x.grad.numpy()[:, 1].tolist() == [0.0, 0.0]


def test_softmax_family_and_losses_on_empty_axes():
    """Zero-size axes work where PyTorch allows them: softmax over an empty axis is empty, a
    batch of 0 gives an empty result, a mean over nothing is nan and a sum 0 (torch's values)."""
    for op in (om.ops.softmax, om.ops.log_softmax):
        assert op(om.Tensor.zeros(DType.F32, 3, 0), -1).shape == (3, 0)
        x = om.Tensor.zeros(DType.F32, 0, 4).requires_grad_()
        op(x, -1).sum().backward()
        assert x.grad.shape == (0, 4)
    logits = om.Tensor.zeros(DType.F32, 0, 4).requires_grad_()
    target = om.tensor(np.zeros(0, np.int64))
    assert np.isnan(om.ops.cross_entropy(logits, target).item())
    total = om.ops.cross_entropy(logits, target, reduction="sum")
    assert total.item() == 0.0
    total.backward()
    assert logits.grad.shape == (0, 4)
    assert om.ops.cross_entropy(logits, target, reduction="none").shape == (0,)
