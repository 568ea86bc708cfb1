/* 16-lane kernels of the copies built with OM_LANES16 (native.c: `avx512`, and `avx2-w16`,
 * the same source built for AVX2+FMA so that these tiles, tails and epilogues are tested on a
 * machine without AVX-512): the packed GEMM (gemm, gemm_part, gemv), the implicit-GEMM
 * convolution's tiles, the direct convolution's tiles (two at a time), the depthwise rows, the
 * softmax's max, exponentials and divisions (div_row: attention's output rows too), layer
 * norm's normalising pass, the 2x2 max pool, and the transcendental ops of the pointwise VM
 * and of the convolution epilogue. Their formulas are om_math.h's vector macros, the same
 * source as the 8-lane forms. Included by om_kernels.h twice: in place of the 8-lane GEMM, and
 * with OM_WIDE_LATE for the 16-lane prefixes (after the 8-lane vector math they finish with)
 * that the 8-lane loops call through OM_WIDE_PREFIX; the rest of those copies is the 8-lane
 * code.
 *
 * GCC/clang vector extensions only (64-byte vectors: one zmm register with AVX-512, two ymm
 * on AVX2), min and max by compare and select: no intrinsic that exists for one ISA only.
 *
 * The packed weights keep their 16-column panels (weights.py; MLAS packs SGEMM's B in 16-wide
 * strips for AVX2 and AVX-512F alike): a panel row is one 16-lane register. A tile is R rows
 * (12, 8, 4 or 1) of A against one or two adjacent panels; 12 x 32 holds 24 accumulators, two
 * B rows and a broadcast (27 of AVX-512's 32 registers).
 *
 * Every element of C is the sum over k in order, one fused multiply-add a step from zero, then
 * bias, residual and activation in that order: the 8-lane GEMM's arithmetic, whatever the tile,
 * the row and panel ranges (the thread split of om_split.h) or the lane count, so the results
 * are bit-identical to the avx2 copy's (tests/test_wide_kernels.py). The GEMV keeps the 8-lane
 * GEMV's order too: whole groups of 4 panels sum k in order, the last np % 4 panels in two
 * chains (even and odd k) added at the end. */

#ifndef OM_WIDE_LATE
typedef float SFX(v16) __attribute__((vector_size(64)));
typedef int32_t SFX(i16) __attribute__((vector_size(64)));
#define V16 SFX(v16)
#define I16 SFX(i16)

#define OM_GEMM_MR 12  /* rows of A per register tile (om_split.h splits GEMM rows by it) */

