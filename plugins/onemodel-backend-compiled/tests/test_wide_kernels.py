"""The 16-lane kernels (csrc/om_wide.h) of the `avx2-w16` copy (the AVX-512 copy's C built for
AVX2, so it runs here) and of `avx512` where the CPU has it.

The packed GEMM: every tail of its 12 x 32, 12 x 16, 8, 4 and 1-row tiles and of the GEMV, each
epilogue, both bias modes, a residual in its own buffer or aliasing the output, strided A and
C; against float64 numpy (a tolerance) and against the `avx2` copy bit for bit, and a split
over two threads against the whole. The convolutions: the implicit GEMM (6 and 4-row tiles
against two panels, an odd last panel, several row blocks), the depthwise rows (96, 16 and 8
positions at a time), the direct tiles two at a time, the 1x1 convolution as one GEMM and its
GEMV, bit for bit against `avx2` and within tolerance of the numpy backend; the path each case
takes is asserted. Softmax rows, attention (every value width), layer norm, the max pools (every
output width) and the pointwise VM's transcendental ops, bit for bit against `avx2`."""
from __future__ import annotations

import math

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel_backend_compiled import _native
from onemodel_backend_compiled import program as P
from onemodel_backend_compiled.weights import pack_panels

from conv_references import keep_direct

ACTS = ["none", "relu", "sigmoid", "tanh", "gelu", "gelu_tanh"]
#: (bias mode, residual): 0 none / 1 per column / 2 per row; None, "own" buffer, "alias" (C)
EPILOGUES = [(b, r) for b in (0, 1, 2) for r in (None, "own", "alias")]
SENTINEL = np.float32(-7.25)  # C's gaps past N (ldc > N) must keep it


def _copies_here():
    """The 16-lane copies, each skipped (with the reason) where this CPU cannot run it."""
    out = []
    for name in ("avx2-w16", "avx512"):
        before = _native.isa()
        try:
            _native.use(name)
            marks = ()
        except ValueError as exc:
            marks = pytest.mark.skip(reason=f"{name}: {exc}")
        finally:
            _native.use(before)
        out.append(pytest.param(name, marks=marks))
    return out


def _has_avx2() -> bool:
    before = _native.isa()
    try:
        _native.use("avx2")
        return True
    except ValueError:
        return False
    finally:
        _native.use(before)


needs_avx2 = pytest.mark.skipif(not _has_avx2(), reason="the avx2 copy cannot run here")


class Case:
    """One GEMM: inputs, the instruction, and its float64 reference."""

    def __init__(self, rng, m, k, n, act, bias_mode, resid, lda_pad=0, ldc_pad=0, scale=1.0):
        self.m, self.k, self.n, self.act = m, k, n, act
        self.lda, self.ldc = k + lda_pad, n + ldc_pad
        self.a = (rng.standard_normal((m, self.lda)) * scale).astype(np.float32)
        self.b = (rng.standard_normal((k, n)) / math.sqrt(k)).astype(np.float32)
        self.bias_mode, self.resid = bias_mode, resid
        self.bias = {0: None, 1: rng.standard_normal(n), 2: rng.standard_normal(m)}[bias_mode]
        if self.bias is not None:
            self.bias = self.bias.astype(np.float32)
        self.r = rng.standard_normal((m, self.ldc)).astype(np.float32) if resid else None
        self.bp = pack_panels(self.b).ravel()

    def run(self, isa, pool=None):
        """C as the copy isa computes it (the whole ldc-wide buffer)."""
        before = _native.isa()
        _native.use(isa)
        try:
            c = np.full((self.m, self.ldc), SENTINEL, np.float32)
            if self.resid == "alias":
                c[:, :self.n] = self.r[:, :self.n]
            bufs = (self.bp, None, self.a, self.bias, self.r if self.resid == "own" else None, c)
            raddr = {None: -1, "own": P.addr(4, 0), "alias": P.addr(5, 0)}[self.resid]
            ldr = self.ldc if self.resid else 0
            fields = [P.addr(2, 0), self.lda, self.m, self.k, self.n, P.addr(0, 0),
                      P.addr(3, 0) if self.bias is not None else -1, self.bias_mode, raddr,
                      ldr, P.addr(5, 0), self.ldc, P.ACTIVATIONS[self.act]]
            prog = P.assemble([P.instruction(P.I_GEMM, *fields)])
            assert _native.run(prog, bufs, pool) == -1
            return c
        finally:
            _native.use(before)

    def reference(self):
        acc = self.a[:, :self.k].astype(np.float64) @ self.b.astype(np.float64)
        bound = np.abs(self.a[:, :self.k]).astype(np.float64) @ np.abs(self.b)
        if self.bias_mode == 1:
            acc += self.bias
        elif self.bias_mode == 2:
            acc += self.bias[:, None]
        if self.resid:
            acc += self.r[:, :self.n]
            bound += np.abs(self.r[:, :self.n])
        if self.bias is not None:
            bound += np.abs(self.bias if self.bias_mode == 1 else self.bias[:, None])
        x = acc
        erf = np.vectorize(math.erf)
        y = {"none": lambda: x, "relu": lambda: np.maximum(x, 0),
             "sigmoid": lambda: 1 / (1 + np.exp(-x)), "tanh": lambda: np.tanh(x),
             "gelu": lambda: 0.5 * x * (1 + erf(x / math.sqrt(2))),
             "gelu_tanh": lambda: 0.5 * x * (1 + np.tanh(0.7978845608028654
                                                          * (x + 0.044715 * x ** 3)))}[self.act]()
        return y, bound

    def check(self, got):
        """got against float64 (float32 sums of k products: within k ulp of the sum of the
        magnitudes; the activations' polynomials a few ulp), and C's gaps untouched."""
        ref, bound = self.reference()
        tol = 2e-7 * (self.k + 4) * bound + 1e-6 * np.abs(ref) + 1e-6
        err = np.abs(got[:, :self.n].astype(np.float64) - ref)
        assert np.all(err <= tol), (self.m, self.k, self.n, self.act, self.bias_mode,
                                    self.resid, float((err - tol).max()))
        assert np.all(got[:, self.n:] == SENTINEL)


