/* The pointwise VM's functions beyond om_math.h, on 8 lanes (included by om_kernels.h once per
 * kernel copy, after its vector math). Branch-free selects; no -ffast-math, so NaN, +-inf and
 * -0.0 behave as numpy's. The VM runs a block's last 1-7 elements through the same 8-lane code
 * on a padded copy (OM_VM_TAIL), so an element's bits never depend on where it falls.
 *
 * Accuracy at float32 against the correctly rounded result (measured over 2^20 arguments per
 * range and the special values by tests/test_vm_math.py, which asserts these bounds):
 *   sin, cos, tan   <= 1 ulp   musl's double kernels (__sindf, __cosdf, __tandf, errors below
 *                              2^-34) on a double range reduction (musl's __rem_pio2f: exact for
 *                              |x| < 2^28 pi/2 ~ 4.2e8); a finite lane beyond takes the C
 *                              library's double function, so huge arguments are right too
 *   atan, asin, acos, atan2  <= 2 ulp (Cephes' float polynomials; pi/2, pi in two parts)
 *   log1p, expm1    <= 2 ulp   Goldberg's and Kahan's forms over Cephes' logf and om_exp
 *   floor, ceil, rint (half to even, as numpy.rint), fmod, remainder, floor_divide: exact, the
 *                              same bits as numpy (the last two are numpy's npy_divmod on an
 *                              exact fmod)
 * Comparisons, logical ops and isfinite give 0.0 / 1.0 (om_masks.h's bools). */

typedef double SFX(d8) __attribute__((vector_size(64)));
typedef int64_t SFX(l8) __attribute__((vector_size(64)));
#define D8 SFX(d8)
#define L8 SFX(l8)
#define I8 SFX(i8v)

static inline D8 SFX(to_d8)(V8 x) { return __builtin_convertvector(x, D8); }
static inline V8 SFX(to_v8)(D8 x) { return __builtin_convertvector(x, V8); }
static inline D8 SFX(dsel)(L8 m, D8 a, D8 b) { return (D8)((m & (L8)a) | (~m & (L8)b)); }
static inline V8 SFX(fabs8)(V8 x) { return (V8)((I8)x & ~(I8)SFX(bc)(-0.0f)); }
/* |mag| with the sign bit of sgn */
static inline V8 SFX(copysign8)(V8 mag, V8 sgn) {
    I8 s = (I8)SFX(bc)(-0.0f);
    return (V8)(((I8)mag & ~s) | ((I8)sgn & s));
}
static inline int SFX(any8)(I8 m) {
    int r = 0;
    for (int k = 0; k < 8; k++) r |= m[k] != 0;
    return r;
}
static inline V8 SFX(sqrt8)(V8 x) {
#ifdef OM_VEC_MINMAX
    return __builtin_ia32_sqrtps256(x);
#else
    V8 r;
    for (int k = 0; k < 8; k++) r[k] = sqrtf(x[k]);
    return r;
#endif
}

#ifndef OM_VMATH_ONCE
#define OM_VMATH_ONCE
#define OM_TOINT 6755399441055744.0       /* 1.5 * 2^52: x + it - it rounds x to an integer */
#define OM_PIO2_HI 1.57079637050628662109375f   /* float(pi / 2) */
#define OM_PIO2_LO -4.37113900018624283e-8f     /* pi / 2 - OM_PIO2_HI */
#define OM_PI_HI 3.1415927410125732421875f
#define OM_PI_LO -8.74227800037248566e-8f
#define OM_PIO4_HI 0.785398185253143310546875f
#define OM_PIO4_LO -2.18556950009312141e-8f
#define OM_TRIG_BIG 4.2e8f                       /* below 2^28 pi/2: musl's medium case */
#endif

/* -- rounding ------------------------------------------------------------------------------ */
/* numpy.rint: half to even (the default rounding mode), -0.0 and the sign of zero results kept */
static inline V8 SFX(rint8)(V8 x) {
    V8 ax = SFX(fabs8)(x);
    V8 r = (ax + 8388608.0f) - 8388608.0f;  /* 2^23: every float above is an integer */
    return SFX(copysign8)(SFX(sel)(ax < 8388608.0f, r, ax), x);  /* NaN, inf: ax */
}
/* floor and ceil keep x's sign (ceil(-0.5) = -0.0, floor(0.5) = +0.0, as numpy) */
static inline V8 SFX(floor8)(V8 x) {
    V8 r = SFX(rint8)(x);
    return SFX(copysign8)(SFX(sel)(r > x, r - 1.0f, r), x);
}
static inline V8 SFX(ceil8)(V8 x) {
    V8 r = SFX(rint8)(x);
    return SFX(copysign8)(SFX(sel)(r < x, r + 1.0f, r), x);
}