static inline V16 SFX(ld16)(const float *p) { V16 v; memcpy(&v, p, 64); return v; }
static inline void SFX(st16)(float *p, V16 v) { memcpy(p, &v, 64); }
static inline V16 SFX(bc16)(float x) {
    return (V16){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
}
/* the first n of 16 floats (the rest zero) and a store of the first n lanes: a panel's last
 * columns (n < 16) go through a buffer on the stack */
static inline V16 SFX(ld16n)(const float *p, int n) {
    if (n == 16) return SFX(ld16)(p);
    float t[16] = {0};
    memcpy(t, p, n * sizeof(float));
    return SFX(ld16)(t);
}
static inline void SFX(st16n)(float *p, V16 v, int n) {
    if (n == 16) { SFX(st16)(p, v); return; }
    float t[16];
    SFX(st16)(t, v);
    memcpy(p, t, n * sizeof(float));
}

/* -- om_math.h's formulas on 16 lanes (the 8-lane forms' operations in their order) --------- */
static inline V16 SFX(sel16)(I16 m, V16 a, V16 b) { return (V16)((m & (I16)a) | (~m & (I16)b)); }
/* a < b ? a : b and a > b ? a : b (b when either is NaN), as vmin / vmax of om_kernels.h */
static inline V16 SFX(vmin16)(V16 a, V16 b) { return SFX(sel16)(a < b, a, b); }
static inline V16 SFX(vmax16)(V16 a, V16 b) { return SFX(sel16)(a > b, a, b); }
static inline V16 SFX(relu16)(V16 v) { return SFX(vmax16)((V16){0}, v); }

/* om_gelu, om_exp, om_tanh, om_sigmoid and om_gelu_tanh: om_math.h's vector forms, as the
 * 8-lane ones; exp with its two-step scale on every lane (the 8-lane form's one-step shortcut
 * gives the same bits where it applies: y * 2^h is exact there) */
static inline V16 SFX(gelu16)(V16 x) {
    return OM_VGELU(V16, SFX(vmin16), SFX(vmax16), SFX(bc16), x);
}
static inline V16 SFX(exp16)(V16 x) {
    return OM_VEXP(V16, I16, SFX(sel16), SFX(vmin16), SFX(vmax16), SFX(bc16), OM_TWO_SCALES, x);
}
static inline V16 SFX(tanh16)(V16 x) { return OM_VTANH(V16, SFX(sel16), SFX(exp16), x); }
static inline V16 SFX(sigmoid16)(V16 x) { return OM_SIGMOID(SFX(tanh16), x); }
static inline V16 SFX(gelu_tanh16)(V16 x) { return OM_GELU_TANH(V16, SFX(tanh16), x); }

/* -- the packed GEMM ------------------------------------------------------------------------- */
/* the epilogue on one row of a panel held in a register, stored into C[m, n0:n0+nr]: bias (per
 * column or per row), the residual (read before the store: it may alias C), the activation */
static inline void SFX(epi16)(V16 v, long m, long n0, int nr, float *C, long ldc,
                              const SFX(Epi) *e) {
    if (e->bias_mode == 1) v += SFX(ld16n)(e->bias + n0, nr);
    else if (e->bias_mode == 2) v += SFX(bc16)(e->bias[m]);
    if (e->resid) v += SFX(ld16n)(e->resid + m * e->ldr + n0, nr);
    switch (e->act) {
    case ACT_RELU: v = SFX(relu16)(v); break;
    case ACT_SIGMOID: v = SFX(sigmoid16)(v); break;
    case ACT_TANH: v = SFX(tanh16)(v); break;
    case ACT_GELU: v = SFX(gelu16)(v); break;
    case ACT_GELU_TANH: v = SFX(gelu_tanh16)(v); break;
    default: break;
    }
    SFX(st16n)(C + m * ldc + n0, v, nr);
}

/* R rows of A (12, 8, 4 or 1; 6 or 4 for the convolution) against P (1 or 2) adjacent panels
 * from bp (panel stride ps floats): row r's element k at ar[r][k * ks] (ks 1: rows of A; ks R:
 * pack_patches's ap[k][R]), the first mr rows real; nr0, nr1: the panels' columns in C */
static inline __attribute__((always_inline)) void SFX(wtile)(
        const int R, const int P, const int ks, long K, const float *const *ar, const float *bp,
        long ps, int mr, int nr0, int nr1, long m0, long n0, float *C, long ldc,
        const SFX(Epi) *e) {
    V16 c0[12], c1[12];
    OM_UNROLL for (int r = 0; r < R; r++) { c0[r] = (V16){0}; c1[r] = (V16){0}; }
    for (long k = 0; k < K; k++) {
        V16 b0 = SFX(ld16)(bp + 16 * k), b1 = P > 1 ? SFX(ld16)(bp + ps + 16 * k) : b0;
        OM_UNROLL for (int r = 0; r < R; r++) {
            V16 av = SFX(bc16)(ar[r][k * ks]);
            c0[r] += av * b0;
            if (P > 1) c1[r] += av * b1;
        }
    }
    /* the loop over mr reads them by a run-time index: from a copy (as ukr's) */
    V16 d0[12], d1[12];
    OM_UNROLL for (int r = 0; r < R; r++) { d0[r] = c0[r]; d1[r] = c1[r]; }
    for (int r = 0; r < mr; r++) {
        SFX(epi16)(d0[r], m0 + r, n0, nr0, C, ldc, e);
        if (P > 1) SFX(epi16)(d1[r], m0 + r, n0 + 16, nr1, C, ldc, e);
    }
}

/* one function per tile shape (the register allocation of each is its own) */
#define OM_WTILE(R, P) \
    static void SFX(wtile##R##x##P)(long K, const float *const *a, const float *bp, long ps, \
                                    int mr, int nr0, int nr1, long m0, long n0, float *C, \
                                    long ldc, const SFX(Epi) *e) { \
        SFX(wtile)(R, P, 1, K, a, bp, ps, mr, nr0, nr1, m0, n0, C, ldc, e); \
    }
OM_WTILE(12, 2) OM_WTILE(8, 2) OM_WTILE(4, 2) OM_WTILE(1, 2)
OM_WTILE(12, 1) OM_WTILE(8, 1) OM_WTILE(4, 1) OM_WTILE(1, 1)
#undef OM_WTILE

/* P panels (8 or 4) of one row at once, k in order */
static inline __attribute__((always_inline)) void SFX(gemv_group)(
        const int P, long K, long N, long j, const float *a, const float *Bp, float *C,
        const SFX(Epi) *e) {
    const float *b = Bp + j * 16 * K;
    long ps = 16 * K;
    V16 s[8];
    for (int q = 0; q < P; q++) s[q] = (V16){0};
    for (long k = 0; k < K; k++) {
        V16 av = SFX(bc16)(a[k]);
        const float *p = b + 16 * k;
        for (int q = 0; q < P; q++) s[q] += av * SFX(ld16)(p + q * ps);
    }
    for (int q = 0; q < P; q++) {
        long n0 = (j + q) * 16;
        SFX(epi16)(s[q], 0, n0, (int)(N - n0 < 16 ? N - n0 : 16), C, N, e);
    }
}

/* one row against the packed weights (M = 1): 8 panels at a time, then 4, then the last np % 4
 * one at a time in two chains (the 8-lane GEMV's order, so the same bits) */
static void SFX(gemv)(long K, long N, const float *a, const float *Bp, float *C,
                      const SFX(Epi) *e) {
    long np = (N + 15) / 16, np4 = np / 4 * 4, j = 0;
    for (; j + 8 <= np4; j += 8) SFX(gemv_group)(8, K, N, j, a, Bp, C, e);
    for (; j < np4; j += 4) SFX(gemv_group)(4, K, N, j, a, Bp, C, e);
    for (; j < np; j++) {
        const float *b = Bp + j * 16 * K;
        V16 s = {0}, t = {0};
        long k = 0;
        for (; k + 2 <= K; k += 2) {
            s += SFX(bc16)(a[k]) * SFX(ld16)(b + 16 * k);
            t += SFX(bc16)(a[k + 1]) * SFX(ld16)(b + 16 * k + 16);
        }
        for (; k < K; k++) s += SFX(bc16)(a[k]) * SFX(ld16)(b + 16 * k);
        long n0 = j * 16;
        SFX(epi16)(s + t, 0, n0, (int)(N - n0 < 16 ? N - n0 : 16), C, N, e);
    }
}

/* rows [m_lo, m_hi) and 16-column panels [j_lo, j_hi) of C: panels in pairs (the last one
 * alone), rows in tiles of 12 (the last tile of 8, 4 or 1 rows as it needs) */
static void SFX(gemm_part)(long m_lo, long m_hi, long j_lo, long j_hi, long K, long N,
                           const float *A, long lda, const float *Bp, float *C, long ldc,
                           const SFX(Epi) *e) {
    long M = m_hi, ps = 16 * K;
    long mb = (32768 / (K > 0 ? K : 1)) / 12 * 12;  /* rows of A per block: about 128 KiB */
    if (mb < 12) mb = 12;
    for (long m0b = m_lo; m0b < M; m0b += mb) {
        long m1b = m0b + mb < M ? m0b + mb : M;
        for (long j = j_lo; j < j_hi; j += 2) {
            int P = j + 1 < j_hi ? 2 : 1;
            const float *b = Bp + j * ps;
            long n0 = j * 16;
            int nr0 = (int)(N - n0 < 16 ? N - n0 : 16);
            int nr1 = P > 1 ? (int)(N - n0 - 16 < 16 ? N - n0 - 16 : 16) : 0;
            for (long m0 = m0b; m0 < m1b; m0 += 12) {
                int mr = (int)(m1b - m0 < 12 ? m1b - m0 : 12);
                const float *r[12];
                for (int q = 0; q < 12; q++) r[q] = A + (m0 + (q < mr ? q : 0)) * lda;
#define OM_WCALL(R) \
                (P > 1 ? SFX(wtile##R##x2)(K, r, b, ps, mr, nr0, nr1, m0, n0, C, ldc, e) \
                       : SFX(wtile##R##x1)(K, r, b, ps, mr, nr0, nr1, m0, n0, C, ldc, e))
                if (mr > 8) OM_WCALL(12);
                else if (mr > 4) OM_WCALL(8);
                else if (mr > 1) OM_WCALL(4);
                else OM_WCALL(1);
#undef OM_WCALL
            }
        }
    }
}

static void SFX(gemm)(long M, long K, long N, const float *A, long lda, const float *Bp,
                      float *C, long ldc, const SFX(Epi) *e) {
    if (M == 1 && ldc == N) { SFX(gemv)(K, N, A, Bp, C, e); return; }
    SFX(gemm_part)(0, M, 0, (N + 15) / 16, K, N, A, lda, Bp, C, ldc, e);
}

/* -- the implicit-GEMM convolution (om_conv_gemm.h) ----------------------------------------- */
/* R (6 or 4) rows of A packed as ap[k][R] (pack_patches) against P (1 or 2) adjacent panels:
 * ukrp's sums and epilogue on wtile, two panels a tile (12 accumulators) */
#define OM_WUKRP(R, P) \
    static void SFX(wukrp##R##x##P)(long K, const float *ap, const float *bp, long ps, int mr, \
                                    int nr0, int nr1, long m0, long n0, float *C, long ldc, \
                                    const SFX(Epi) *e) { \
        const float *ar[R]; \
        OM_UNROLL for (int r = 0; r < R; r++) ar[r] = ap + r; \
        SFX(wtile)(R, P, R, K, ar, bp, ps, mr, nr0, nr1, m0, n0, C, ldc, e); \
    }
OM_WUKRP(6, 2) OM_WUKRP(4, 2) OM_WUKRP(6, 1) OM_WUKRP(4, 1)
#undef OM_WUKRP

/* rows [m0b, m1b) of the packed patches A (tiles of 6 rows, a last one of at most 4 rows packed
 * as 4) against every one of the np weight panels wp, into C (rows of Cout) */
static void SFX(wconv_block)(long K, const float *A, const float *wp, long m0b, long m1b,
                             long np, long Cout, float *C, const SFX(Epi) *e) {
    long ps = 16 * K;
    for (long j = 0; j < np; j += 2) {  /* two panels against every row of the block */
        int P = j + 1 < np ? 2 : 1;
        const float *b = wp + j * ps;
        long n0 = j * 16;
        int nr0 = (int)(Cout - n0 < 16 ? Cout - n0 : 16);
        int nr1 = P > 1 ? (int)(Cout - n0 - 16 < 16 ? Cout - n0 - 16 : 16) : 0;
        const float *ap = A;
        for (long m0 = m0b; m0 < m1b; m0 += 6, ap += 6 * K) {
            int mr = (int)(m1b - m0 < 6 ? m1b - m0 : 6);
            if (mr <= 4) {
                if (P > 1) SFX(wukrp4x2)(K, ap, b, ps, mr, nr0, nr1, m0, n0, C, Cout, e);
                else SFX(wukrp4x1)(K, ap, b, ps, mr, nr0, nr1, m0, n0, C, Cout, e);
            } else {
                if (P > 1) SFX(wukrp6x2)(K, ap, b, ps, mr, nr0, nr1, m0, n0, C, Cout, e);
                else SFX(wukrp6x1)(K, ap, b, ps, mr, nr0, nr1, m0, n0, C, Cout, e);
            }
        }
    }
}

/* -- the depthwise convolution's rows (conv_direct_range) ------------------------------------ */
/* dw_rows of om_kernels.h on 16 lanes: positions [0, nq) of o, 96 at a time in six sums, then
 * 16, then 8 (the same sums: the taps from zero in order, then the bias; no write past where
 * the 8-lane form writes) */
static void SFX(dw_rows)(long K, const long *koff, const float *xp, const float *wp, float *o,
                         long nq, long nqr, float bias, int relu) {
    long q = 0;
    V16 bv = SFX(bc16)(bias);
    for (; q + 96 <= nqr; q += 96) {
        V16 c[6];
        for (int j = 0; j < 6; j++) c[j] = (V16){0};
        for (long k = 0; k < K; k++) {
            const float *p = xp + q + koff[k];
            V16 a = SFX(bc16)(wp[4 * k]);
            for (int j = 0; j < 6; j++) c[j] += a * SFX(ld16)(p + 16 * j);
        }
        for (int j = 0; j < 6; j++) {
            V16 v = c[j] + bv;
            SFX(st16)(o + q + 16 * j, relu ? SFX(relu16)(v) : v);
        }
    }
    for (; q + 16 <= nq; q += 16) {
        V16 c = {0};
        for (long k = 0; k < K; k++) c += SFX(bc16)(wp[4 * k]) * SFX(ld16)(xp + q + koff[k]);
        V16 v = c + bv;
        SFX(st16)(o + q, relu ? SFX(relu16)(v) : v);
    }
    SFX(v8) bv8 = SFX(bc)(bias);
    for (; q < nq; q += 8) {
        SFX(v8) c = {0};
        for (long k = 0; k < K; k++) c += SFX(bc)(wp[4 * k]) * SFX(ld8)(xp + q + koff[k]);
        SFX(v8) v = c + bv8;
        SFX(st8)(o + q, relu ? SFX(relu8)(v) : v);
    }
}

#undef I16
#undef V16

#else  /* OM_WIDE_LATE: after the 8-lane vector math (max8, exp8) */
#define V16 SFX(v16)

/* om_max on 16 lanes (NaN in either operand gives NaN), as max8 */
static inline V16 SFX(max16)(V16 a, V16 b) { return SFX(sel16)(a != a, a, SFX(vmax16)(a, b)); }

/* the halves of a 16-lane vector, low then high */
static inline void SFX(halves16)(V16 v, SFX(v8) *lo, SFX(v8) *hi) {
    memcpy(lo, &v, 32);
    memcpy(hi, (const char *)&v + 32, 32);
}

/* softmax_row's 16-lane prefixes (om_kernels.h), each over the whole 16s of the row: how many
 * values were done. The max of scale * x into the 8 partial maxima mv (a max does not depend
 * on the order: the same value); the exponentials of scale * x - m into y, summed into the 8
 * partial sums acc in the 8-lane form's order (each 16's low half, then its high half) */
static long SFX(max_wide)(const float *x, long n, float scale, SFX(v8) *mv) {
    long i = 0;
    V16 m = SFX(bc16)(x[0] * scale);
    for (; i + 16 <= n; i += 16) m = SFX(max16)(m, SFX(ld16)(x + i) * scale);
    SFX(v8) lo, hi;
    SFX(halves16)(m, &lo, &hi);
    *mv = SFX(max8)(*mv, SFX(max8)(lo, hi));
    return i;
}

static long SFX(exp_wide)(const float *x, float *y, long n, float scale, float m,
                          SFX(v8) *acc) {
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        V16 e = SFX(exp16)(SFX(ld16)(x + i) * scale - m);
        SFX(v8) lo, hi;
        SFX(halves16)(e, &lo, &hi);
        *acc += lo;
        *acc += hi;
        SFX(st16)(y + i, e);
    }
    return i;
}

/* div_row's: y / s over the whole 16s (a division per value: the same bits at any width) */
static long SFX(div_wide)(float *y, long n, float s) {
    long i = 0;
    V16 sv = SFX(bc16)(s);
    for (; i + 16 <= n; i += 16) SFX(st16)(y + i, SFX(ld16)(y + i) / sv);
    return i;
}

/* even and odd lanes of the 32 floats a, b (a's first) */
#ifdef __clang__
#define OM_EVEN16(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, \
                                                22, 24, 26, 28, 30)
#define OM_ODD16(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, \
                                               23, 25, 27, 29, 31)
#else
#define OM_EVEN16(a, b) __builtin_shuffle(a, b, (SFX(i16)){0, 2, 4, 6, 8, 10, 12, 14, 16, 18, \
                                                           20, 22, 24, 26, 28, 30})