def _cases(rng):
    """Every M in 1..25 with every N in 1..80 (K, the epilogue and the strides cycling), then
    every K in 1..70 on a few shapes, then every epilogue on the tile shapes."""
    ks = [1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 33, 47, 64, 70]
    i = 0
    for m in range(1, 26):
        for n in range(1, 81):
            b, r = EPILOGUES[i % len(EPILOGUES)]
            yield Case(rng, m, ks[i % len(ks)], n, ACTS[i % len(ACTS)], b, r,
                       lda_pad=(i // 3) % 2 * 3, ldc_pad=(i // 5) % 2 * 5, scale=2.0)
            i += 1
    for m, n in ((1, 80), (1, 33), (13, 37), (25, 64), (12, 32)):
        for k in range(1, 71):
            b, r = EPILOGUES[k % len(EPILOGUES)]
            yield Case(rng, m, k, n, ACTS[k % len(ACTS)], b, r)
    for m, k, n in ((1, 19, 80), (1, 9, 7), (12, 19, 32), (25, 23, 79), (9, 5, 17)):
        for act in ACTS:
            for b, r in EPILOGUES:
                yield Case(rng, m, k, n, act, b, r, scale=3.0)


@pytest.mark.parametrize("wide", _copies_here())
def test_wide_gemm_against_float64_on_every_tail(wide):
    rng = np.random.default_rng(16)
    for case in _cases(rng):
        case.check(case.run(wide))


@needs_avx2
@pytest.mark.parametrize("wide", _copies_here())
def test_wide_gemm_bit_identical_to_the_avx2_copy(wide):
    """The same sums in the same order with FMA, the same epilogue formulas: the same bits."""
    rng = np.random.default_rng(61)
    for case in _cases(rng):
        got, want = case.run(wide), case.run("avx2")
        if not np.array_equal(got, want, equal_nan=True):
            diff = np.flatnonzero(~((got == want) | (np.isnan(got) & np.isnan(want))))
            pytest.fail(f"{wide} != avx2 at M={case.m} K={case.k} N={case.n} act={case.act} "
                        f"bias={case.bias_mode} resid={case.resid}: {diff.size} elements, "
                        f"first {got.flat[diff[0]]!r} vs {want.flat[diff[0]]!r}")


@needs_avx2
@pytest.mark.parametrize("wide", _copies_here())
def test_wide_gemm_nan_inf_and_large_values_as_the_avx2_copy(wide):
    """NaN, +-inf and values where exp overflows or underflows, through every epilogue."""
    rng = np.random.default_rng(5)
    for act in ACTS:
        for b, r in EPILOGUES:
            case = Case(rng, 14, 9, 35, act, b, r, scale=30.0)
            case.a[1, 2], case.a[4, 0], case.a[6, 3] = np.nan, np.inf, -np.inf
            case.a[9] *= 1e4
            got, want = case.run(wide), case.run("avx2")
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("wide", _copies_here())
@pytest.mark.parametrize("m,n", [(37, 40), (25, 80), (7, 130), (1, 96), (50, 17)])
def test_wide_gemm_split_over_threads_equals_the_whole(wide, m, n):
    """By 12-row tiles (few panels) or by panels: every element is the same code in the same
    order whatever its part, so the bits do not move."""
    rng = np.random.default_rng(m * n)
    pool = _native.Pool(2)
    before = _native.split_min_work()
    try:
        _native.split_min_work(0)
        for act, (b, r) in zip(ACTS, EPILOGUES[1::2]):
            case = Case(rng, m, 29, n, act, b, r, ldc_pad=3 if m == 1 else 0)
            jobs = pool.jobs
            split = case.run(wide, pool)
            assert pool.jobs == jobs + 1  # it did split
            np.testing.assert_array_equal(split, case.run(wide))
            case.check(split)
    finally:
        _native.split_min_work(before)


@pytest.mark.parametrize("wide", _copies_here())
def test_platform_names_the_copy_and_its_register_lanes(wide):
    """Both copies have 16-lane vectors; avx2-w16 runs them as pairs of AVX2 registers, so its
    peak is avx2's (16 lanes x 1 pipe = 8 lanes x 2)."""
    from onemodel_backend_compiled.platform import platform

    before = _native.isa()
    _native.use(wide)
    try:
        info = platform()
    finally:
        _native.use(before)
    assert info["isa"] == wide
    assert info["lanes"] == 16
    if wide == "avx2-w16" and info.get("peak_gflops"):
        _native.use("avx2")
        try:
            assert platform()["peak_gflops"] == info["peak_gflops"]
        finally:
            _native.use(before)


def test_a_copy_this_cpu_lacks_is_refused():
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(f.read().split())
    except OSError:
        pytest.skip("needs /proc/cpuinfo to know the CPU's flags")
    if {"avx512f", "avx512vl", "avx512dq"} <= flags:
        pytest.skip("this CPU has AVX-512: the copy runs (the tests above)")
    before = _native.isa()
    with pytest.raises(ValueError, match="avx512"):
        _native.use("avx512")
    assert _native.isa() == before


# -- the convolutions ------------------------------------------------------------------------
CONV_ACTS = {None: lambda y: y, "relu": om.ops.relu, "sigmoid": om.ops.sigmoid,
             "tanh": om.ops.tanh, "hardswish": om.ops.hardswish, "gelu": om.ops.gelu,
             "silu": om.ops.silu,
             "relu+pool": lambda y: om.ops.max_pool2d(om.ops.relu(y), 2)}

CONV_CASES = [
    # cin, cout, k, stride, pad, groups, act, (h, w), the instruction it lowers to
    (20, 37, 3, 1, 1, 1, "relu", (2, 2), "conv2d_gemm"),      # 3 panels: a pair and one
    (5, 18, 3, 1, 1, 1, "sigmoid", (7, 7), "conv2d_gemm"),    # 49 rows a image
    (9, 33, 3, 1, 0, 1, None, (4, 4), "conv2d_gemm"),         # no padding, 3 panels
    (6, 64, 3, 2, 1, 1, "relu", (15, 15), "conv2d_gemm"),     # 4 panels, stride 2
    (512, 24, 3, 1, 1, 1, "relu", (4, 4), "conv2d_gemm"),     # several blocks of rows
    (16, 16, 3, 1, 1, 16, "relu", (20, 30), "conv2d_direct"),  # depthwise rows
    (12, 12, 5, 1, 2, 12, "tanh", (33, 41), "conv2d_direct"),  # 96 positions at a time
    (8, 8, 3, 2, 1, 8, "relu", (33, 33), "conv2d_direct"),     # strided: phase planes
    (8, 8, 3, 1, 1, 8, None, (9, 8), "conv2d_direct"),         # 8-position tails
    (160, 96, 1, 1, 0, 1, "relu", (2, 2), "conv2d_1x1_gemm"),  # one GEMM over positions
    (7, 20, 1, 1, 0, 1, "hardswish", (1, 1), "conv2d_1x1_gemm"),  # the GEMV at batch 1
    (16, 32, 3, 1, 1, 1, "relu", (14, 14), "conv2d_direct"),   # the 8-lane direct tiles
    (24, 10, 3, 1, 1, 1, "relu", (30, 31), "conv2d_direct"),   # two chunks of channels
    (3, 16, 7, 2, 3, 1, None, (23, 22), "conv2d_direct"),      # a 7x7 stride-2 stem
    (6, 12, 3, 2, 1, 3, "relu", (10, 11), "conv2d_direct"),    # grouped, strided
    (16, 8, 3, 1, 1, 1, "relu+pool", (16, 15), "conv2d_direct"),  # a fused 2x2 max pool
    (6, 10, 3, 1, 1, 1, "gelu", (9, 9), "conv2d_direct"),      # epilogues on 16 lanes
    (8, 8, 3, 1, 1, 8, "silu", (12, 14), "conv2d_direct"),
]


def _conv_session(case):
    cin, cout, k, stride, pad, groups, act, (h, w), _ = case
    rng = np.random.default_rng(cin * 7 + cout)
    W = (rng.standard_normal((cout, cin // groups, k, k)) / np.sqrt(cin // groups * k * k))
    B = rng.standard_normal(cout)

    def fn(x):
        return CONV_ACTS[act](om.ops.conv2d(x, Tensor.from_numpy(W.astype(np.float32)),
                                       Tensor.from_numpy(B.astype(np.float32)), stride=stride,
                                       padding=pad, groups=groups))

    x0 = rng.standard_normal((13, cin, h, w)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x0), "batch", None, None, None)
    return traced, rng


@needs_avx2
@pytest.mark.parametrize("wide", _copies_here())
@pytest.mark.parametrize("case", CONV_CASES, ids=[str(c) for c in CONV_CASES])
def test_wide_conv_bit_identical_to_avx2_and_close_to_numpy(case, wide, monkeypatch):
    if case[8] == "conv2d_direct":  # its tiles (conv2d_lanes': test_conv_lanes.py)
        keep_direct(monkeypatch)
    traced, rng = _conv_session(case)
    compiled = om.Session(traced, backend="compiled")
    numpy_session = om.Session(traced, backend="numpy")
    before = _native.isa()
    for batch in (1, 3):
        x = (rng.standard_normal((batch, *case[0:1], *case[7])) * 2).astype(np.float32)
        x[0, 0, 0, 0] = np.nan if batch == 3 else x[0, 0, 0, 0]
        src = compiled.plan_source({"input": x})
        assert case[8] in src and "pointwise" not in src, src  # the activation fused
        out = {}
        try:
            for isa in (wide, "avx2"):
                _native.use(isa)
                out[isa] = compiled.run({"input": x})["output"].numpy()
        finally:
            _native.use(before)
        np.testing.assert_array_equal(out[wide], out["avx2"], err_msg=f"b{batch}")
        ref = numpy_session.run({"input": x})["output"].numpy()
        np.testing.assert_array_equal(np.isnan(out[wide]), np.isnan(ref))
        ok = ~np.isnan(ref)
        np.testing.assert_allclose(out[wide][ok], ref[ok], rtol=1e-4, atol=1e-4)


# -- softmax and attention ------------------------------------------------------------------
def _on_copies(session, feeds, copies):
    before = _native.isa()
    out = {}
    try:
        for isa in copies:
            _native.use(isa)
            got = session.run(feeds)
            out[isa] = got[list(got)[0]].numpy()
    finally:
        _native.use(before)
    return out


@needs_avx2
@pytest.mark.parametrize("wide", _copies_here())
def test_wide_softmax_rows_bit_identical_to_avx2(wide):
    """Rows of every length 1..70 (the 16-lane body, an 8-lane step, the scalar tail), NaN,
    +-inf, rows that underflow: the same bits as avx2, and the float64 formula's values."""
    rng = np.random.default_rng(70)
    for n in range(1, 71):
        x = (rng.standard_normal((6, n)) * 20).astype(np.float32)
        x[1, n // 2] = np.nan
        x[2, :] = -np.inf
        x[3, n - 1] = np.inf
        x[4] *= 10
        traced = om.trace(lambda t: om.ops.softmax(t, axis=-1),
                          Tensor.from_numpy(np.zeros((97, n), np.float32)), "rows", None)
        session = om.Session(traced, backend="compiled")
        assert "softmax     softmax" in session.plan_source({"input": x})  # the native kernel
        out = _on_copies(session, {"input": x}, (wide, "avx2"))
        np.testing.assert_array_equal(out[wide], out["avx2"], err_msg=f"n={n}")
        for r in (0, 4, 5):
            e = np.exp(x[r].astype(np.float64) - x[r].max())
            np.testing.assert_allclose(out[wide][r], e / e.sum(), rtol=1e-5, atol=1e-6)


@needs_avx2
@pytest.mark.parametrize("wide", _copies_here())
@pytest.mark.parametrize("sq,sk,d,dv", [(7, 19, 16, 17), (33, 40, 8, 35), (1, 70, 12, 5)])
def test_wide_attention_bit_identical_to_avx2(wide, sq, sk, d, dv):
    """Attention's two packed GEMMs and its unnormalised softmax rows on 16 lanes."""
    rng = np.random.default_rng(sq * 100 + sk)
    shapes = [(3, sq, d), (3, sk, d), (3, sk, dv)]
    ex = [Tensor.from_numpy(rng.standard_normal((11,) + s).astype(np.float32)) for s in shapes]
    axes = ("batch", None, None, None)
    traced = om.trace(lambda q, k, v: om.ops.scaled_dot_product_attention(q, k, v),
                      {"q": (ex[0], *axes), "k": (ex[1], *axes), "v": (ex[2], *axes)})
    session = om.Session(traced, backend="compiled")
    feeds = {n: rng.standard_normal((2,) + s).astype(np.float32) * 3 for n, s in zip("qkv", shapes)}
    assert "attention" in session.plan_source(feeds)
    out = _on_copies(session, feeds, (wide, "avx2"))
    np.testing.assert_array_equal(out[wide], out["avx2"])
    q, k, v = (feeds[n].astype(np.float64) for n in "qkv")
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(out[wide], (p / p.sum(-1, keepdims=True)) @ v, rtol=1e-4,
                               atol=1e-4)


# -- the pointwise VM -----------------------------------------------------------------------
VM_OPS = {"exp": om.ops.exp, "tanh": om.ops.tanh, "sigmoid": om.ops.sigmoid,
          "gelu_tanh": lambda t: om.ops.gelu(t, approximate="tanh"), "silu": om.ops.silu}


@needs_avx2
@pytest.mark.parametrize("wide", _copies_here())
@pytest.mark.parametrize("op", sorted(VM_OPS))
def test_wide_pointwise_transcendentals_bit_identical_to_avx2(wide, op):
    """The VM's 16-lane prefix of each 64-element block, its 8-lane step and scalar tail, on
    rows of many lengths with NaN, +-inf, overflowing and underflowing values."""
    rng = np.random.default_rng(len(op))
    traced = om.trace(VM_OPS[op], Tensor.from_numpy(np.zeros((5, 203), np.float32)), None,
                      "n")
    session = om.Session(traced, backend="compiled")
    numpy_session = om.Session(traced, backend="numpy")
    for n in (1, 7, 15, 16, 17, 40, 64, 65, 100, 150):
        x = (rng.standard_normal((5, n)) * 4).astype(np.float32)
        x[1] *= 40
        x.flat[:4] = [np.nan, np.inf, -np.inf, 0.0]
        src = session.plan_source({"input": x})
        assert "pointwise" in src and "numpy:" not in src, src
        out = _on_copies(session, {"input": x}, (wide, "avx2"))
        np.testing.assert_array_equal(out[wide], out["avx2"], err_msg=f"{op} n={n}")
        with np.errstate(over="ignore", invalid="ignore"):
            ref = numpy_session.run({"input": x})["output"].numpy()
        np.testing.assert_array_equal(np.isnan(out[wide]), np.isnan(ref))
        ok = ~np.isnan(ref)
        np.testing.assert_allclose(out[wide][ok], ref[ok], rtol=1e-5, atol=1e-6)


# -- layer norm -----------------------------------------------------------------------------
def _layer_norm(n, args):
    return lambda t: om.ops.layer_norm(t, (n,), *args)


@needs_avx2
@pytest.mark.parametrize("wide", _copies_here())
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_wide_layer_norm_rows_bit_identical_to_avx2(wide, affine):
    """Rows of every length 1..70 (the 16-lane pass, the 8-lane step, the padded tail step
    whose multiply-adds are the vector ones: a scalar tail was fused by GCC in the avx512 copy
    and not in avx2's), a NaN and an inf row: avx2's bits, the formula's values."""
    rng = np.random.default_rng(len(affine))
    for n in range(1, 71):
        x = (rng.standard_normal((5, n)) * 3 + 1).astype(np.float32)
        x[1, n // 2], x[3, n - 1] = np.nan, np.inf
        g = Tensor.from_numpy(rng.standard_normal(n).astype(np.float32))
        bt = Tensor.from_numpy(rng.standard_normal(n).astype(np.float32))
        args = {"both": (g, bt), "weight": (g, None), "none": (None, None)}[affine]
        traced = om.trace(_layer_norm(n, args),
                          Tensor.from_numpy(np.ones((97, n), np.float32)), "rows", None)
        session = om.Session(traced, backend="compiled")
        assert "layer_norm  layer_norm" in session.plan_source({"input": x})  # the kernel
        out = _on_copies(session, {"input": x}, (wide, "avx2"))
        np.testing.assert_array_equal(out[wide], out["avx2"], err_msg=f"n={n}")
        x64 = x[[0, 2, 4]].astype(np.float64)
        want = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
        if affine != "none":
            want = want * args[0].numpy()
        if affine == "both":
            want = want + args[1].numpy()
        np.testing.assert_allclose(out[wide][[0, 2, 4]], want, rtol=1e-4, atol=1e-5)


# -- the max pools --------------------------------------------------------------------------
POOLS = {"2x2": lambda t: om.ops.max_pool2d(t, 2),
         "3x3 s2 p1": lambda t: om.ops.max_pool2d(t, 3, stride=2, padding=1)}


@needs_avx2
@pytest.mark.parametrize("wide", _copies_here())
@pytest.mark.parametrize("pool", sorted(POOLS))
def test_wide_max_pools_bit_identical_to_avx2_and_numpy(wide, pool):
    """Rows of every output width 1..70 (the 2x2 pool's 16 outputs at a time, its 8 with the
    last group overlapping, the scalar rows below 8 outputs; an odd input width leaves a column
    out), NaN and +-inf: avx2's bits, and the numpy backend's (a max is exact)."""
    rng = np.random.default_rng(len(pool))
    for wo in range(1, 71):
        w, h = 2 * wo + wo % 2, 2 + wo % 5
        x = (rng.standard_normal((2, 3, h, w)) * 5).astype(np.float32)
        x[0, 1, 0, w // 2], x[1, 0, h - 1, w - 1], x[1, 2, 0, 0] = np.nan, np.inf, -np.inf
        x[0, 2] = -np.inf
        traced = om.trace(POOLS[pool], Tensor.from_numpy(np.zeros((97, 3, h, w), np.float32)),
                          "batch", None, None, None)
        session = om.Session(traced, backend="compiled")
        assert "max_pool2d  max_pool2d" in session.plan_source({"input": x})  # native
        out = _on_copies(session, {"input": x}, (wide, "avx2"))
        np.testing.assert_array_equal(out[wide], out["avx2"], err_msg=f"w={w}")
        ref = om.Session(traced, backend="numpy").run({"input": x})["output"].numpy()
        np.testing.assert_array_equal(out[wide], ref, err_msg=f"w={w}")
        np.testing.assert_array_equal(out["avx2"], ref, err_msg=f"w={w}")


@needs_avx2
@pytest.mark.parametrize("wide", _copies_here())
def test_wide_attention_rows_of_every_width_bit_identical_to_avx2(wide):
    """Attention's output rows divided by their sums 16 at a time, then 8, then one by one:
    every dv 1..40 and sk across the 16-lane softmax's tails."""
    rng = np.random.default_rng(40)
    axes = ("batch", None, None)
    for dv in range(1, 41):
        sk = 1 + (dv * 7) % 37
        shapes = [(5, 8), (sk, 8), (sk, dv)]
        ex = [Tensor.from_numpy(np.zeros((97,) + s, np.float32)) for s in shapes]
        traced = om.trace(lambda q, k, v: om.ops.scaled_dot_product_attention(q, k, v),
                          {"q": (ex[0], *axes), "k": (ex[1], *axes), "v": (ex[2], *axes)})
        session = om.Session(traced, backend="compiled")
        feeds = {n: rng.standard_normal((2,) + s).astype(np.float32) * 3
                 for n, s in zip("qkv", shapes)}
        assert "attention" in session.plan_source(feeds)
        out = _on_copies(session, feeds, (wide, "avx2"))
        np.testing.assert_array_equal(out[wide], out["avx2"], err_msg=f"dv={dv} sk={sk}")
        q, k, v = (feeds[n].astype(np.float64) for n in "qkv")
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(8)
        p = np.exp(s - s.max(-1, keepdims=True))
        np.testing.assert_allclose(out[wide], (p / p.sum(-1, keepdims=True)) @ v, rtol=1e-4,
                                   atol=1e-4)