/* -- sin, cos, tan ------------------------------------------------------------------------- */
/* x = n pi/2 + r (r in double, |r| <= ~pi/4), q = n mod 4: exact for |x| < 2^28 pi/2 */
static inline D8 SFX(rem_pio2)(V8 x, L8 *q) {
    D8 xd = SFX(to_d8)(x);
    D8 t = xd * 6.36619772367581382433e-01 + OM_TOINT;
    *q = (L8)t & 3;  /* the integer's low bits (two's complement: n mod 4 for n < 0 too) */
    D8 fn = t - OM_TOINT;
    return xd - fn * 1.57079631090164184570e+00 - fn * 1.58932547735281966916e-08;
}
/* musl's __sindf, __cosdf, __tandf: sin, cos, tan of |r| <= pi/4 (+ a little), in double */
static inline D8 SFX(dsin_k)(D8 x) {
    D8 z = x * x, w = z * z, r = -1.98393348360966317347e-04 + z * 2.71831149398982190640e-06;
    D8 s = z * x;
    return (x + s * (-1.66666666416265235595e-01 + z * 8.33332938588946318e-03)) + s * w * r;
}
static inline D8 SFX(dcos_k)(D8 x) {
    D8 z = x * x, w = z * z, r = -1.38867637746099294692e-03 + z * 2.43904487962774090654e-05;
    return ((1.0 + z * -4.99999997251031003120e-01) + w * 4.16666233237390631894e-02)
           + (w * z) * r;
}
static inline D8 SFX(dtan_k)(D8 x, L8 odd) {
    D8 z = x * x;
    D8 r = 2.97435743359967304927e-03 + z * 9.46564784943673166728e-03;
    D8 t = 5.33812378445670393523e-02 + z * 2.45283181166547278873e-02;
    D8 w = z * z, s = z * x, u = 3.33331395030791399758e-01 + z * 1.33392002712976742718e-01;
    r = (x + s * u) + (s * w) * (t + w * r);
    return SFX(dsel)(odd, -1.0 / r, r);
}
/* the lanes of finite |x| >= OM_TRIG_BIG, by the C library's double function (rare) */
#define OM_TRIG_HUGE(x, res, fn) do { \
    I8 huge_ = (SFX(fabs8)(x) >= OM_TRIG_BIG) & (SFX(fabs8)(x) < INFINITY); \
    if (SFX(any8)(huge_)) \
        for (int k = 0; k < 8; k++) if (huge_[k]) (res)[k] = (float)fn((double)(x)[k]); \
} while (0)

static inline V8 SFX(sin8)(V8 x) {
    L8 q;
    D8 r = SFX(rem_pio2)(x, &q);
    D8 s = SFX(dsin_k)(r), c = SFX(dcos_k)(r);
    D8 v = SFX(dsel)((q & 1) != 0, c, s);
    v = SFX(dsel)((q & 2) != 0, -v, v);
    V8 res = SFX(sel)(x == 0.0f, x, SFX(to_v8)(v));  /* sin(-0.0) = -0.0 (the kernel: +0.0) */
    OM_TRIG_HUGE(x, res, sin);
    return res;
}
static inline V8 SFX(cos8)(V8 x) {
    L8 q;
    D8 r = SFX(rem_pio2)(x, &q);
    D8 s = SFX(dsin_k)(r), c = SFX(dcos_k)(r);
    D8 v = SFX(dsel)((q & 1) != 0, -s, c);
    v = SFX(dsel)((q & 2) != 0, -v, v);
    V8 res = SFX(to_v8)(v);
    OM_TRIG_HUGE(x, res, cos);
    return res;
}
static inline V8 SFX(tan8)(V8 x) {
    L8 q;
    D8 r = SFX(rem_pio2)(x, &q);
    V8 res = SFX(to_v8)(SFX(dtan_k)(r, (q & 1) != 0));
    OM_TRIG_HUGE(x, res, tan);
    return res;
}