#define OM_ODD16(a, b) __builtin_shuffle(a, b, (SFX(i16)){1, 3, 5, 7, 9, 11, 13, 15, 17, 19, \
                                                          21, 23, 25, 27, 29, 31})
#endif

/* maxpool2s2's (om_pool3.h) 16 outputs at a time, the same grouping of the four maxima: how
 * many of the row's Wo outputs were done */
static long SFX(pool2_wide)(const float *r0, const float *r1, float *o, long Wo) {
    long j = 0;
    for (; j + 16 <= Wo; j += 16) {
        V16 a0 = SFX(ld16)(r0 + 2 * j), a1 = SFX(ld16)(r0 + 2 * j + 16);
        V16 b0 = SFX(ld16)(r1 + 2 * j), b1 = SFX(ld16)(r1 + 2 * j + 16);
        V16 top = SFX(max16)(OM_EVEN16(a0, a1), OM_ODD16(a0, a1));
        V16 bot = SFX(max16)(OM_EVEN16(b0, b1), OM_ODD16(b0, b1));
        SFX(st16)(o + j, SFX(max16)(top, bot));
    }
    return j;
}
#undef OM_EVEN16
#undef OM_ODD16

/* the 16-lane prefix of the VM's transcendental unary ops (rd = f(ra) over n values) and of
 * the convolution epilogue's (act_rows, in place): how many values were done, a multiple of 16
 * (0 for another op); the 8-lane loops and the scalar tail do the rest */
