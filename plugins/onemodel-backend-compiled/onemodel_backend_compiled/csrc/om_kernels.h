/* The kernel library, compiled once per copy by native.c (om_copy.h: the portable baseline,
 * AVX2+FMA, AVX-512), each under its SFX and OM_LANES; it ends with the copy's kind table
 * (om_kinds.h), from which native.c assembles the active table at import by the CPU. The
 * executor that runs through it is compiled once (om_exec.h). Everything is float32; nothing
 * here allocates or can fail except on a bad instruction (its kind's run returns 0). The copies
 * built with OM_LANES16 (avx512, and avx2-w16 for the tests) take om_wide.h's 16-lane GEMM,
 * convolution tiles, softmax, layer norm, 2x2 max pool and transcendentals where marked
 * below. */
#include "om_program.h"
#include "om_kind.h"

/* a permutation of 8 float lanes by constant indices (GCC and clang spell it differently) */
#ifndef OM_SHUF8
typedef int32_t om_idx8 __attribute__((vector_size(32)));
#ifdef __clang__
#define OM_SHUF8(a, i0, i1, i2, i3, i4, i5, i6, i7) \
    __builtin_shufflevector(a, a, i0, i1, i2, i3, i4, i5, i6, i7)
#else
#define OM_SHUF8(a, i0, i1, i2, i3, i4, i5, i6, i7) \
    __builtin_shuffle(a, (om_idx8){i0, i1, i2, i3, i4, i5, i6, i7})
#endif
#endif

/* the same of two vectors (indices 8-15 pick from b) */
#ifndef OM_SHUF8X2
#ifdef __clang__
#define OM_SHUF8X2(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
    __builtin_shufflevector(a, b, i0, i1, i2, i3, i4, i5, i6, i7)
#else
#define OM_SHUF8X2(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
    __builtin_shuffle(a, b, (om_idx8){i0, i1, i2, i3, i4, i5, i6, i7})
#endif
#endif

/* the even and the odd lanes of a, b (16 floats) in the order of an in-lane shuffle
 * (vshufps: elements 0 1 4 5 2 3 6 7 of the split), and that order undone (vpermpd). A split
 * in order in one shuffle was three operations a vector on AVX2 (two vpermd and a blend);
 * a 3x3 stride-2 pool that takes the maxima in shuffled order and undoes it once ran in 0.6
 * of its time on a Zen 1 */
#ifndef OM_EVEN8_LANES
#define OM_EVEN8_LANES(a, b) OM_SHUF8X2(a, b, 0, 2, 8, 10, 4, 6, 12, 14)
#define OM_ODD8_LANES(a, b) OM_SHUF8X2(a, b, 1, 3, 9, 11, 5, 7, 13, 15)
#define OM_UNLANE8(v) OM_SHUF8(v, 0, 1, 4, 5, 2, 3, 6, 7)
#endif

typedef float SFX(v8) __attribute__((vector_size(32)));
#define V8 SFX(v8)

static inline V8 SFX(ld8)(const float *p) { V8 v; memcpy(&v, p, 32); return v; }
static inline void SFX(st8)(float *p, V8 v) { memcpy(p, &v, 32); }
/* a broadcast from memory (x + 0 would cost an add: -0.0 + 0 is not -0.0) */
static inline V8 SFX(bc)(float x) { return (V8){x, x, x, x, x, x, x, x}; }

/* vmin(a, b) = a < b ? a : b and vmax(a, b) = a > b ? a : b on 8 lanes (b when either is NaN):
 * one instruction in the AVX2 copy, compare and select in the portable one, the same results */
typedef int32_t SFX(mm8) __attribute__((vector_size(32)));
static inline V8 SFX(vsel)(SFX(mm8) m, V8 a, V8 b) {
    return (V8)((m & (SFX(mm8))a) | (~m & (SFX(mm8))b));
}
#ifdef OM_VEC_MINMAX
static inline V8 SFX(vmin)(V8 a, V8 b) { return __builtin_ia32_minps256(a, b); }
static inline V8 SFX(vmax)(V8 a, V8 b) { return __builtin_ia32_maxps256(a, b); }
#else
static inline V8 SFX(vmin)(V8 a, V8 b) { return SFX(vsel)(a < b, a, b); }
static inline V8 SFX(vmax)(V8 a, V8 b) { return SFX(vsel)(a > b, a, b); }
#endif

/* om_relu on 8 lanes: 0 > v ? 0 : v keeps NaN and -0.0 */
static inline V8 SFX(relu8)(V8 v) { return SFX(vmax)((V8){0}, v); }

/* om_erf and om_gelu of om_math.h on 8 lanes (om_math.h's vector form) */
static inline V8 SFX(gelu8)(V8 x) { return OM_VGELU(V8, SFX(vmin), SFX(vmax), SFX(bc), x); }

/* sum of n floats with 8 partial sums (a fixed order, unlike -ffast-math) */
static inline float SFX(hsum8)(V8 acc) {  /* the 8 lanes by halving: 3 adds deep, not 8 */
    acc += OM_SHUF8(acc, 4, 5, 6, 7, 0, 1, 2, 3);
    acc += OM_SHUF8(acc, 2, 3, 0, 1, 6, 7, 4, 5);
    acc += OM_SHUF8(acc, 1, 0, 3, 2, 5, 4, 7, 6);
    return acc[0];
}

static float SFX(sum)(const float *x, long n) {
    V8 acc = {0};
    long i = 0;
    for (; i + 8 <= n; i += 8) acc += SFX(ld8)(x + i);
    float s = SFX(hsum8)(acc);
    for (; i < n; i++) s += x[i];
    return s;
}

/* -- packed GEMM: C[m, n] = act(sum_k A[m, k] Bp[n/16][k][n%16] + bias + resid) ----------------- */
typedef struct {
    const float *bias; int bias_mode;         /* 0 none, 1 per column, 2 per row */
    const float *resid; long ldr;              /* may alias out (accumulate) */
    int act;
} SFX(Epi);

static void SFX(store_tile)(const float *tile, int mr, int nr, long m0, long n0, float *C,
                            long ldc, const SFX(Epi) *e) {
    for (int r = 0; r < mr; r++) {
        float *c = C + (m0 + r) * ldc + n0;
        float v[16];
        memcpy(v, tile + r * 16, sizeof v);
        if (e->bias_mode == 1) {
            const float *b = e->bias + n0;
            for (int j = 0; j < nr; j++) v[j] += b[j];
        } else if (e->bias_mode == 2) {
            float rb = e->bias[m0 + r];
            for (int j = 0; j < 16; j++) v[j] += rb;
        }
        if (e->resid) {
            const float *res = e->resid + (m0 + r) * e->ldr + n0;
            for (int j = 0; j < nr; j++) v[j] += res[j];
        }
        switch (e->act) {
        case ACT_NONE: break;
        case ACT_RELU: for (int j = 0; j < 16; j++) v[j] = om_relu(v[j]); break;
        case ACT_SIGMOID: for (int j = 0; j < 16; j++) v[j] = om_sigmoid(v[j]); break;
        case ACT_TANH: for (int j = 0; j < 16; j++) v[j] = om_tanh(v[j]); break;
        case ACT_GELU: for (int j = 0; j < 16; j++) v[j] = om_gelu(v[j]); break;
        case ACT_GELU_TANH: for (int j = 0; j < 16; j++) v[j] = om_gelu_tanh(v[j]); break;
        }
        if (nr == 16) memcpy(c, v, sizeof v);
        else memcpy(c, v, nr * sizeof(float));
    }
}

/* tanh, sigmoid and GELU-tanh on 8 lanes (defined with the vector math below) */
static inline SFX(v8) SFX(tanh8)(SFX(v8) x);
static inline SFX(v8) SFX(sigmoid8)(SFX(v8) x);
static inline SFX(v8) SFX(gelu_tanh8)(SFX(v8) x);

