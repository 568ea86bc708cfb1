/* Branch-free float32 math that GCC vectorises inside plain loops (no -ffast-math: NaN and inf
 * behave as numpy's). exp is Cephes' expf with a two-step scale (subnormal results stay right);
 * erf is the rational approximation the numpy backend uses for float32 (Eigen/XLA). */
#ifndef OM_MATH_H
#define OM_MATH_H
#include <stdint.h>
#include <string.h>

static inline float om_bits_to_f(int32_t i) { float f; memcpy(&f, &i, 4); return f; }

/* The polynomials shared by the scalar functions here and their 8-lane forms in om_kernels.h
 * (GNU statement expressions: T is float or the 8-lane vector, the same operations in the same
 * order either way, so a loop's vector body and its scalar tail agree bit for bit). */
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

static inline float om_exp(float x) {
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

static inline float om_tanh(float x) {
    float ax = x < 0.0f ? -x : x;
    float z = x * x;
    float small = OM_TANH_SMALL(x, z);
    float e = om_exp(2.0f * ax);
    float big = 1.0f - 2.0f / (e + 1.0f);
    big = x < 0.0f ? -big : big;
    float r = ax < 0.625f ? small : big;
    return x != x ? x : r;
}

/* sigmoid as the numpy backend computes it: 0.5 * tanh(x / 2) + 0.5 (no overflow) */
static inline float om_sigmoid(float x) { return 0.5f * om_tanh(0.5f * x) + 0.5f; }

static inline float om_erf(float x) {
    float c = x < -4.0f ? -4.0f : x;
    c = c > 4.0f ? 4.0f : c;
    return OM_ERF_RATIO(float, c);
}

static inline float om_gelu(float x) { return 0.5f * x * (1.0f + om_erf(x * 0.70710678118654752f)); }

static inline float om_gelu_tanh(float x) {
    float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + om_tanh(u));
}

/* numpy's maximum/minimum: NaN in either operand gives NaN */
static inline float om_max(float a, float b) { return a > b ? a : (b != b ? b : (a != a ? a : b)); }
static inline float om_min(float a, float b) { return a < b ? a : (b != b ? b : (a != a ? a : b)); }
static inline float om_relu(float x) { return x < 0.0f ? 0.0f : x; }

enum { ACT_NONE = 0, ACT_RELU = 1, ACT_SIGMOID = 2, ACT_TANH = 3, ACT_GELU = 4, ACT_GELU_TANH = 5,
       /* the convolution's epilogue only (act_rows), with parameters */
       ACT_CLIP = 6, ACT_HARDSWISH = 7, ACT_HARDSIGMOID = 8, ACT_SWISH = 9 };
#define OM_SIXTH 0.16666667f  /* float32(1/6), as the numpy kernel's x.dtype.type(1 / 6) */

static inline float om_act(int act, float v) {
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