/* -- atan, asin, acos, atan2 (Cephes' atanf, asinf, acosf) ---------------------------------- */
static inline V8 SFX(atan8)(V8 x) {
    V8 ax = SFX(fabs8)(x);
    I8 big = ax > 2.414213562373095f, mid = ax > 0.4142135623730950f;
    /* pi/2 and pi/4 in two parts: the rounding of pi/4 alone is an ulp of atan(0.42) */
    V8 y0 = SFX(sel)(big, SFX(bc)(OM_PIO2_HI), SFX(sel)(mid, SFX(bc)(OM_PIO4_HI), (V8){0}));
    V8 y1 = SFX(sel)(big, SFX(bc)(OM_PIO2_LO), SFX(sel)(mid, SFX(bc)(OM_PIO4_LO), (V8){0}));
    V8 z = SFX(sel)(big, -1.0f / ax, SFX(sel)(mid, (ax - 1.0f) / (ax + 1.0f), ax));
    V8 zz = z * z;
    V8 p = (((8.05374449538e-2f * zz - 1.38776856032e-1f) * zz + 1.99777106478e-1f) * zz
            - 3.33329491539e-1f) * zz * z;
    return SFX(copysign8)(y0 + (z + (p + y1)), x);
}
/* asin(s) for |s| <= 0.5, z = s * s (or the reduced argument's z) */
static inline V8 SFX(asin_k)(V8 z, V8 s) {
    return ((((4.2163199048e-2f * z + 2.4181311049e-2f) * z + 4.5470025998e-2f) * z
             + 7.4953002686e-2f) * z + 1.6666752422e-1f) * z * s + s;
}
static inline V8 SFX(asin8)(V8 x) {
    V8 a = SFX(fabs8)(x);
    I8 hi = a > 0.5f;  /* asin(a) = pi/2 - 2 asin(sqrt((1 - a) / 2)) */
    V8 z = SFX(sel)(hi, 0.5f * (1.0f - a), a * a);  /* |x| > 1: z < 0, sqrt NaN */
    V8 s = SFX(sel)(hi, SFX(sqrt8)(z), a);
    V8 p = SFX(asin_k)(z, s);
    p = SFX(sel)(hi, (OM_PIO2_HI - (p + p)) + OM_PIO2_LO, p);
    return SFX(copysign8)(p, x);
}
static inline V8 SFX(acos8)(V8 x) {
    V8 a = SFX(fabs8)(x);
    I8 hi = a > 0.5f;  /* acos(a) = 2 asin(sqrt((1 - a) / 2)), acos(-a) = pi - that */
    V8 z = SFX(sel)(hi, 0.5f * (1.0f - a), x * x);
    V8 s = SFX(sel)(hi, SFX(sqrt8)(z), x);
    V8 p = SFX(asin_k)(z, s);
    V8 r_hi = SFX(sel)(x < 0.0f, (OM_PI_HI - (p + p)) + OM_PI_LO, p + p);
    V8 r_lo = (OM_PIO2_HI - p) + OM_PIO2_LO;
    return SFX(sel)(hi, r_hi, r_lo);
}
/* numpy.arctan2(y, x), C99's special cases: signed zeros, infinities, the quadrant */
static inline V8 SFX(atan2_8)(V8 y, V8 x) {
    V8 ay = SFX(fabs8)(y), ax = SFX(fabs8)(x);
    I8 yb = ay > ax;
    V8 t = SFX(sel)(yb, ax, ay) / SFX(sel)(yb, ay, ax);
    t = SFX(sel)((ax == 0.0f) & (ay == 0.0f), (V8){0}, t);
    t = SFX(sel)((ax == INFINITY) & (ay == INFINITY), SFX(bc)(1.0f), t);
    V8 r = SFX(atan8)(t);
    r = SFX(sel)(yb, (OM_PIO2_HI - r) + OM_PIO2_LO, r);
    r = SFX(sel)((I8)x < 0, (OM_PI_HI - r) + OM_PI_LO, r);  /* x's sign bit: -0.0 too */
    return SFX(copysign8)(r, y);
}