/* the epilogue on one row of 16 columns held in two registers, stored into C[m, n0:n0+16]
 * (tanh, sigmoid and GELU-tanh too: through store_tile's scalar formulas a linear + GELU-tanh
 * spent 9 ns an element, 15x its GEMM) */
static inline int SFX(fast_epi)(int nr, const SFX(Epi) *e) {
    return nr == 16
           && (e->act == ACT_NONE || e->act == ACT_RELU || e->act == ACT_GELU
               || e->act == ACT_TANH || e->act == ACT_SIGMOID || e->act == ACT_GELU_TANH);
}

static inline void SFX(store16)(V8 v0, V8 v1, long m, long n0, float *C, long ldc,
                                const SFX(Epi) *e) {
    if (e->bias_mode == 1) { v0 += SFX(ld8)(e->bias + n0); v1 += SFX(ld8)(e->bias + n0 + 8); }
    else if (e->bias_mode == 2) { V8 rb = SFX(bc)(e->bias[m]); v0 += rb; v1 += rb; }
    if (e->resid) {
        const float *res = e->resid + m * e->ldr + n0;
        v0 += SFX(ld8)(res); v1 += SFX(ld8)(res + 8);
    }
    if (e->act == ACT_RELU) { v0 = SFX(relu8)(v0); v1 = SFX(relu8)(v1); }
    else if (e->act == ACT_GELU) { v0 = SFX(gelu8)(v0); v1 = SFX(gelu8)(v1); }
    else if (e->act == ACT_TANH) { v0 = SFX(tanh8)(v0); v1 = SFX(tanh8)(v1); }
    else if (e->act == ACT_SIGMOID) { v0 = SFX(sigmoid8)(v0); v1 = SFX(sigmoid8)(v1); }
    else if (e->act == ACT_GELU_TANH) { v0 = SFX(gelu_tanh8)(v0); v1 = SFX(gelu_tanh8)(v1); }
    float *c = C + m * ldc + n0;
    SFX(st8)(c, v0); SFX(st8)(c + 8, v1);
}

/* an R x 16 tile of C (R = 6, or 4 for the last rows when at most 4 remain: M = 64 is ten
 * 6-row tiles and one of 4), rows a[0..R) of A, the first mr real: the register accumulators
 * get the epilogue in place and are stored straight into C when the tile has 16 columns and
 * the epilogue is fast_epi's; any other tile goes through store_tile */
static inline __attribute__((always_inline)) void SFX(ukr)(
        const int R, long K, const float *const *a, const float *bp, int mr, int nr, long m0,
        long n0, float *C, long ldc, const SFX(Epi) *e) {
    V8 c0[6], c1[6];
    OM_UNROLL for (int r = 0; r < R; r++) { c0[r] = (V8){0}; c1[r] = (V8){0}; }
    for (long k = 0; k < K; k++) {
        V8 b0 = SFX(ld8)(bp), b1 = SFX(ld8)(bp + 8);
        bp += 16;
        OM_UNROLL for (int r = 0; r < R; r++) {
            V8 av = SFX(bc)(a[r][k]);
            c0[r] += av * b0; c1[r] += av * b1;
        }
    }
    /* the epilogue's loop over mr reads them by a run-time index: from a copy, so that the
     * accumulators stay registers (not a stack array zeroed at every tile) */
    V8 acc[12];
    OM_UNROLL for (int r = 0; r < R; r++) { acc[2 * r] = c0[r]; acc[2 * r + 1] = c1[r]; }
    if (SFX(fast_epi)(nr, e)) {
        for (int r = 0; r < mr; r++)
            SFX(store16)(acc[2 * r], acc[2 * r + 1], m0 + r, n0, C, ldc, e);
        return;
    }
    float tile[96];
    for (int q = 0; q < 2 * R; q++) SFX(st8)(tile + 8 * q, acc[q]);
    SFX(store_tile)(tile, mr, nr, m0, n0, C, ldc, e);
}

/* one function per tile shape (the register allocation of each is its own) */
static void SFX(ukr6x16)(long K, const float *const *a, const float *bp, int mr, int nr,
                         long m0, long n0, float *C, long ldc, const SFX(Epi) *e) {
    SFX(ukr)(6, K, a, bp, mr, nr, m0, n0, C, ldc, e);
}
static void SFX(ukr4x16)(long K, const float *const *a, const float *bp, int mr, int nr,
                         long m0, long n0, float *C, long ldc, const SFX(Epi) *e) {
    SFX(ukr)(4, K, a, bp, mr, nr, m0, n0, C, ldc, e);
}

#undef OM_GEMM_MR
#ifdef OM_LANES16
#include "om_wide.h"  /* the 16-lane gemv, gemm_part and gemm */
#else
#define OM_GEMM_MR 6  /* rows of A per register tile (om_split.h splits GEMM rows by it) */

/* one row against four panels at once (M = 1: a GEMV over the packed weights) */
static void SFX(gemv)(long K, long N, const float *a, const float *Bp, float *C,
                      const SFX(Epi) *e) {
    long np = (N + 15) / 16, j = 0;
    float tile[64];
    for (; j + 4 <= np; j += 4) {
        const float *b = Bp + j * 16 * K;
        long ps = 16 * K;
        V8 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0}, s6 = {0}, s7 = {0};
        for (long k = 0; k < K; k++) {
            V8 av = SFX(bc)(a[k]);
            const float *p = b + 16 * k;
            s0 += av * SFX(ld8)(p);          s1 += av * SFX(ld8)(p + 8);
            s2 += av * SFX(ld8)(p + ps);     s3 += av * SFX(ld8)(p + ps + 8);
            s4 += av * SFX(ld8)(p + 2 * ps); s5 += av * SFX(ld8)(p + 2 * ps + 8);
            s6 += av * SFX(ld8)(p + 3 * ps); s7 += av * SFX(ld8)(p + 3 * ps + 8);
        }
        V8 parts[8] = {s0, s1, s2, s3, s4, s5, s6, s7};
        for (int q = 0; q < 4; q++) {
            long n0 = (j + q) * 16;
            int nr = (int)(N - n0 < 16 ? N - n0 : 16);
            if (SFX(fast_epi)(nr, e)) { SFX(store16)(parts[2 * q], parts[2 * q + 1], 0, n0, C, N, e); continue; }
            SFX(st8)(tile, parts[2 * q]); SFX(st8)(tile + 8, parts[2 * q + 1]);
            SFX(store_tile)(tile, 1, nr, 0, n0, C, N, e);
        }
    }
    for (; j < np; j++) {
        const float *b = Bp + j * 16 * K;
        V8 s0 = {0}, s1 = {0}, t0 = {0}, t1 = {0};
        long k = 0;
        for (; k + 2 <= K; k += 2) {
            V8 av = SFX(bc)(a[k]), aw = SFX(bc)(a[k + 1]);
            s0 += av * SFX(ld8)(b + 16 * k); s1 += av * SFX(ld8)(b + 16 * k + 8);
            t0 += aw * SFX(ld8)(b + 16 * k + 16); t1 += aw * SFX(ld8)(b + 16 * k + 24);
        }
        for (; k < K; k++) {
            V8 av = SFX(bc)(a[k]);
            s0 += av * SFX(ld8)(b + 16 * k); s1 += av * SFX(ld8)(b + 16 * k + 8);
        }
        long n0 = j * 16;
        int nr = (int)(N - n0 < 16 ? N - n0 : 16);
        if (SFX(fast_epi)(nr, e)) { SFX(store16)(s0 + t0, s1 + t1, 0, n0, C, N, e); continue; }
        SFX(st8)(tile, s0 + t0); SFX(st8)(tile + 8, s1 + t1);
        SFX(store_tile)(tile, 1, nr, 0, n0, C, N, e);
    }
}

/* rows [m_lo, m_hi) and 16-column panels [j_lo, j_hi) of C: every element is computed by the
 * same code in the same order whatever the ranges (the split of om_split.h relies on it) */
