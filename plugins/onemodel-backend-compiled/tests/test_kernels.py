"""The convolution and attention kernels against formulas written here in numpy (not the numpy
backend's code), over the shapes and options their fast paths special-case: stride 1 (shifted
slices of the padded input, rows sharing their padding) and larger strides (phase planes),
padding, dilation, groups, output channels not a multiple of 4, a fused activation and a fused
2x2 max pool; NaN/inf through both."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.testing.numerics import assert_specials_then_close

from conv_references import pool_reference

RTOL, ATOL = 1e-4, 1e-5


def conv_reference(x, w, b, stride, pad, dil, groups):
    """Direct sum over the window, in float64."""
    n, cin, h, wd = x.shape
    cout, cig, kh, kw = w.shape
    xp = np.zeros((n, cin, h + 2 * pad, wd + 2 * pad))
    xp[:, :, pad:pad + h, pad:pad + wd] = x
    ho = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1
    wo = (wd + 2 * pad - dil * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, cout, ho, wo))
    cog = cout // groups
    for co in range(cout):
        g = co // cog
        for u in range(kh):
            for t in range(kw):
                patch = xp[:, g * cig:(g + 1) * cig,
                           u * dil: u * dil + stride * (ho - 1) + 1: stride,
                           t * dil: t * dil + stride * (wo - 1) + 1: stride]
                out[:, co] += np.einsum("nchw,c->nhw", patch, w[co, :, u, t].astype(np.float64))
        if b is not None:
            out[:, co] += b[co]
    return out


CONV_CASES = [
    # cin, cout, k, stride, pad, dil, groups, act, pool, h, w
    (1, 16, 3, 1, 1, 1, 1, "relu", True, 28, 28),
    (16, 32, 3, 1, 1, 1, 1, "relu", True, 14, 14),
    (3, 5, 3, 1, 0, 1, 1, None, False, 9, 11),
    (3, 7, 5, 1, 2, 1, 1, "sigmoid", True, 7, 9),
    (4, 6, 3, 1, 2, 2, 2, "relu", False, 8, 8),
    (6, 6, 3, 1, 1, 1, 6, None, True, 5, 6),      # depthwise, odd pooled size
    (2, 9, 1, 1, 0, 1, 1, "tanh", False, 4, 3),
    (3, 8, 3, 2, 1, 1, 1, "relu", True, 12, 12),  # stride 2: phase planes
    (3, 16, 7, 2, 3, 1, 1, None, False, 23, 22),  # a 7x7 stride-2 stem, odd input
    (4, 5, 3, 3, 1, 2, 1, "relu", False, 17, 14),  # stride 3 and dilation 2
    (6, 12, 3, 2, 1, 1, 3, "relu", True, 10, 11),  # grouped, stride 2, pooled
    (8, 8, 3, 2, 1, 1, 8, None, False, 9, 9),      # depthwise stride 2
    (16, 16, 3, 1, 1, 1, 16, "relu", False, 20, 30),  # depthwise, 48 positions at a time
    (24, 10, 3, 1, 1, 1, 1, "relu", True, 30, 31),  # over 64 KiB: two chunks of channels
    (20, 8, 3, 2, 1, 1, 1, None, False, 41, 40),    # phase planes in three chunks
    (160, 96, 1, 1, 0, 1, 1, "relu", False, 2, 2),   # 1x1 on a small map: one GEMM
    (7, 20, 1, 1, 0, 1, 1, None, False, 1, 1),       # one position: the GEMV at batch 1
    (17, 33, 1, 1, 0, 1, 1, "sigmoid", False, 6, 6),  # the largest map on the GEMM
    (17, 33, 1, 1, 0, 1, 1, "tanh", False, 6, 7),     # one more: the direct kernel
    # depthwise on maps of at most 64 outputs (256 strided): 8 channels in the lanes (dw_small)
    (20, 20, 3, 1, 1, 1, 20, "relu", False, 2, 2),   # 2x2, channels not a multiple of 8
    (12, 12, 3, 1, 1, 1, 12, "sigmoid", False, 4, 4),  # an activation after ReLU's place
    (16, 16, 5, 2, 2, 1, 16, None, False, 7, 7),      # 5x5 stride 2 (EfficientNet's)
    (9, 9, 3, 1, 2, 2, 9, "tanh", False, 8, 8),       # dilation 2, 64 outputs: the limit
    (8, 8, 3, 1, 1, 1, 8, None, False, 9, 8),         # 72 outputs: the direct kernel
    (10, 10, 3, 2, 1, 1, 10, "relu", False, 31, 32),  # stride 2, 256 outputs: the limit
    (8, 8, 3, 2, 1, 1, 8, "relu", False, 33, 33),     # 289 outputs, stride 2: direct
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(c) for c in CONV_CASES])
def test_conv_against_a_direct_sum(case, isa):
    cin, cout, k, stride, pad, dil, groups, act, pool, h, w = case
    rng = np.random.default_rng(cout * 7 + k)
    W = Tensor.from_numpy(rng.standard_normal((cout, cin // groups, k, k)).astype(np.float32))
    B = Tensor.from_numpy(rng.standard_normal(cout).astype(np.float32))
    acts = {"relu": om.ops.relu, "sigmoid": om.ops.sigmoid, "tanh": om.ops.tanh}

    def fn(x):
        y = om.ops.conv2d(x, W, B, stride=stride, padding=pad, dilation=dil, groups=groups)
        if act:
            y = acts[act](y)
        return om.ops.max_pool2d(y, 2) if pool else y

    x0 = rng.standard_normal((13, cin, h, w)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x0), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    for batch in (1, 3):
        x = rng.standard_normal((batch, cin, h, w)).astype(np.float32)
        ref = conv_reference(x, W.numpy(), B.numpy(), stride, pad, dil, groups)
        ref = {"relu": lambda v: np.maximum(v, 0), "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
               "tanh": np.tanh, None: lambda v: v}[act](ref)
        if pool:
            ref = pool_reference(ref)
        got = session.run({"input": x})["output"].numpy()
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL * 10, err_msg=f"b{batch}")
    if pool:
        src = session.plan_source({"input": x0})
        body = src.split("native segment:")[1]  # the pool fused into either direct kernel
        assert ("conv2d_direct" in body or "conv2d_lanes" in body) and "max_pool2d" not in body


def test_conv_nan_and_inf_as_numpy(isa):
    W = Tensor.from_numpy(np.ones((4, 1, 3, 3), np.float32))

    def fn(x):
        return om.ops.max_pool2d(om.ops.relu(om.ops.conv2d(x, W, padding=1)), 2), \
            om.ops.conv2d(x, W, padding=1)

    x = np.zeros((2, 1, 6, 6), np.float32)
    x[0, 0, 1, 1], x[0, 0, 4, 4], x[1, 0, 0, 5] = np.nan, np.inf, -np.inf
    traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
    ref = om.Session(traced, backend="numpy").run({"input": x})
    got = om.Session(traced, backend="compiled").run({"input": x})
    for key in ref:
        assert_specials_then_close(got[key].numpy(), ref[key].numpy(), 0, 0, key)


def test_small_depthwise_conv_nan_and_inf_as_numpy(isa):
    """The 8-channel-block depthwise kernel (small maps) keeps NaN and inf where numpy does."""
    rng = np.random.default_rng(3)
    W = Tensor.from_numpy(rng.standard_normal((11, 1, 3, 3)).astype(np.float32))
    B = Tensor.from_numpy(rng.standard_normal(11).astype(np.float32))

    def fn(x):
        return om.ops.relu(om.ops.conv2d(x, W, B, padding=1, groups=11)), \
            om.ops.conv2d(x, W, B, stride=2, padding=1, groups=11)

    x = rng.standard_normal((2, 11, 4, 4)).astype(np.float32)
    x[0, 0, 1, 1], x[0, 9, 3, 3], x[1, 10, 0, 2] = np.nan, np.inf, -np.inf
    traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
    ref = om.Session(traced, backend="numpy").run({"input": x})
    got = om.Session(traced, backend="compiled").run({"input": x})
    for key in ref:
        assert_specials_then_close(got[key].numpy(), ref[key].numpy(), RTOL, ATOL * 10, key)


def attention_reference(q, k, v):
    s = np.einsum("...id,...jd->...ij", q.astype(np.float64), k) / np.sqrt(q.shape[-1])
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("...ij,...jd->...id", s / s.sum(axis=-1, keepdims=True), v)


@pytest.mark.parametrize("heads,sq,sk,d,dv", [(4, 64, 64, 32, 32), (2, 1, 5, 8, 3),
                                             (3, 7, 19, 16, 17), (1, 33, 9, 5, 40)])
def test_attention_against_the_formula(heads, sq, sk, d, dv, isa):
    rng = np.random.default_rng(sq * 100 + sk)

    def fn(q, k, v):
        return om.ops.scaled_dot_product_attention(q, k, v)

    shapes = [(heads, sq, d), (heads, sk, d), (heads, sk, dv)]
    ex = [Tensor.from_numpy(rng.standard_normal((11,) + s).astype(np.float32)) for s in shapes]
    axes = ("batch", None, None, None)
    traced = om.trace(fn, {"q": (ex[0], *axes), "k": (ex[1], *axes), "v": (ex[2], *axes)})
    session = om.Session(traced, backend="compiled")
    for batch in (1, 2):
        feeds = {n: rng.standard_normal((batch,) + s).astype(np.float32) * 3
                 for n, s in zip("qkv", shapes)}
        got = session.run(feeds)
        got = got[list(got)[0]].numpy()
        np.testing.assert_allclose(got, attention_reference(feeds["q"], feeds["k"], feeds["v"]),
                                   rtol=RTOL, atol=ATOL * 10)
    assert "attention" in session.plan_source(feeds)


@pytest.mark.parametrize("n", [1, 7, 8, 13, 64, 100])
def test_softmax_rows_against_the_formula_with_nan_and_inf(n, isa):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((5, n)) * 20).astype(np.float32)
    x[1, n // 2] = np.nan
    x[2, :] = -np.inf
    x[3, n - 1] = np.inf
    traced = om.trace(lambda t: om.ops.softmax(t, axis=-1), Tensor.from_numpy(x[[0, 4, 0]]),
                      "rows", None)
    got = om.Session(traced, backend="compiled").run({"input": x})["output"].numpy()
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 is NaN, as intended
        ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=RTOL, atol=ATOL)
    e = np.exp(x[0].astype(np.float64) - x[0].max())
    np.testing.assert_allclose(got[0], e / e.sum(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("act", ["relu", "gelu", None])
def test_gemm_register_epilogue_with_nan_inf_and_residual(act, isa):
    """Whole 6x16 tiles take the in-register epilogue (bias, residual, activation), the rest
    store_tile: both agree with the numpy backend, NaN and inf included."""
    rng = np.random.default_rng(3)
    W = Tensor.from_numpy(rng.standard_normal((37, 24)).astype(np.float32))
    B = Tensor.from_numpy(rng.standard_normal(37).astype(np.float32))
    W2 = Tensor.from_numpy(rng.standard_normal((37, 37)).astype(np.float32) / 6)
    f = {"relu": om.ops.relu, "gelu": om.ops.gelu, None: lambda v: v}[act]

    def fn(x):
        h = f(om.ops.linear(x, W, B))
        return h + om.ops.linear(h, W2)

    x = (rng.standard_normal((13, 24)) * 4).astype(np.float32)
    x[2, 3], x[7, 0], x[8, 5] = np.nan, np.inf, -np.inf
    x[9] *= 1e3
    traced = om.trace(fn, Tensor.from_numpy(x[:5] * 0 + 1), "batch", None)
    numpy, compiled = om.Session(traced, backend="numpy"), om.Session(traced, backend="compiled")
    for rows in (x, x[2:3], x[7:8], x[9:10]):  # M = 1 takes the GEMV, with the same epilogue
        ref = numpy.run({"input": rows})["output"].numpy()
        got = compiled.run({"input": rows})["output"].numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        ok = ~np.isnan(ref)
        np.testing.assert_allclose(got[ok], ref[ok], rtol=RTOL, atol=ATOL * 10)


def test_one_session_from_eight_threads_at_several_batch_sizes():
    """Runs in flight at once each get their own scratch arena; the remembered previous plan
    and the session's cached feed checks never hand a run another batch's plan."""
    import threading

    from onemodel.testing import models

    fn, shape = models.cnn()
    traced = models.trace(fn, shape, axes=("batch",))
    session = om.Session(traced, backend="compiled")
    reference = om.Session(traced, backend="numpy")
    inputs = [models.feed(shape, 1 + i % 4, seed=i) for i in range(8)]
    expected = [reference.run({"input": x})["output"].numpy() for x in inputs]
    errors, barrier = [], threading.Barrier(8)

    def work(i):
        try:
            barrier.wait()
            for _ in range(30):
                got = session.run({"input": inputs[i]})["output"].numpy()
                np.testing.assert_allclose(got, expected[i], rtol=RTOL, atol=ATOL)
        except Exception as exc:  # noqa: BLE001 - collected and reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "swish"])
def test_vm_transcendentals_on_8_lanes_against_float64_formulas(op, isa):
    """The VM's exp, tanh, sigmoid and x * sigmoid(x) run 8 lanes at a time with a scalar tail
    (203 = 25 * 8 + 3 values): both agree with float64 numpy, NaN and infinities included."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(203) * 8).astype(np.float32)
    x[[0, 7, 8, 201]] = [np.nan, np.inf, -np.inf, np.nan]
    x[[1, 2, 9, 202]] = [0.6, -0.6, 100.0, -100.0]  # both tanh pieces; exp past its range
    fns = {"exp": om.ops.exp, "tanh": om.ops.tanh, "sigmoid": om.ops.sigmoid,
           "swish": lambda t: t * om.ops.sigmoid(t)}
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        sig = 0.5 * np.tanh(0.5 * x64) + 0.5
        ref = {"exp": np.exp(x64), "tanh": np.tanh(x64), "sigmoid": sig,
               "swish": x64 * sig}[op].astype(np.float32)  # exp(100) overflows float32
    traced = om.trace(fns[op], Tensor.from_numpy(np.zeros(10, np.float32)), "n")
    session = om.Session(traced, backend="compiled")
    assert "numpy:" not in session.plan_source({"input": x})
    got = session.run({"input": x})["output"].numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=RTOL, atol=ATOL)