/* -- log1p, expm1 ------------------------------------------------------------------------- */
/* Cephes' logf: x = m 2^e, m in [sqrt(1/2), sqrt(2)); 0 -> -inf, x < 0 -> NaN */
static inline V8 SFX(log8)(V8 x) {
    I8 sub = (x < 1.17549435e-38f) & (x > 0.0f);
    V8 xs = SFX(sel)(sub, x * 8388608.0f, x);
    I8 e = (((I8)xs >> 23) & 0xff) - 126 - (sub & 23);
    V8 m = (V8)(((I8)xs & 0x007fffff) | 0x3f000000);
    I8 lo = m < 0.707106781186547524f;
    e = e + lo;  /* (a true mask is -1) */
    V8 f = SFX(sel)(lo, m + m - 1.0f, m - 1.0f);
    V8 ef = __builtin_convertvector(e, V8);
    V8 z = f * f;
    V8 y = ((((((((7.0376836292e-2f * f - 1.1514610310e-1f) * f + 1.1676998740e-1f) * f
                 - 1.2420140846e-1f) * f + 1.4249322787e-1f) * f - 1.6668057665e-1f) * f
              + 2.0000714765e-1f) * f - 2.4999993993e-1f) * f + 3.3333331174e-1f) * f * z;
    y = y + -2.12194440e-4f * ef;
    y = y + -0.5f * z;
    V8 r = f + y;
    r = r + 0.693359375f * ef;
    r = SFX(sel)(x == INFINITY, x, r);
    r = SFX(sel)(x == 0.0f, SFX(bc)(-INFINITY), r);
    return SFX(sel)((x < 0.0f) | (x != x), SFX(bc)(NAN), r);
}
/* log1p(x) = log(u) x / (u - 1), u = 1 + x (Goldberg: the rounding of u cancels) */
static inline V8 SFX(log1p8)(V8 x) {
    V8 u = 1.0f + x;
    V8 r = SFX(log8)(u) * (x / (u - 1.0f));
    r = SFX(sel)(u == 1.0f, x, r);  /* -0.0 and tiny x: x itself */
    return SFX(sel)(u == INFINITY, u, r);
}
/* expm1(x) = (u - 1) x / log(u), u = e^x (Kahan) */
static inline V8 SFX(expm1_8)(V8 x) {
    V8 u = SFX(exp8)(x), um1 = u - 1.0f;
    V8 r = um1 * (x / SFX(log8)(u));
    r = SFX(sel)(um1 == -1.0f, um1, r);
    r = SFX(sel)(u == 1.0f, x, r);
    return SFX(sel)(u == INFINITY, u, r);
}

/* -- fmod, remainder, floor_divide -------------------------------------------------------- */
/* C's fmodf, exact: |a| - t |b| in double with t = trunc(|a| / |b|), exact while t < 2^29 (t |b|
 * fits 53 bits); a quotient rounded up to the next integer is corrected by one |b|. The other
 * lanes (b zero, NaN or infinite, a infinite or NaN, a huge quotient) take fmodf. */
static inline V8 SFX(fmod8)(V8 a, V8 b) {
    V8 aa = SFX(fabs8)(a), ab = SFX(fabs8)(b);
    D8 ad = SFX(to_d8)(aa), bd = SFX(to_d8)(ab);
    D8 q = ad / bd;
    D8 t = (q + OM_TOINT) - OM_TOINT;
    t = SFX(dsel)(t > q, t - 1.0, t);
    D8 r = ad - t * bd;
    r = SFX(dsel)(r < 0.0, r + bd, r);
    V8 res = SFX(copysign8)(SFX(to_v8)(r), a);
    I8 ok = __builtin_convertvector(q < 536870912.0, I8) & (ab < INFINITY);
    if (SFX(any8)(~ok))
        for (int k = 0; k < 8; k++) if (!ok[k]) res[k] = fmodf(a[k], b[k]);
    return res;
}
/* numpy's npy_divmodf on that fmod: the remainder with b's sign, the floored quotient */
static inline V8 SFX(remainder8)(V8 a, V8 b) {
    V8 mod = SFX(fmod8)(a, b);
    I8 fix = (mod != 0.0f) & ((b < 0.0f) != (mod < 0.0f));
    V8 r = SFX(sel)(fix, mod + b, mod);
    return SFX(sel)(mod == 0.0f, SFX(copysign8)((V8){0}, b), r);
}
static inline V8 SFX(floordiv8)(V8 a, V8 b) {
    V8 mod = SFX(fmod8)(a, b), q = a / b;
    V8 div = (a - mod) / b;
    I8 fix = (mod != 0.0f) & ((b < 0.0f) != (mod < 0.0f));
    div = SFX(sel)(fix, div - 1.0f, div);
    V8 fl = SFX(floor8)(div);
    fl = SFX(sel)(div - fl > 0.5f, fl + 1.0f, fl);
    fl = SFX(sel)(div != 0.0f, fl, SFX(copysign8)((V8){0}, q));
    return SFX(sel)(b == 0.0f, q, fl);
}