static void SFX(gemm_part)(long m_lo, long m_hi, long j_lo, long j_hi, long K, long N,
                           const float *A, long lda, const float *Bp, float *C, long ldc,
                           const SFX(Epi) *e) {
    long M = m_hi;
    long mb = (32768 / (K > 0 ? K : 1)) / 6 * 6;  /* rows of A per block: about 128 KiB */
    if (mb < 6) mb = 6;
    for (long m0b = m_lo; m0b < M; m0b += mb) {
        long m1b = m0b + mb < M ? m0b + mb : M;
        for (long j = j_lo; j < j_hi; j++) {
            const float *b = Bp + j * 16 * K;
            long n0 = j * 16;
            int nr = (int)(N - n0 < 16 ? N - n0 : 16);
            for (long m0 = m0b; m0 < m1b; m0 += 6) {
                int mr = (int)(m1b - m0 < 6 ? m1b - m0 : 6);
                const float *r[6];
                for (int q = 0; q < 6; q++) r[q] = A + (m0 + (q < mr ? q : 0)) * lda;
                if (mr <= 4) SFX(ukr4x16)(K, r, b, mr, nr, m0, n0, C, ldc, e);
                else SFX(ukr6x16)(K, r, b, mr, nr, m0, n0, C, ldc, e);
            }
        }
    }
}

static void SFX(gemm)(long M, long K, long N, const float *A, long lda, const float *Bp,
                      float *C, long ldc, const SFX(Epi) *e) {
    if (M == 1 && ldc == N) { SFX(gemv)(K, N, A, Bp, C, e); return; }
    SFX(gemm_part)(0, M, 0, (N + 15) / 16, K, N, A, lda, Bp, C, ldc, e);
}
#endif

/* pack B (element (k, n) at B[k*sk + n*sn]) into 16-column panels, zero padded */
static void SFX(pack_b)(const float *B, long K, long N, long sk, long sn, float *dst) {
    long np = (N + 15) / 16;
    for (long j = 0; j < np; j++)
        for (long k = 0; k < K; k++) {
            float *d = dst + (j * K + k) * 16;
            if (sn == 1 && j * 16 + 16 <= N) {  /* a whole row of the panel: one copy */
                memcpy(d, B + k * sk + j * 16, 16 * sizeof(float));
                continue;
            }
            for (int c = 0; c < 16; c++) {
                long n = j * 16 + c;
                d[c] = n < N ? B[k * sk + n * sn] : 0.0f;
            }
        }
}



/* om_max on 8 lanes (NaN in either operand gives NaN) */
static inline V8 SFX(max8)(V8 a, V8 b) {
    return SFX(vsel)(a != a, a, SFX(vmax)(a, b));  /* vmax gives b when either is NaN */
}

/* om_min on 8 lanes (NaN in either operand gives NaN) */
static inline V8 SFX(min8)(V8 a, V8 b) {
    return SFX(vsel)(a != a, a, SFX(vmin)(a, b));  /* vmin gives b when either is NaN */
}

/* -- vector math: the formulas of om_math.h on 8 lanes (selects instead of branches) ---------- */
typedef int32_t SFX(i8v) __attribute__((vector_size(32)));
#define I8 SFX(i8v)
static inline V8 SFX(sel)(I8 m, V8 a, V8 b) { return (V8)((m & (I8)a) | (~m & (I8)b)); }

#ifdef OM_VEC_MINMAX
/* every lane's 2^n a normal float (x above -87.3, softmax's usual case): exp8 scales once */
static inline int SFX(one_scale8)(I8 n) {
    return !__builtin_ia32_movmskps256((V8)((n < -126) | (n > 127)));
}
#define OM_ONE_SCALE8(n) SFX(one_scale8)(n)
#else
#define OM_ONE_SCALE8 OM_TWO_SCALES
#endif

/* om_exp, om_tanh, om_sigmoid and om_gelu_tanh on 8 lanes (om_math.h's vector forms: selects
 * instead of branches; the scalar loop calls tanh through exp and does not vectorise) */
static inline V8 SFX(exp8)(V8 x) {
    return OM_VEXP(V8, I8, SFX(sel), SFX(vmin), SFX(vmax), SFX(bc), OM_ONE_SCALE8, x);
}
static inline V8 SFX(tanh8)(V8 x) { return OM_VTANH(V8, SFX(sel), SFX(exp8), x); }
static inline V8 SFX(sigmoid8)(V8 x) { return OM_SIGMOID(SFX(tanh8), x); }
static inline V8 SFX(gelu_tanh8)(V8 x) { return OM_GELU_TANH(V8, SFX(tanh8), x); }
#undef OM_ONE_SCALE8

#ifdef OM_LANES16
#define OM_WIDE_LATE 1
#include "om_wide.h"  /* the 16-lane prefixes of softmax_row and div_row */
#undef OM_WIDE_LATE
#define OM_WIDE_PREFIX(call) (call)
#else
#define OM_WIDE_PREFIX(call) 0  /* no 16-lane prefix: the 8-lane loops do it all */
#endif

/* y[i] = y[i] / s over n values: softmax's normalising pass, attention's output rows */
static void SFX(div_row)(float *y, long n, float s) {
    long i = OM_WIDE_PREFIX(SFX(div_wide)(y, n, s));
    V8 sv = SFX(bc)(s);
    for (; i + 8 <= n; i += 8) SFX(st8)(y + i, SFX(ld8)(y + i) / sv);
    for (; i < n; i++) y[i] = y[i] / s;
}

/* y = softmax(scale * x) over n values (y may be x); NaN anywhere gives NaN everywhere, as the
 * numpy kernel's max does. The sum is in SFX(sum)'s order. With normalize 0, y holds the
 * exponentials and the sum is returned (attention divides its output rows instead). The
 * 16-lane copies run the max, the exponentials and the division 16 at a time first (the sum
 * keeps the 8 partial sums, so the bits are the 8-lane form's) */
static float SFX(softmax_row)(const float *x, float *y, long n, float scale, int normalize) {
    long n8 = n / 8 * 8, i;
    V8 mv = SFX(bc)(x[0] * scale);
    i = OM_WIDE_PREFIX(SFX(max_wide)(x, n, scale, &mv));
    for (; i < n8; i += 8) mv = SFX(max8)(mv, SFX(ld8)(x + i) * scale);
    /* the 8 lanes' max by halving (max8 keeps NaN), not a scalar chain */
    mv = SFX(max8)(mv, OM_SHUF8(mv, 4, 5, 6, 7, 0, 1, 2, 3));
    mv = SFX(max8)(mv, OM_SHUF8(mv, 2, 3, 0, 1, 6, 7, 4, 5));
    mv = SFX(max8)(mv, OM_SHUF8(mv, 1, 0, 3, 2, 5, 4, 7, 6));
    float m = mv[0];
    for (; i < n; i++) m = om_max(m, x[i] * scale);
    V8 acc = {0};
    i = OM_WIDE_PREFIX(SFX(exp_wide)(x, y, n, scale, m, &acc));
    for (; i < n8; i += 8) {
        V8 e = SFX(exp8)(SFX(ld8)(x + i) * scale - m);
        acc += e;
        SFX(st8)(y + i, e);
    }
    float s = SFX(hsum8)(acc);
    for (; i < n; i++) { y[i] = om_exp(x[i] * scale - m); s += y[i]; }
    if (normalize) SFX(div_row)(y, n, s);
    return s;
}
#undef I8

#include "om_prologue.h"
#include "om_transpose8.h"

