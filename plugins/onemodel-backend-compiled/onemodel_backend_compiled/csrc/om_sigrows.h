/* Sigmoid and SiLU (swish: x * sigmoid(beta x)) over a row in place, as the convolution's
 * epilogue (act_rows) computes them: sigmoid(z) = 1 / (1 + exp(-z)), one exp and one division
 * a value. The numpy backend's 0.5 tanh(z / 2) + 0.5 costs the tanh's exp, its division and
 * its small-argument polynomial with the selects between them; both are within a few ulps of
 * the true sigmoid (the docs' rtol 1e-4, atol 1e-5 with room to spare), and NaN, +-inf and
 * -0.0 give what numpy gives (NaN; 1 and 0, so swish(-inf) is NaN as -inf * 0; -0.0). A row
 * of fewer than 8 values, or its last ones, go through one padded vector too: the scalar
 * om_sigmoid is compiled for the baseline ISA and called out of line from the vector copies,
 * about 180 ns a value from the AVX2 one (a 320->1280 1x1 convolution on a 2x2 map + SiLU:
 * 0.97 ms, 61 us without the activation). Included by om_kernels.h before act_rows, after the
 * 8-lane exp (and om_wide.h's 16-lane one in the OM_LANES16 copies: the same operations). */
#define OM_SIG_BODY(T, BC, EXP, LD, ST, STEP) do { T bv_ = BC(beta); \
    if (swish) for (; i + STEP <= n; i += STEP) { T v = LD(x + i); \
        ST(x + i, v * (1.0f / (1.0f + EXP(-(bv_ * v))))); } \
    else for (; i + STEP <= n; i += STEP) { T v = LD(x + i); \
        ST(x + i, 1.0f / (1.0f + EXP(-v))); } } while (0)

static void SFX(sig_rows)(int swish, float beta, float *x, long n) {
    long i = 0;
#ifdef OM_LANES16
    OM_SIG_BODY(SFX(v16), SFX(bc16), SFX(exp16), SFX(ld16), SFX(st16), 16);
#endif
    OM_SIG_BODY(V8, SFX(bc), SFX(exp8), SFX(ld8), SFX(st8), 8);
    if (i < n) {  /* the last 1-7 values in one vector (the lanes past them: zeros, dropped) */
        float t[8] = {0}, *row = x + i;
        long r = n - i;
        memcpy(t, row, r * sizeof(float));
        x = t; n = 8; i = 0;
        OM_SIG_BODY(V8, SFX(bc), SFX(exp8), SFX(ld8), SFX(st8), 8);
        memcpy(row, t, r * sizeof(float));
    }
}
#undef OM_SIG_BODY