/* -- bools (0.0 / 1.0; NaN is true, as numpy's) ------------------------------------------- */
static inline V8 SFX(bool8)(I8 m) { return SFX(sel)(m, SFX(bc)(1.0f), (V8){0}); }

/* rd = f(ra) / f(ra, rb) on every element by the 8-lane form: the last 1-7 elements of a block
 * on a zero-padded copy (so the result of an element does not depend on its position) */
#define OM_VM_LANES1(VEC) do { long i = 0; \
    for (; i + 8 <= n; i += 8) { V8 v = SFX(ld8)(ra + i); SFX(st8)(rd + i, VEC); } \
    if (i < n) { float t_[8] = {0}; memcpy(t_, ra + i, (n - i) * sizeof(float)); \
                 V8 v = SFX(ld8)(t_); SFX(st8)(t_, VEC); \
                 memcpy(rd + i, t_, (n - i) * sizeof(float)); } } while (0)
#define OM_VM_LANES2(VEC) do { long i = 0; \
    for (; i + 8 <= n; i += 8) { V8 u = SFX(ld8)(ra + i), v = SFX(ld8)(rb + i); \
                                 SFX(st8)(rd + i, VEC); } \
    if (i < n) { float s_[8] = {0}, t_[8] = {0}; \
                 memcpy(s_, ra + i, (n - i) * sizeof(float)); \
                 memcpy(t_, rb + i, (n - i) * sizeof(float)); \
                 V8 u = SFX(ld8)(s_), v = SFX(ld8)(t_); SFX(st8)(t_, VEC); \
                 memcpy(rd + i, t_, (n - i) * sizeof(float)); } } while (0)

/* the cases of these functions in vm_block's switch */
#define OM_VM_MATH_CASES \
    case VM_SIN: OM_VM_LANES1(SFX(sin8)(v)); break; \
    case VM_COS: OM_VM_LANES1(SFX(cos8)(v)); break; \
    case VM_TAN: OM_VM_LANES1(SFX(tan8)(v)); break; \
    case VM_ASIN: OM_VM_LANES1(SFX(asin8)(v)); break; \
    case VM_ACOS: OM_VM_LANES1(SFX(acos8)(v)); break; \
    case VM_ATAN: OM_VM_LANES1(SFX(atan8)(v)); break; \
    case VM_ATAN2: OM_VM_LANES2(SFX(atan2_8)(u, v)); break; \
    case VM_FLOOR: OM_VM_LANES1(SFX(floor8)(v)); break; \
    case VM_CEIL: OM_VM_LANES1(SFX(ceil8)(v)); break; \
    case VM_RINT: OM_VM_LANES1(SFX(rint8)(v)); break; \
    case VM_LOG1P: OM_VM_LANES1(SFX(log1p8)(v)); break; \
    case VM_EXPM1: OM_VM_LANES1(SFX(expm1_8)(v)); break; \
    case VM_FMOD: OM_VM_LANES2(SFX(fmod8)(u, v)); break; \
    case VM_REMAINDER: OM_VM_LANES2(SFX(remainder8)(u, v)); break; \
    case VM_FLOORDIV: OM_VM_LANES2(SFX(floordiv8)(u, v)); break; \
    case VM_AND: OM_VM_LANES2(SFX(bool8)((u != 0.0f) & (v != 0.0f))); break; \
    case VM_OR: OM_VM_LANES2(SFX(bool8)((u != 0.0f) | (v != 0.0f))); break; \
    case VM_NOT: OM_VM_LANES1(SFX(bool8)(v == 0.0f)); break; \
    case VM_ISFINITE: OM_VM_LANES1(SFX(bool8)(SFX(fabs8)(v) < INFINITY)); break;

#undef D8
#undef L8
#undef I8