/* -- direct convolution without im2col ------------------------------------------------------------
 * The input of one image and group is copied once into a zero-padded buffer xp (Hp rows of
 * Wp = W + pw per channel at stride 1, see conv_direct; phase planes at other strides). An
 * output pixel (oh, ow) computed at q = oh * Wp + ow reads xp at q + koff[k] for
 * k = (ci, u, t), so each reduction step is a contiguous, shifted slice of xp: the GEMM
 * "B panel" is the input itself. Tiles of 4 output channels x 24 positions accumulate in
 * registers; positions with ow >= Wo are computed and dropped. Weights are packed per group as
 * [cout / 4][k][4] (zero rows past cog). The results land in a padded-width buffer op
 * ([cog4][nq24]) and are then compacted into out, or 2x2-max-pooled into out (pool = 1). */
#define CV_MR 4
#define CV_NR 24
#include "om_conv_batch.h"


/* 2x2 stride-2 max pool of rows with stride ld (Hq x Wq results into o, rows of Wq); reads
 * up to 16 floats past each row pair (the caller's buffer has that slack). A row's last
 * partial group of 8 is stored whole (it spills into the rows after it, written later) where
 * 8 floats fit before the end of what may be written: the map and the ``after`` floats that
 * follow it (written later); else a short copy (storing a vector and reading part of it back
 * stalls store forwarding, a fifth of the conv's time). A flag "more follows" was not enough:
 * on maps under 8 wide the spill of a row before the last passed the output's end */
static void SFX(pool2_rows)(const float *x, long ld, long Hq, long Wq, float *o, long after) {
    for (long i = 0; i < Hq; i++) {
        const float *r0 = x + 2 * i * ld, *r1 = r0 + ld;
        float *oi = o + i * Wq;
        for (long j0 = 0; j0 < Wq; j0 += 8) {
            V8 m0 = SFX(max8)(SFX(ld8)(r0 + 2 * j0), SFX(ld8)(r1 + 2 * j0));
            V8 m1 = SFX(max8)(SFX(ld8)(r0 + 2 * j0 + 8), SFX(ld8)(r1 + 2 * j0 + 8));
            V8 r = OM_UNLANE8(SFX(max8)(OM_EVEN8_LANES(m0, m1), OM_ODD8_LANES(m0, m1)));
            long n = Wq - j0 < 8 ? Wq - j0 : 8;
            if (n == 8 || (Hq - i) * Wq - j0 + after >= 8) SFX(st8)(oi + j0, r);
            else for (long t = 0; t < n; t++) oi[j0 + t] = r[t];
        }
    }
}

/* first: start from zero (else from o0, the sums of earlier input channels); last: add the
 * bias and apply ReLU (else store the partial sums). Never inlined: inlined into conv_direct
 * its 12 accumulators spilled (94 -> 45 GFLOP/s on a 64-channel 16x16 map) */
static __attribute__((noinline)) void SFX(conv_tile)(
        long K, const long *koff, const float *xq, const float *wp, float *o0, long ldo,
        const float *bias, int relu, int first, int last) {
    V8 c00 = {0}, c01 = {0}, c02 = {0}, c10 = {0}, c11 = {0}, c12 = {0};
    V8 c20 = {0}, c21 = {0}, c22 = {0}, c30 = {0}, c31 = {0}, c32 = {0};
    if (!first) {
        c00 = SFX(ld8)(o0); c01 = SFX(ld8)(o0 + 8); c02 = SFX(ld8)(o0 + 16);
        c10 = SFX(ld8)(o0 + ldo); c11 = SFX(ld8)(o0 + ldo + 8); c12 = SFX(ld8)(o0 + ldo + 16);
        c20 = SFX(ld8)(o0 + 2 * ldo); c21 = SFX(ld8)(o0 + 2 * ldo + 8);
        c22 = SFX(ld8)(o0 + 2 * ldo + 16);
        c30 = SFX(ld8)(o0 + 3 * ldo); c31 = SFX(ld8)(o0 + 3 * ldo + 8);
        c32 = SFX(ld8)(o0 + 3 * ldo + 16);
    }
    for (long k = 0; k < K; k++) {
        const float *p = xq + koff[k];
        V8 b0 = SFX(ld8)(p), b1 = SFX(ld8)(p + 8), b2 = SFX(ld8)(p + 16);
        const float *w = wp + 4 * k;
        V8 a;
        a = SFX(bc)(w[0]); c00 += a * b0; c01 += a * b1; c02 += a * b2;
        a = SFX(bc)(w[1]); c10 += a * b0; c11 += a * b1; c12 += a * b2;
        a = SFX(bc)(w[2]); c20 += a * b0; c21 += a * b1; c22 += a * b2;
        a = SFX(bc)(w[3]); c30 += a * b0; c31 += a * b1; c32 += a * b2;
    }
    V8 acc[4][3] = {{c00, c01, c02}, {c10, c11, c12}, {c20, c21, c22}, {c30, c31, c32}};
    for (int r = 0; r < 4; r++) {
        V8 bv = SFX(bc)(bias && last ? bias[r] : 0.0f);
        for (int j = 0; j < 3; j++) {
            V8 v = bias && last ? acc[r][j] + bv : acc[r][j];
            if (relu && last) v = SFX(relu8)(v);
            SFX(st8)(o0 + r * ldo + 8 * j, v);
        }
    }
}

/* 4 output channels x 8 positions: the tail of a channel's positions when 16 or fewer remain */
static void SFX(conv_tile8)(long K, const long *koff, const float *xq, const float *wp,
                            float *o0, long ldo, const float *bias, int relu, int first,
                            int last) {
    V8 c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0};
    if (!first) {
        c0 = SFX(ld8)(o0); c1 = SFX(ld8)(o0 + ldo);
        c2 = SFX(ld8)(o0 + 2 * ldo); c3 = SFX(ld8)(o0 + 3 * ldo);
    }
    for (long k = 0; k < K; k++) {
        V8 b = SFX(ld8)(xq + koff[k]);
        const float *w = wp + 4 * k;
        c0 += SFX(bc)(w[0]) * b; c1 += SFX(bc)(w[1]) * b;
        c2 += SFX(bc)(w[2]) * b; c3 += SFX(bc)(w[3]) * b;
    }
    V8 acc[4] = {c0, c1, c2, c3};
    for (int r = 0; r < 4; r++) {
        V8 v = bias && last ? acc[r] + SFX(bc)(bias[r]) : acc[r];
        if (relu && last) v = SFX(relu8)(v);
        SFX(st8)(o0 + r * ldo, v);
    }
}

#ifndef OM_LANES16  /* (om_wide.h has the 16-lane dw_rows) */
/* a depthwise channel (one input and one output channel): positions [0, nq) of o, 48 at a time
 * in six independent sums (enough to hide the FMA latency), then 8 at a time; weights at
 * stride 4 (the packed layout's first row) */
static void SFX(dw_rows)(long K, const long *koff, const float *xp, const float *wp, float *o,
                         long nq, long nqr, float bias, int relu) {
    long q = 0;
    V8 bv = SFX(bc)(bias);
    for (; q + 48 <= nqr; q += 48) {
        V8 c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0}, c4 = {0}, c5 = {0};
        for (long k = 0; k < K; k++) {
            const float *p = xp + q + koff[k];
            V8 a = SFX(bc)(wp[4 * k]);
            c0 += a * SFX(ld8)(p);      c1 += a * SFX(ld8)(p + 8);
            c2 += a * SFX(ld8)(p + 16); c3 += a * SFX(ld8)(p + 24);
            c4 += a * SFX(ld8)(p + 32); c5 += a * SFX(ld8)(p + 40);
        }
        V8 acc[6] = {c0, c1, c2, c3, c4, c5};
        for (int j = 0; j < 6; j++) {
            V8 v = acc[j] + bv;
            SFX(st8)(o + q + 8 * j, relu ? SFX(relu8)(v) : v);
        }
    }
    for (; q < nq; q += 8) {
        V8 c = {0};
        for (long k = 0; k < K; k++) c += SFX(bc)(wp[4 * k]) * SFX(ld8)(xp + q + koff[k]);
        V8 v = c + bv;
        SFX(st8)(o + q, relu ? SFX(relu8)(v) : v);
    }
}
#endif