/* dst[i] = F (of the V16 v = src[i..i+16)) for the whole 16s of n */
#define OM_WIDE_MAP(src, dst, F) \
    for (; i + 16 <= n; i += 16) { V16 v = SFX(ld16)((src) + i); SFX(st16)((dst) + i, F); }
static long SFX(vm_wide)(int opc, const float *ra, float *rd, long n) {
    long i = 0;
    switch (opc) {
    case VM_EXP: OM_WIDE_MAP(ra, rd, SFX(exp16)(v)); break;
    case VM_TANH: OM_WIDE_MAP(ra, rd, SFX(tanh16)(v)); break;
    case VM_SIGMOID: OM_WIDE_MAP(ra, rd, SFX(sigmoid16)(v)); break;
    case VM_GELU_TANH: OM_WIDE_MAP(ra, rd, SFX(gelu_tanh16)(v)); break;
    case VM_SWISH: OM_WIDE_MAP(ra, rd, v * SFX(sigmoid16)(v)); break;
    default: break;
    }
    return i;
}

static long SFX(act_wide)(int act, float p0, float *x, long n) {
    long i = 0;
    V16 lo = SFX(bc16)(p0);
    switch (act) {
    case ACT_SIGMOID: OM_WIDE_MAP(x, x, SFX(sigmoid16)(v)); break;
    case ACT_TANH: OM_WIDE_MAP(x, x, SFX(tanh16)(v)); break;
    case ACT_GELU: OM_WIDE_MAP(x, x, SFX(gelu16)(v)); break;
    case ACT_SWISH: OM_WIDE_MAP(x, x, v * SFX(sigmoid16)(lo * v)); break;
    default: break;
    }
    return i;
}
#undef OM_WIDE_MAP