READERS = {  # the conv's only reader, fused into its epilogue; with its float64 reference
    "relu6": (lambda y: om.ops.clip(y, min=0.0, max=6.0), lambda v: np.clip(v, 0, 6)),
    "clip_min": (lambda y: om.ops.clip(y, min=-0.5), lambda v: np.maximum(v, -0.5)),
    "hardswish": (om.ops.hardswish, lambda v: v * np.clip(v + 3, 0, 6) / 6),
    "hardsigmoid": (lambda y: om.ops.hardsigmoid(y, alpha=0.2, beta=0.5),
                    lambda v: np.clip(0.2 * v + 0.5, 0, 1)),
    "swish": (lambda y: om.ops.swish(y, beta=1.0), lambda v: v / (1 + np.exp(-v))),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("groups, k, stride", [(1, 1, 1), (1, 3, 2), (8, 3, 1)])
def test_conv_epilogue_reader_against_the_formula_and_numpy(reader, groups, k, stride, isa):
    """ReLU6, hardswish, hardsigmoid and swish after a convolution run inside it (no separate
    pointwise pass), equal to the formula and to the numpy backend, NaN and inf included."""
    fn_reader, formula = READERS[reader]
    rng = np.random.default_rng(k * 10 + groups)
    W = rng.standard_normal((8, 8 // groups, k, k)).astype(np.float32)
    B = rng.standard_normal(8).astype(np.float32)

    def fn(x):
        y = om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B), stride=stride,
                          padding=k // 2, groups=groups)
        return fn_reader(y)

    # 17 x 18: a map large enough for the direct kernel at stride 2 too (9 x 9 outputs)
    x = (3 * rng.standard_normal((2, 8, 17, 18))).astype(np.float32)
    x[0, 0, 2, 3], x[0, 1, 5, 5], x[1, 2, 0, 9] = np.nan, np.inf, -np.inf
    with np.errstate(invalid="ignore", over="ignore"):  # tracing runs the numpy kernels
        traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    src = session.plan_source({"input": x})
    assert "conv2d_direct" in src and "pointwise" not in src, src
    got = session.run({"input": x})["output"].numpy()
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 is NaN, as intended
        ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = ~np.isnan(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=RTOL, atol=ATOL)
    xc = np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)  # finite input: against the formula
    want = formula(conv_reference(xc, W, B, stride, k // 2, 1, groups))
    np.testing.assert_allclose(session.run({"input": xc})["output"].numpy(), want,
                               rtol=RTOL, atol=ATOL * 10)


@pytest.mark.parametrize("reader", ["relu6", "swish"])
def test_conv_epilogue_reader_then_pool(reader, isa):
    """conv, ReLU6 or swish, 2x2 max pool: one instruction, the activation's output never
    stored."""
    fn_reader, formula = READERS[reader]
    rng = np.random.default_rng(5)
    W = rng.standard_normal((6, 3, 3, 3)).astype(np.float32)

    def fn(x):
        return om.ops.max_pool2d(fn_reader(om.ops.conv2d(x, Tensor.from_numpy(W), padding=1)), 2)

    x = (3 * rng.standard_normal((2, 3, 8, 11))).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    src = session.plan_source({"input": x})
    assert "pointwise" not in src and "max_pool2d" not in src.split("native segment:")[1], src
    want = pool_reference(formula(conv_reference(x, W, None, 1, 1, 1, 1)))
    np.testing.assert_allclose(session.run({"input": x})["output"].numpy(), want,
                               rtol=RTOL, atol=ATOL * 10)


@pytest.mark.parametrize("reader", ["relu6", "hardswish"])
def test_conv1x1_gemm_with_nan_and_inf_as_numpy(reader, isa):
    """A 1x1 convolution on a 4x4 map runs as one GEMM (then channels first again), its reader
    fused, NaN and inf as the numpy backend's."""
    fn_reader, formula = READERS[reader]
    rng = np.random.default_rng(9)
    W = rng.standard_normal((40, 24, 1, 1)).astype(np.float32)
    B = rng.standard_normal(40).astype(np.float32)

    def fn(x):
        return fn_reader(om.ops.conv2d(x, Tensor.from_numpy(W), Tensor.from_numpy(B)))

    x = rng.standard_normal((3, 24, 4, 4)).astype(np.float32)
    x[0, 0, 1, 1], x[1, 5, 3, 0], x[2, 23, 0, 2] = np.nan, np.inf, -np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
        ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
    session = om.Session(traced, backend="compiled")
    src = session.plan_source({"input": x})
    assert "conv2d_1x1_gemm" in src and "pointwise" not in src, src
    got = session.run({"input": x})["output"].numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = ~np.isnan(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=RTOL, atol=ATOL)
    xc = np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
    np.testing.assert_allclose(session.run({"input": xc})["output"].numpy(),
                               formula(conv_reference(xc, W, B, 1, 0, 1, 1)),
                               rtol=RTOL, atol=ATOL * 10)


@pytest.mark.parametrize("axis, keepdims", [((2, 3), True), ((-1,), False), (None, False),
                                            ((1, 2, 3), False), (1, True)])
def test_mean_over_trailing_axes_native_with_nan_and_inf(axis, keepdims, isa):
    """Global average pool and other means over trailing axes run natively (each contiguous
    row's 8-lane sum over its length); a mean over an inner axis stays on numpy."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 6, 7)).astype(np.float32)
    x[0, 1, 2, 3], x[1, 2, 0, 0], x[2, 4, 5, 6] = np.nan, np.inf, -np.inf
    traced = om.trace(lambda t: om.ops.mean(t, axis=axis, keepdims=keepdims),
                      Tensor.from_numpy(x), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    native = axis != 1
    assert ("0 on numpy" in session.plan_source({"input": x})) == native
    got = session.run({"input": x})["output"].numpy()
    ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
    want = np.mean(x.astype(np.float64), axis=axis, keepdims=keepdims)
    assert got.shape == ref.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_concat_native_into_one_buffer(axis, isa):
    """concat writes each input's rows into one output buffer (strided inputs copied first),
    NaN and inf carried, equal to numpy's concatenate."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    a[0, 1, 2], a[2, 3, 4] = np.nan, -np.inf
    shapes = {0: [(3, 4, 5), (2, 4, 5)], 1: [(3, 4, 5), (3, 1, 5)], 2: [(3, 4, 5), (3, 4, 2)],
              -1: [(3, 4, 5), (3, 4, 3)]}[axis]
    consts = [Tensor.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in shapes]

    def fn(x):
        t = om.ops.transpose(x, 0, 1)  # a strided view: copied before it is concatenated
        return om.ops.concat([x, consts[1], om.ops.relu(x)], axis=axis), \
            om.ops.concat([om.ops.transpose(t, 0, 1), x], axis=axis)

    traced = om.trace(fn, Tensor.from_numpy(a), None, None, None)
    x = a
    session = om.Session(traced, backend="compiled")
    assert "0 on numpy" in session.plan_source({"input": x})
    got = session.run({"input": x})
    c1 = consts[1].numpy()
    want = [np.concatenate([x, c1, np.maximum(x, 0)], axis=axis), np.concatenate([x, x], axis)]
    for key, w in zip(sorted(got), want):
        np.testing.assert_array_equal(got[key].numpy(), w)


def test_eval_batch_norm_native_with_nan_and_inf(isa):
    """An evaluation batch norm no convolution absorbed (it follows a concat) is one native
    pointwise pass with per-channel constants, as the numpy backend's within tolerance."""
    rng = np.random.default_rng(6)
    c = 6
    stats = [Tensor.from_numpy(a.astype(np.float32)) for a in (
        rng.standard_normal(c), rng.uniform(0.5, 2.0, c), rng.standard_normal(c),
        rng.standard_normal(c))]

    def fn(x, y):
        z = om.ops.concat([x, y], axis=1)
        return om.ops.batch_norm(z, *stats, eps=1e-3), om.ops.batch_norm(z, *stats[:2])

    x = rng.standard_normal((2, 4, 5, 3)).astype(np.float32)
    y = rng.standard_normal((2, 2, 5, 3)).astype(np.float32)
    x[0, 1, 2, 2], x[1, 3, 0, 0], y[1, 0, 4, 1] = np.nan, np.inf, -np.inf
    traced = om.trace(fn, {"x": (Tensor.from_numpy(x), None, None, None, None),
                           "y": (Tensor.from_numpy(y), None, None, None, None)})
    session = om.Session(traced, backend="compiled")
    feeds = {"x": x, "y": y}
    assert "0 on numpy" in session.plan_source(feeds)
    got = session.run(feeds)
    ref = om.Session(traced, backend="numpy").run(feeds)
    m, v, w, b = (t.numpy().astype(np.float64).reshape(1, c, 1, 1) for t in stats)
    z = np.concatenate([x, y], axis=1).astype(np.float64)
    want = [(z - m) / np.sqrt(v + 1e-3) * w + b, (z - m) / np.sqrt(v + 1e-5)]
    for key, wnt in zip(sorted(got), want):
        g, r = got[key].numpy(), ref[key].numpy()
        np.testing.assert_array_equal(np.isnan(g), np.isnan(r))
        fin = np.isfinite(wnt)
        np.testing.assert_allclose(g[fin], wnt[fin], rtol=RTOL, atol=ATOL)
        np.testing.assert_array_equal(g[~fin], r[~fin])


@pytest.mark.parametrize("k, s, p", [(3, 2, 0), (2, 2, 0), (3, 2, 1)])
def test_ceil_mode_max_pool_native(k, s, p, isa):
    """SqueezeNet's ceil-mode max pools run natively: the last windows clipped at the edge."""
    rng = np.random.default_rng(k + s + p)
    x = rng.standard_normal((2, 3, 8, 7)).astype(np.float32)
    x[0, 0, 7, 6], x[1, 2, 0, 0] = np.nan, np.inf
    traced = om.trace(lambda t: om.ops.max_pool2d(t, k, s, p, ceil_mode=True),
                      Tensor.from_numpy(x), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    assert "0 on numpy" in session.plan_source({"input": x})
    got = session.run({"input": x})["output"].numpy()
    ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
    assert got.shape == ref.shape and got.shape[2] * s > 8 - k + 2 * p  # ceil made it larger
    np.testing.assert_array_equal(got, ref)


def test_index_with_slices_and_integers_is_a_view():
    """Channel split (x[:, :c], x[:, c:]), strided slices and integer indices are views of the
    input, read by the next kernel; equal to numpy's indexing, NaN and inf carried."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 6, 5, 4)).astype(np.float32)
    x[0, 0, 0, 0], x[1, 5, 4, 3] = np.nan, np.inf

    def fn(t):
        y = om.ops.relu(t)
        return y[:, :3] + y[:, 3:], om.ops.relu(y[:, 1::2, 1:4, :]), y[1, 2:5, -1], t[:, -1]

    traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
    session = om.Session(traced, backend="compiled")
    src = session.plan_source({"input": x})
    assert "0 on numpy" in src, src
    got = session.run({"input": x})
    y = np.maximum(x, 0)
    y[np.isnan(x)] = np.nan
    want = [y[:, :3] + y[:, 3:], y[:, 1::2, 1:4, :], y[1, 2:5, -1], x[:, -1]]
    for key, w in zip(sorted(got), want):
        np.testing.assert_array_equal(got[key].numpy(), w, err_msg=key)