/* an activation on n values in place, 8 lanes at a time (the scalar forms for the tail): the
 * convolution's epilogue past ReLU, on a channel's positions while they are in L1. p0, p1:
 * clip's bounds, hardsigmoid's alpha and beta, swish's beta */
#include "om_sigrows.h"
static void SFX(act_rows)(int act, float p0, float p1, float *x, long n) {
    if (act == ACT_SWISH || act == ACT_SIGMOID) {  /* om_sigrows.h: the exp form */
        SFX(sig_rows)(act == ACT_SWISH, p0, x, n);
        return;
    }
#ifdef OM_LANES16
    long i = SFX(act_wide)(act, p0, x, n);  /* om_wide.h: a 16-lane prefix, the same bits */
#else
    long i = 0;
#endif
#define OM_ACT_ROWS(VEC, SCALAR) \
    for (; i + 8 <= n; i += 8) { V8 v = SFX(ld8)(x + i); SFX(st8)(x + i, VEC); } \
    for (; i < n; i++) { float v = x[i]; x[i] = SCALAR; } break
    V8 lo = SFX(bc)(p0), hi = SFX(bc)(p1), zero = {0}, one = SFX(bc)(1.0f);
    V8 three = SFX(bc)(3.0f), six = SFX(bc)(6.0f), sixth = SFX(bc)(OM_SIXTH);
    switch (act) {
    case ACT_RELU: OM_ACT_ROWS(SFX(relu8)(v), om_relu(v));
    case ACT_SIGMOID: OM_ACT_ROWS(SFX(sigmoid8)(v), om_sigmoid(v));
    case ACT_TANH: OM_ACT_ROWS(SFX(tanh8)(v), om_tanh(v));
    case ACT_GELU: OM_ACT_ROWS(SFX(gelu8)(v), om_gelu(v));
    case ACT_CLIP: OM_ACT_ROWS(SFX(min8)(SFX(max8)(v, lo), hi), om_min(om_max(v, p0), p1));
    case ACT_HARDSWISH:  /* x * clip(x + 3, 0, 6) * (1/6), numpy's order */
        OM_ACT_ROWS(v * SFX(min8)(SFX(max8)(v + three, zero), six) * sixth,
                    v * om_min(om_max(v + 3.0f, 0.0f), 6.0f) * OM_SIXTH);
    case ACT_HARDSIGMOID:  /* clip(x * alpha + beta, 0, 1) */
        OM_ACT_ROWS(SFX(min8)(SFX(max8)(v * lo + hi, zero), one),
                    om_min(om_max(v * p0 + p1, 0.0f), 1.0f));
    case ACT_SWISH: OM_ACT_ROWS(v * SFX(sigmoid8)(lo * v), v * om_sigmoid(p0 * v));
    default: for (; i < n; i++) x[i] = om_act(act, x[i]); break;
    }
#undef OM_ACT_ROWS
}

/* NB output positions p0.. of dw_small (flattened over the rows): NB independent sums, so
 * the FMAs of a position's taps overlap those of the others (one position at a time was a
 * chain of kh kw dependent FMAs, latency-bound at about a quarter of the FMA rate) */
static inline __attribute__((always_inline)) void SFX(dw_small_block)(
        int NB, const float *xb, const float *wb, V8 bv, float *ob, long p0, long Wo, long Wp,
        long kh, long kw, long sh, long sw, long dh, long dw, int act, V8 lo, V8 hi) {
    const float *base[8];
    V8 c[8];
    long oh = p0 / Wo, ow = p0 - oh * Wo;  /* then stepped: no division a position */
    OM_UNROLL for (int b = 0; b < NB; b++) {
        base[b] = xb + (oh * sh * Wp + ow * sw) * 8;
        c[b] = (V8){0};
        if (++ow == Wo) { ow = 0; oh++; }
    }
    for (long u = 0, k = 0; u < kh; u++)
        for (long t = 0; t < kw; t++, k++) {
            V8 w = SFX(ld8)(wb + k * 8);
            long o = (u * dh * Wp + t * dw) * 8;
            OM_UNROLL for (int b = 0; b < NB; b++) c[b] += w * SFX(ld8)(base[b] + o);
        }
    OM_UNROLL for (int b = 0; b < NB; b++) {
        V8 v = c[b] + bv;
        if (act == ACT_RELU) v = SFX(relu8)(v);
        else if (act == ACT_CLIP) v = SFX(min8)(SFX(max8)(v, lo), hi);
        SFX(st8)(ob + (p0 + b) * 8, v);
    }
}

/* a depthwise convolution on a small map (where the lowering's heuristics choose it: on
 * AVX-512 at most 64 output positions at stride 1 and 256 at larger strides, on AVX2 more;
 * heuristics.py dw_small_wins), 8 channels in the 8 lanes: per block of 8 channels the
 * zero-padded input is gathered as [Hp][Wp][8] (8 positions of 8 channels at a time through an 8x8 transpose in registers, and
 * back for the output: the scalar moves were most of a 4x4 layer's time) and the taps'
 * weights as [k][8], so each output position is kh * kw vector FMAs over its window, 8
 * positions at once (dw_small_block), with no tile of 24 positions mostly empty and no
 * per-channel setup (a 960-channel layer on a 2x2 map was about 40 ns a channel). Same order
 * of sums as dw_rows: the taps from zero, then the bias.
 * Measured on Zen 5 (avx512 copy, b4, 3x3): 192 channels on 8x8 25 us against the direct
 * kernel's (om_dw.h) 40; 144 on 16x16 at stride 1 79 against 67, so dw_direct keeps that;
 * 96 channels 32x32 -> 16x16 at stride 2 74 us, 180 with a chain of FMAs a position and a
 * division a gathered vector. 16 channels in a zmm was 5-10 % faster on 2x2 to 8x8 maps and
 * 1.4x slower on that strided 32x32 one, whose [Hp][Wp][16] block (74 KiB) leaves L1; not kept.
 * xb: scratch of (Hp Wp + kh kw + Ho Wo) * 8 floats (instructions.py: dw_small_scratch). */
static void SFX(dw_small)(const float *x, const float *wpk, const float *bias, float *out,
                          float *xb, long Nn, long C, long H, long W, long kh, long kw,
                          long ph, long pw, long sh, long sw, long dh, long dw, long Ho, long Wo,
                          int act, float ep0, float ep1) {
    long Hp = H + 2 * ph, Wp = W + 2 * pw, K = kh * kw, HW = H * W, P = Ho * Wo;
    float *wb = xb + Hp * Wp * 8, *ob = wb + K * 8;
    V8 lo = SFX(bc)(ep0), hi = SFX(bc)(ep1);
    int late = act != ACT_NONE && act != ACT_RELU && act != ACT_CLIP;
    for (long c0 = 0; c0 < C; c0 += 8) {  /* a block's taps gathered once for every image */
        long nl = C - c0 < 8 ? C - c0 : 8;
        memset(wb, 0, K * 8 * sizeof(float));
        float bl[8] = {0};
        for (long l = 0; l < nl; l++) {
            for (long k = 0; k < K; k++) wb[k * 8 + l] = wpk[(c0 + l) * 4 * K + 4 * k];
            if (bias) bl[l] = bias[c0 + l];
        }
        V8 bv = SFX(ld8)(bl);
        /* the padding and the lanes past nl stay zero: each image rewrites only the inside */
        memset(xb, 0, Hp * Wp * 8 * sizeof(float));
        for (long nn = 0; nn < Nn; nn++) {
            const float *src = x + (nn * C + c0) * HW;
            long p = 0;
            if (nl == 8)  /* 8 channels x 8 positions transposed in registers */
                for (; p + 8 <= HW; p += 8) {
                    V8 r[8];
                    for (int l = 0; l < 8; l++) r[l] = SFX(ld8)(src + l * HW + p);
                    SFX(transpose8)(r);
                    long h = p / W, w = p - h * W;  /* then stepped: a division per 8 */
                    for (int q = 0; q < 8; q++) {
                        SFX(st8)(xb + ((h + ph) * Wp + w + pw) * 8, r[q]);
                        if (++w == W) { w = 0; h++; }
                    }
                }
            for (long h = p / W, w = p - h * W; p < HW; p++) {
                float *d = xb + ((h + ph) * Wp + w + pw) * 8;
                for (long l = 0; l < nl; l++) d[l] = src[l * HW + p];
                if (++w == W) { w = 0; h++; }
            }
            for (p = 0; p + 8 <= P; p += 8)
                SFX(dw_small_block)(8, xb, wb, bv, ob, p, Wo, Wp, kh, kw, sh, sw, dh, dw, act,
                                    lo, hi);
            for (; p + 4 <= P; p += 4)
                SFX(dw_small_block)(4, xb, wb, bv, ob, p, Wo, Wp, kh, kw, sh, sw, dh, dw, act,
                                    lo, hi);
            for (; p < P; p++)
                SFX(dw_small_block)(1, xb, wb, bv, ob, p, Wo, Wp, kh, kw, sh, sw, dh, dw, act,
                                    lo, hi);
            if (late)  /* the 8 lanes at once, not P at a time */
                SFX(act_rows)(act, ep0, ep1, ob, P * 8);
            float *o = out + (nn * C + c0) * P;
            p = 0;
            if (nl == 8)
                for (; p + 8 <= P; p += 8) {
                    V8 r[8];
                    for (int q = 0; q < 8; q++) r[q] = SFX(ld8)(ob + (p + q) * 8);
                    SFX(transpose8)(r);
                    for (int l = 0; l < 8; l++) SFX(st8)(o + l * P + p, r[l]);
                }
            for (; p < P; p++)
                for (long l = 0; l < nl; l++) o[l * P + p] = ob[p * 8 + l];
        }
    }
}

