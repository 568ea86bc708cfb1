/* Branch-free float32 math that GCC vectorises inside plain loops (no -ffast-math: NaN and inf
 * behave as numpy's). exp is Cephes' expf with a two-step scale (subnormal results stay right);
 * erf is the rational approximation the numpy backend uses for float32 (Eigen/XLA). */
#ifndef OM_MATH_H
#define OM_MATH_H
#include <stdint.h>
#include <string.h>

/* before a loop over a tile's rows: unrolled early, so that the accumulator arrays it indexes
 * become registers (unrolled late, GCC first turns their zeroing into a memset of a stack
 * array, and every tile pays for it) */
#if defined(__clang__)
#define OM_UNROLL _Pragma("unroll")
#else
#define OM_UNROLL _Pragma("GCC unroll 16")
#endif

/* the scalar functions with a polynomial: always inlined, so that each kernel copy compiles
 * them under its own ISA (with FMA in the AVX2 and AVX-512 copies, as their vector forms). A
 * call left out of line runs the baseline's code, without FMA: a copy's scalar tails would then
 * round as the compiler's inlining choice happens to fall, and two copies that run the same
 * operations would differ (avx2-w16 and avx2 did, in a GELU tail, when unrelated code moved). */
#define OM_MATHFN static inline __attribute__((always_inline))

static inline float om_bits_to_f(int32_t i) { float f; memcpy(&f, &i, 4); return f; }

/* The polynomials shared by the scalar functions here and their vector forms (GNU statement
 * expressions: T is float or a vector type, the same operations in the same order either way,
 * so a loop's vector body and its scalar tail agree bit for bit). */
/* exp's polynomial in the reduced argument r: e^r ~ y */
#define OM_EXP_POLY(T, r) ({ T r_ = (r), y_ = 1.9875691500E-4f * r_ + 1.3981999507E-3f; \
    y_ = y_ * r_ + 8.3334519073E-3f; \
    y_ = y_ * r_ + 4.1665795894E-2f; y_ = y_ * r_ + 1.6666665459E-1f; \
    y_ = y_ * r_ + 5.0000001201E-1f; y_ * r_ * r_ + r_ + 1.0f; })
/* tanh for |x| < 0.625, with z = x * x */
#define OM_TANH_SMALL(x, z) \
    (((((-5.70498872745E-3f * (z) + 2.06390887954E-2f) * (z) - 5.37397155531E-2f) * (z) \
       + 1.33314422036E-1f) * (z) - 3.33332819422E-1f) * (z) * (x) + (x))
/* erf(c) for c clamped to [-4, 4]: the ratio p(c) / q(c) */
#define OM_ERF_RATIO(T, c) ({ T c_ = (c), x2_ = c_ * c_; \
    T p_ = x2_ * -2.72614225801306e-10f + 2.77068142495902e-08f; \
    p_ = p_ * x2_ + -2.10102402082508e-06f; p_ = p_ * x2_ + -5.69250639462346e-05f; \
    p_ = p_ * x2_ + -7.34990630326855e-04f; p_ = p_ * x2_ + -2.95459980854025e-03f; \
    p_ = p_ * x2_ + -1.60960333262415e-02f; p_ = p_ * c_; \
    T q_ = x2_ * -1.45660718464996e-05f + -2.13374055278905e-04f; \
    q_ = q_ * x2_ + -1.68282697438203e-03f; q_ = q_ * x2_ + -7.37332916720468e-03f; \
    q_ = q_ * x2_ + -1.42647390514189e-02f; p_ / q_; })

/* The whole vector forms of om_exp, om_tanh, om_sigmoid, om_gelu and om_gelu_tanh, one source
 * for every lane count (om_kernels.h's 8 lanes, om_wide.h's 16): V is the float vector, I its
 * int32 vector, SEL(mask, a, b) a lane select, VMIN / VMAX a < b ? a : b / a > b ? a : b (b
 * when either is NaN), BC a broadcast, EXP / TANH the same width's exp / tanh. The scalar
 * functions below compute the same values (branches for the selects), so
 * every width and the scalar tails give the same bits. */
/* exp: x clamped (NaN restored at the end), n = round(x / ln 2) away from zero, r = x - n ln 2
 * in two steps, e^r by OM_EXP_POLY, times 2^n. ONE_SCALE(n): every lane's 2^n is a normal
 * float, so one scale gives the two scales' bits (y * 2^h is exact there); a width without a
 * cheap test passes OM_TWO_SCALES */
#define OM_TWO_SCALES(n) 0
#define OM_VEXP(V, I, SEL, VMIN, VMAX, BC, ONE_SCALE, x) ({ V ex_x = (x); \
    V ex_c = VMAX(BC(-104.0f), VMIN(BC(89.0f), ex_x)); \
    V ex_f = ex_c * 1.44269504088896341f; \
    /* +-0.5 with ex_f's sign (-0.0 gets -0.5: trunc(-0.5) = trunc(0.5) = 0, as om_exp) */ \
    V ex_h = (V)(((I)ex_f & (I)BC(-0.0f)) | (I)BC(0.5f)); \
    I ex_n = __builtin_convertvector(ex_f + ex_h, I); \
    V ex_nf = __builtin_convertvector(ex_n, V); \
    V ex_r = ex_c - ex_nf * 0.693359375f; \
    ex_r = ex_r - ex_nf * -2.12194440e-4f; \
    V ex_y = OM_EXP_POLY(V, ex_r), ex_res; \
    if (ONE_SCALE(ex_n)) ex_res = ex_y * (V)((ex_n + 127) << 23); \
    else { I ex_q = ex_n / 2; \
           ex_res = ex_y * (V)((ex_q + 127) << 23) * (V)((ex_n - ex_q + 127) << 23); } \
    SEL(ex_x != ex_x, ex_x, ex_res); })