/* layernorm_range's normalising pass (om_split.h) over the whole 16s of a row (its formula:
 * a missing weight is 1, a missing bias -0.0): how many were done */
static long SFX(ln_wide)(const float *x, float *y, const float *g, const float *bt, float mean,
                         float inv, long n) {
    long i = 0;
    V16 mv = SFX(bc16)(mean), iv = SFX(bc16)(inv), one = SFX(bc16)(1.0f), nz = SFX(bc16)(-0.0f);
    for (; i + 16 <= n; i += 16)
        SFX(st16)(y + i, (SFX(ld16)(x + i) - mv) * iv * (g ? SFX(ld16)(g + i) : one)
                         + (bt ? SFX(ld16)(bt + i) : nz));
    return i;
}

/* the direct convolution's conv_tile over two adjacent tiles at once: 4 output channels x 48
 * positions in 12 registers (conv_tile's sums, start and epilogue for each position, so the
 * same bits as two conv_tile calls at q and q + 24) */
static __attribute__((noinline)) void SFX(conv_tile48)(
        long K, const long *koff, const float *xq, const float *wp, float *o0, long ldo,
        const float *bias, int relu, int first, int last) {
    V16 c[4][3];
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 3; j++)
            c[r][j] = first ? (V16){0} : SFX(ld16)(o0 + r * ldo + 16 * j);
    for (long k = 0; k < K; k++) {
        const float *p = xq + koff[k];
        V16 b0 = SFX(ld16)(p), b1 = SFX(ld16)(p + 16), b2 = SFX(ld16)(p + 32);
        const float *w = wp + 4 * k;
        for (int r = 0; r < 4; r++) {
            V16 a = SFX(bc16)(w[r]);
            c[r][0] += a * b0; c[r][1] += a * b1; c[r][2] += a * b2;
        }
    }
    for (int r = 0; r < 4; r++) {
        V16 bv = SFX(bc16)(bias && last ? bias[r] : 0.0f);
        for (int j = 0; j < 3; j++) {
            V16 v = bias && last ? c[r][j] + bv : c[r][j];
            if (relu && last) v = SFX(relu16)(v);
            SFX(st16)(o0 + r * ldo + 16 * j, v);
        }
    }
}

#undef V16
#endif