#include "om_dw.h"  /* dw_direct: larger depthwise maps, 3x3 and 5x5, row by row */

/* the phase planes of cig channels (see conv_direct): each input row is laid out once with its
 * padding in tmp (Wp sw + 16 floats), then split by column phase; at column stride 2 the split
 * is 8 even and 8 odd columns per two vector loads (this was a scalar loop with a bounds test
 * per element, most of a strided depthwise convolution's time on a 32x32 map) */
static void SFX(phase_planes)(const float *xg, float *xp, long cig, long H, long W, long sh,
                              long sw, long ph, long pw, long Hph, long Wp, long plane,
                              float *tmp, const SFX(Pro) *pro, long c0) {
    long wt = Wp * sw;
    memset(tmp, 0, (wt + 16) * sizeof(float));  /* its padding stays zero: rows fill the inside */
    for (long ci = 0; ci < cig; ci++)
        for (long a = 0; a < sh; a++) {
            float *pl = xp + (ci * sh + a) * sw * plane;  /* plane (a, 0); (a, b) b planes on */
            for (long i = 0; i < Hph; i++) {
                long h = i * sh + a - ph;
                if (h < 0 || h >= H) {
                    for (long b = 0; b < sw; b++)
                        memset(pl + b * plane + i * Wp, 0, Wp * sizeof(float));
                    continue;
                }
                if (sw == 2 && (!pro || !pro->mean)) {  /* straight from the row (om_dw.h) */
                    float *r0 = pl + i * Wp;
                    SFX(dw_split2_row)(xg + (ci * H + h) * W, W, pw, r0, r0 + plane, Wp);
                    continue;
                }
                SFX(pro_row)(pro, c0 + ci, xg + (ci * H + h) * W, tmp + pw, W);  /* W + pw <= wt */
                if (sw == 2) {
                    float *r0 = pl + i * Wp;
                    SFX(dw_split2)(tmp, r0, r0 + plane, Wp);  /* om_dw.h */
                } else
                    for (long b = 0; b < sw; b++) {
                        float *row = pl + b * plane + i * Wp;
                        for (long j = 0; j < Wp; j++) row[j] = tmp[j * sw + b];
                    }
            }
        }
}

/* the direct convolution's tiles of 4 output channels over positions [q_lo, q_end): 24 at a
 * time (two 24s at once with OM_LANES16), the last 16 or 8 by 8s; q_endr: where the last tile
 * may write to (q_end rounded up to 24 at the end of the map, q_end inside it) */
static inline void SFX(conv_tiles)(long q_lo, long q_end, long q_endr, long kn, const long *koff,
                                   const float *xs, const float *wk, float *o, long ldo,
                                   const float *bb, int relu, int first, int last) {
    for (long q0 = q_lo; q0 < q_endr; q0 += CV_NR) {
        if (q_end - q0 <= 16) {  /* the tail: 8 positions at a time */
            for (long q8 = q0; q8 < q_end; q8 += 8)
                SFX(conv_tile8)(kn, koff, xs + q8, wk, o + q8, ldo, bb, relu, first, last);
            break;
        }
#ifdef OM_LANES16  /* this tile and the next when that one is whole (om_wide.h) */
        if (q0 + 2 * CV_NR <= q_endr && q_end - q0 - CV_NR > 16) {
            SFX(conv_tile48)(kn, koff, xs + q0, wk, o + q0, ldo, bb, relu, first, last);
            q0 += CV_NR;
            continue;
        }
#endif
        SFX(conv_tile)(kn, koff, xs + q0, wk, o + q0, ldo, bb, relu, first, last);
    }
}

/* f: x, N, Cin, H, W, Cout, kh, kw, ph, pw, dh, dw, G, Ho, Wo, wpacked, bias, act, out,
 *    scratch, pool, sh, sw, p0, p1 (the activation's parameters, as doubles), then the input
 *    prologue's mean, scale and shift (om_prologue.h; -1 for none; not on depthwise), and
 *    the floats of scratch (rules.py's conv rule computes them once, for the arena and for a
 *    worker's part)
 * Stride s > 1 becomes stride 1 over phase planes: plane (a, b) of a channel holds the padded
 * input at rows i * sh + a and columns j * sw + b, so tap (u, t) of output (oh, ow) reads plane
 * (u dh % sh, t dw % sw) at (oh + u dh / sh, ow + t dw / sw): again a shifted slice. */
/* images [n_lo, n_hi) only, with the scratch scr_part (NULL: the instruction's own): the
 * images are independent, so a split by images (om_split.h) computes the same bits.
 * noinline: inlined into its caller (the executor's switch, once; GCC's choice moved with
 * unrelated code, e.g. one more user of tanh8) the convolution tiles ran 2x slower */