/* tanh: the odd polynomial below 0.625, 1 - 2 / (e^2|x| + 1) with x's sign above */
#define OM_VTANH(V, SEL, EXP, x) ({ V th_x = (x); \
    V th_a = SEL(th_x < 0.0f, -th_x, th_x); \
    V th_z = th_x * th_x; \
    V th_small = OM_TANH_SMALL(th_x, th_z); \
    V th_e = EXP(2.0f * th_a); \
    V th_big = 1.0f - 2.0f / (th_e + 1.0f); \
    th_big = SEL(th_x < 0.0f, -th_big, th_big); \
    V th_r = SEL(th_a < 0.625f, th_small, th_big); \
    SEL(th_x != th_x, th_x, th_r); })
/* sigmoid as the numpy backend computes it: 0.5 * tanh(x / 2) + 0.5 (no overflow) */
#define OM_SIGMOID(TANH, x) (0.5f * TANH(0.5f * (x)) + 0.5f)
/* GELU: erf of x / sqrt(2) clamped to [-4, 4] (NaN stays NaN) */
#define OM_VGELU(V, VMIN, VMAX, BC, x) ({ V ge_x = (x); \
    V ge_z = ge_x * 0.70710678118654752f; \
    V ge_c = VMAX(BC(-4.0f), VMIN(BC(4.0f), ge_z)); \
    0.5f * ge_x * (1.0f + OM_ERF_RATIO(V, ge_c)); })
/* GELU-tanh (GPT-2's activation) */
#define OM_GELU_TANH(V, TANH, x) ({ V gt_x = (x); \
    V gt_u = 0.7978845608028654f * (gt_x + 0.044715f * gt_x * gt_x * gt_x); \
    0.5f * gt_x * (1.0f + TANH(gt_u)); })

OM_MATHFN float om_exp(float x) {
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;           /* NaN passes both tests unchanged */
    float fx = xc * 1.44269504088896341f;
    int32_t n = (int32_t)(fx + (fx < 0.0f ? -0.5f : 0.5f));
    float nf = (float)n;
    float r = xc - nf * 0.693359375f;
    r = r - nf * -2.12194440e-4f;
    float y = OM_EXP_POLY(float, r);
    int32_t h = n / 2;
    float p1 = om_bits_to_f((h + 127) << 23);
    float p2 = om_bits_to_f((n - h + 127) << 23);
    float res = y * p1 * p2;
    return x != x ? x : res;
}

OM_MATHFN float om_tanh(float x) {
    float ax = x < 0.0f ? -x : x;
    float z = x * x;
    float small = OM_TANH_SMALL(x, z);
    float e = om_exp(2.0f * ax);
    float big = 1.0f - 2.0f / (e + 1.0f);
    big = x < 0.0f ? -big : big;
    float r = ax < 0.625f ? small : big;
    return x != x ? x : r;
}

OM_MATHFN float om_sigmoid(float x) { return OM_SIGMOID(om_tanh, x); }

OM_MATHFN float om_erf(float x) {
    float c = x < -4.0f ? -4.0f : x;
    c = c > 4.0f ? 4.0f : c;
    return OM_ERF_RATIO(float, c);
}

OM_MATHFN float om_gelu(float x) { return 0.5f * x * (1.0f + om_erf(x * 0.70710678118654752f)); }

OM_MATHFN float om_gelu_tanh(float x) { return OM_GELU_TANH(float, om_tanh, x); }

/* numpy's maximum/minimum: NaN in either operand gives NaN */
static inline float om_max(float a, float b) { return a > b ? a : (b != b ? b : (a != a ? a : b)); }
static inline float om_min(float a, float b) { return a < b ? a : (b != b ? b : (a != a ? a : b)); }
static inline float om_relu(float x) { return x < 0.0f ? 0.0f : x; }

enum { ACT_NONE = 0, ACT_RELU = 1, ACT_SIGMOID = 2, ACT_TANH = 3, ACT_GELU = 4, ACT_GELU_TANH = 5,
       /* the convolution's epilogue only (act_rows), with parameters */
       ACT_CLIP = 6, ACT_HARDSWISH = 7, ACT_HARDSIGMOID = 8, ACT_SWISH = 9 };
#define OM_SIXTH 0.16666667f  /* float32(1/6), as the numpy kernel's x.dtype.type(1 / 6) */

OM_MATHFN float om_act(int act, float v) {
    switch (act) {
    case ACT_RELU: return om_relu(v);
    case ACT_SIGMOID: return om_sigmoid(v);
    case ACT_TANH: return om_tanh(v);
    case ACT_GELU: return om_gelu(v);
    case ACT_GELU_TANH: return om_gelu_tanh(v);
    default: return v;
    }
}
#endif