static __attribute__((noinline)) void SFX(conv_direct_range)(const int64_t *f, float **bufs,
                                                            long n_lo, long n_hi,
                                                            float *scr_part) {
    const float *x = OM_ADDR(bufs, f[0]), *wpk = OM_ADDR(bufs, f[15]), *bias = OM_ADDR(bufs, f[16]);
    float *out = OM_ADDR(bufs, f[18]), *scr = OM_ADDR(bufs, f[19]);
    SFX(Pro) pro = {OM_ADDR(bufs, f[25]), OM_ADDR(bufs, f[26]), OM_ADDR(bufs, f[27])};  /* batch norm + ReLU, or none */
    long Nn = f[1], Cin = f[2], H = f[3], W = f[4], Cout = f[5], kh = f[6], kw = f[7];
    long ph = f[8], pw = f[9], dh = f[10], dw = f[11], G = f[12], Ho = f[13], Wo = f[14];
    int act = (int)f[17], mode = (int)f[20], pool = mode == 1;  /* 2: dw_small (below) */
    /* this part's images (the pool's spill below stays inside them) */
    x += n_lo * Cin * H * W;
    out += n_lo * Cout * (pool ? (Ho / 2) * (Wo / 2) : Ho * Wo);
    Nn = n_hi - n_lo;
    if (scr_part) scr = scr_part;
    long sh = f[21], sw = f[22];
    int strided = sh != 1 || sw != 1;
    long cig = Cin / G, cog = Cout / G, K = cig * kh * kw;
    long Hp = H + 2 * ph, Wp, plane, Hph = 0;
    if (!strided) {
        /* a row is [pw zeros][W values]: the right padding of a row is the left padding of
         * the next (a read past a row's end wraps into zeros), so a row is W + pw wide, not
         * W + 2 pw, and a plane ends with pw more zeros for its last row */
        Wp = W + pw;
        plane = Hp * Wp + pw;
    } else {
        Hph = (Hp + sh - 1) / sh;
        Wp = (W + 2 * pw + sw - 1) / sw;
        plane = Hph * Wp;
    }
    long nplanes = cig * sh * sw;
    long nq = (Ho - 1) * Wp + Wo, nqr = (nq + CV_NR - 1) / CV_NR * CV_NR;
    long cog4 = (cog + 3) / 4 * 4;
    long xpn = nplanes * plane + CV_NR + Wp;             /* slack for the last tile */
    float *xp = scr, *op = scr + (xpn + 15) / 16 * 16;
    long *koff = (long *)(op + cog4 * nqr + 32);   /* 32: slack read by pool2_rows */
    for (long ci = 0, k = 0; ci < cig; ci++)
        for (long u = 0; u < kh; u++)
            for (long t = 0; t < kw; t++, k++) {
                long a = u * dh % sh, b = t * dw % sw;
                koff[k] = ((ci * sh + a) * sw + b) * plane + (u * dh / sh) * Wp + t * dw / sw;
            }
    float ep0, ep1;  /* the activation's two parameters (clip's bounds, ...) */
    {
        double d0, d1;
        memcpy(&d0, f + 23, 8); memcpy(&d1, f + 24, 8);
        ep0 = (float)d0; ep1 = (float)d1;
    }
    long Hq = Ho / 2, Wq = Wo / 2;
    /* depthwise: on dw_small where the lowering chose it (mode 2: its heuristics, per kernel
     * copy, heuristics.py dw_small_wins) and the instruction's scratch holds its block, else
     * on the rows of 8-lane columns (om_dw.h) where that kernel fits and its scratch is
     * there, else on the general path below, which the scratch always holds */
    int depthwise = cig == 1 && cog == 1 && !pool && !pro.mean;
    long Pn = Ho * Wo;
    long dws = (Hp * (W + 2 * pw) + kh * kw + Pn) * 8;  /* instructions.py dw_small_scratch */
    if (depthwise && mode == 2 && dws <= f[28]) {
        SFX(dw_small)(x, wpk, bias, out, scr, Nn, Cin, H, W, kh, kw, ph, pw, sh, sw, dh, dw,
                      Ho, Wo, act, ep0, ep1);
        return;
    }
    if (depthwise && SFX(dw_direct_fits)(kh, kw, sh, sw, dh, dw, ph, pw)
        && SFX(dw_direct_scratch)(W, pw, sh) <= f[28]) {
        SFX(dw_direct)(kh, sh, x, wpk, bias, out, scr, Nn, Cin, H, W, ph, pw, Ho, Wo, act,
                       ep0, ep1);
        return;
    }
    /* a large input (over 64 KiB) is reduced over chunks of input channels of about 64 KiB
     * each (and at least 64 reduction steps): every tile then reads from fewer, nearer rows
     * (a few dozen streams, not hundreds), at the cost of reloading the partial sums once per
     * chunk */
    long kchunk = K;
    if (nplanes * plane > 16384 && cig > 1) {
        long cc = 16384 / (sh * sw * plane), least = (64 + kh * kw - 1) / (kh * kw);
        cc = cc < least ? least : cc;          /* at least 64 steps between reloads */
        cc = cc > cig ? cig : cc;
        kchunk = cc * kh * kw;
    }
    /* a 1x1 stride-1 convolution without padding on a map of a multiple of 8 positions, 4
     * output channels a group: the tiles write out in place (no compaction) and, without a
     * prologue, read x in place (no padded copy); those two copies were up to half of a 16->96
     * 1x1 convolution on 32x32 */
    int out_inplace = kh == 1 && kw == 1 && !strided && ph == 0 && pw == 0 && !pool
                      && (H * W) % 8 == 0 && cog % 4 == 0 && cig > 1;
    int in_inplace = out_inplace && !pro.mean;
    /* read in place, at most 64 input channels and over 16 KiB of them: positions in blocks
     * of about 16 KiB of input (a multiple of 48), each block's rows copied ldb apart, every
     * output channel of a block before the next block. In place, the tiles' input rows are
     * the planes, H W floats apart: at 32x32 that is 4 KiB, 16 or more streams on one L1 set
     * (12 ways), reloaded for every 4 output channels. Zen 5, avx512, b4: 16->96 on 32x32
     * 126 -> 108 us alone, 161 -> 113 inside mobilenet_v2; 144->24 on 16x16 (blocks of 48)
     * was 45 -> 55, hence the 64 */
    long qblock = 0, ldb = 0;
    if (in_inplace && kchunk == K && K <= 64 && K * H * W > 4096) {
        qblock = 4096 / K / 48 * 48;
        qblock = qblock < 48 ? 48 : qblock;
        ldb = qblock + 24 + 8;  /* the last tile's slack; not a power of two */
        if (K * ldb > xpn) qblock = 0;
        else
            for (long k = 0; k < K; k++) koff[k] = k * ldb;
    }
    if (!in_inplace) memset(xp, 0, xpn * sizeof(float));
    for (long nn = 0; nn < Nn; nn++)
        for (long g = 0; g < G; g++) {
            const float *xg = x + (nn * Cin + g * cig) * H * W;
            const float *xs = in_inplace ? xg : xp;          /* what the tiles read */
            float *og = out_inplace ? out + (nn * Cout + g * cog) * H * W : op;  /* and write */
            long ldo = out_inplace ? H * W : nqr;
            if (in_inplace)
                ;
            else if (!strided && pw == 0)  /* unpadded rows: a channel's rows are one run */
                for (long ci = 0; ci < cig; ci++)
                    SFX(pro_row)(&pro, g * cig + ci, xg + ci * H * W, xp + ci * plane + ph * Wp,
                                 H * W);
            else if (!strided)
                for (long ci = 0; ci < cig; ci++)
                    for (long h = 0; h < H; h++)
                        SFX(pro_row)(&pro, g * cig + ci, xg + (ci * H + h) * W,
                                     xp + ci * plane + (h + ph) * Wp + pw, W);
            else  /* every position of every phase plane: an input value or a zero */
                SFX(phase_planes)(xg, xp, cig, H, W, sh, sw, ph, pw, Hph, Wp, plane,
                                  (float *)(koff + K), &pro, g * cig);
            const float *wg = wpk + g * cog4 * K;
            const float *bg = bias ? bias + g * cog : 0;
            if (qblock) {  /* position blocks, every output channel of one before the next */
                for (long qs = 0; qs < nq; qs += qblock) {
                    long qe = qs + qblock < nq ? qs + qblock : nq;
                    for (long ci = 0; ci < K; ci++)  /* the block's input, rows ldb apart */
                        memcpy(xp + ci * ldb, xs + ci * H * W + qs, (qe - qs) * sizeof(float));
                    for (long cb = 0; cb < cog4; cb += 4) {
                        float bb[4];
                        for (int r = 0; r < 4; r++) bb[r] = bg && cb + r < cog ? bg[cb + r] : 0.0f;
                        SFX(conv_tiles)(0, qe - qs, qe == nq ? nqr - qs : qe - qs, K, koff, xp,
                                        wg + cb * K, og + cb * ldo + qs, ldo, bg ? bb : 0,
                                        act == ACT_RELU, 1, 1);
                        if (act != ACT_NONE && act != ACT_RELU)  /* while in L1 */
                            for (long co = cb; co < cb + 4; co++)
                                SFX(act_rows)(act, ep0, ep1, og + co * ldo + qs, qe - qs);
                    }
                }
                continue;
            }
            for (long k0 = 0; k0 < K; k0 += kchunk)  /* input channels by chunks */
            for (long cb = 0; cb < cog4; cb += 4) {
                long kn = K - k0 < kchunk ? K - k0 : kchunk;
                int first = k0 == 0, last = k0 + kn == K;
                float bb[4];
                for (int r = 0; r < 4; r++) bb[r] = bg && cb + r < cog ? bg[cb + r] : 0.0f;
                const float *wk = wg + cb * K + 4 * k0;
                if (cig == 1 && cog == 1)  /* depthwise: no 4 output channels share an input */
                    SFX(dw_rows)(K, koff, xp, wk, op, nq, nqr, bb[0], act == ACT_RELU);
                else
                    SFX(conv_tiles)(0, nq, nqr, kn, koff + k0, xs, wk, og + cb * ldo, ldo,
                                    bg ? bb : 0, act == ACT_RELU, first, last);
                if (!last) continue;
                /* these 4 channels, while they are in L1: pooled or compacted into out */
                long ce = cb + 4 < cog ? cb + 4 : cog;
                for (long co = cb; co < ce; co++) {
                    float *oc = og + co * ldo;
                    if (act != ACT_NONE && act != ACT_RELU)  /* ReLU was, in the tile */
                        SFX(act_rows)(act, ep0, ep1, oc, nq);
                    if (out_inplace) continue;
                    if (pool) {  /* channels and images are written in order */
                        float *o = out + ((nn * Cout + g * cog + co) * Hq) * Wq;
                        SFX(pool2_rows)(oc, Wp, Hq, Wq, o,
                                        ((Nn - nn) * Cout - (g * cog + co) - 1) * Hq * Wq);
                    } else {
                        float *o = out + ((nn * Cout + g * cog + co) * Ho) * Wo;
                        SFX(compact_rows)(oc, Wp, Ho, Wo, o,
                                          ((Nn - nn) * Cout - (g * cog + co) - 1) * Ho * Wo);
                    }
                }
            }
        }
}

static void SFX(conv_direct)(const int64_t *f, float **bufs) {
    SFX(conv_direct_range)(f, bufs, 0, f[1], 0);
}

/* the floats of scratch conv_direct_range uses: a worker's part gets this much of its own */
static long SFX(conv_direct_scratch)(const int64_t *f) { return f[28]; }

#include "om_conv_lanes.h"  /* channels in the lanes: one group, Cout % 16 == 0 */

#include "om_conv1x1.h"

static void SFX(conv1x1_gemm)(const int64_t *f, float **bufs) {
    SFX(conv1x1_range)(f, bufs, 0, f[1]);
}

#include "om_conv_gemm.h"
#include "om_pool3.h"

/* pack B = src^T (element (k, n) at src[n * ld + k], rows of src contiguous) into 16-column
 * panels: reads each row of src once, contiguously (the keys of attention) */
static void SFX(pack_bt)(const float *src, long K, long N, long ld, float *dst) {
    long np = (N + 15) / 16;
    for (long j = 0; j < np; j++) {
        float *d = dst + j * K * 16;
        for (int c0 = 0; c0 < 16; c0 += 8) {
            long n0 = j * 16 + c0, k = 0;
            if (n0 + 8 <= N)  /* 8 rows x 8 columns at a time: an 8x8 transpose in registers
                               * (element by element it was 6 % of the attention kernel) */
                for (; k + 8 <= K; k += 8) {
                    const float *r = src + n0 * ld + k;
                    V8 r0 = SFX(ld8)(r), r1 = SFX(ld8)(r + ld), r2 = SFX(ld8)(r + 2 * ld),
                       r3 = SFX(ld8)(r + 3 * ld), r4 = SFX(ld8)(r + 4 * ld),
                       r5 = SFX(ld8)(r + 5 * ld), r6 = SFX(ld8)(r + 6 * ld),
                       r7 = SFX(ld8)(r + 7 * ld);
                    V8 a0 = OM_SHUF8X2(r0, r1, 0, 8, 1, 9, 4, 12, 5, 13);
                    V8 b0 = OM_SHUF8X2(r0, r1, 2, 10, 3, 11, 6, 14, 7, 15);
                    V8 a2 = OM_SHUF8X2(r2, r3, 0, 8, 1, 9, 4, 12, 5, 13);
                    V8 b2 = OM_SHUF8X2(r2, r3, 2, 10, 3, 11, 6, 14, 7, 15);
                    V8 a4 = OM_SHUF8X2(r4, r5, 0, 8, 1, 9, 4, 12, 5, 13);
                    V8 b4 = OM_SHUF8X2(r4, r5, 2, 10, 3, 11, 6, 14, 7, 15);
                    V8 a6 = OM_SHUF8X2(r6, r7, 0, 8, 1, 9, 4, 12, 5, 13);
                    V8 b6 = OM_SHUF8X2(r6, r7, 2, 10, 3, 11, 6, 14, 7, 15);
                    V8 e0 = OM_SHUF8X2(a0, a2, 0, 1, 8, 9, 4, 5, 12, 13);
                    V8 e1 = OM_SHUF8X2(a0, a2, 2, 3, 10, 11, 6, 7, 14, 15);
                    V8 e2 = OM_SHUF8X2(b0, b2, 0, 1, 8, 9, 4, 5, 12, 13);
                    V8 e3 = OM_SHUF8X2(b0, b2, 2, 3, 10, 11, 6, 7, 14, 15);
                    V8 e4 = OM_SHUF8X2(a4, a6, 0, 1, 8, 9, 4, 5, 12, 13);
                    V8 e5 = OM_SHUF8X2(a4, a6, 2, 3, 10, 11, 6, 7, 14, 15);
                    V8 e6 = OM_SHUF8X2(b4, b6, 0, 1, 8, 9, 4, 5, 12, 13);
                    V8 e7 = OM_SHUF8X2(b4, b6, 2, 3, 10, 11, 6, 7, 14, 15);
                    float *o = d + k * 16 + c0;  /* column q of the 8 rows -> panel row k + q */
                    SFX(st8)(o, OM_SHUF8X2(e0, e4, 0, 1, 2, 3, 8, 9, 10, 11));
                    SFX(st8)(o + 16, OM_SHUF8X2(e1, e5, 0, 1, 2, 3, 8, 9, 10, 11));
                    SFX(st8)(o + 32, OM_SHUF8X2(e2, e6, 0, 1, 2, 3, 8, 9, 10, 11));
                    SFX(st8)(o + 48, OM_SHUF8X2(e3, e7, 0, 1, 2, 3, 8, 9, 10, 11));
                    SFX(st8)(o + 64, OM_SHUF8X2(e0, e4, 4, 5, 6, 7, 12, 13, 14, 15));
                    SFX(st8)(o + 80, OM_SHUF8X2(e1, e5, 4, 5, 6, 7, 12, 13, 14, 15));
                    SFX(st8)(o + 96, OM_SHUF8X2(e2, e6, 4, 5, 6, 7, 12, 13, 14, 15));
                    SFX(st8)(o + 112, OM_SHUF8X2(e3, e7, 4, 5, 6, 7, 12, 13, 14, 15));
                }
            for (int c = c0; c < c0 + 8; c++) {  /* the rest: element by element */
                long n = j * 16 + c;
                if (n < N) {
                    const float *r = src + n * ld;
                    for (long kk = k; kk < K; kk++) d[kk * 16 + c] = r[kk];
                } else
                    for (long kk = k; kk < K; kk++) d[kk * 16 + c] = 0.0f;
            }
        }
    }
}

/* -- the pointwise VM (om_vm.h) ----------------------------------------------------------------- */
#include "om_vm.h"

#include "om_rnn.h"
#include "om_split.h"

#include "om_kinds.h"
#undef V8
