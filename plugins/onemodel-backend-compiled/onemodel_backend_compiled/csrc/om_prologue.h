/* A convolution's input prologue: evaluation batch norm and ReLU applied to each input row as
 * the kernel copies it into its own buffer (DenseNet normalises and rectifies every
 * concatenation right before a convolution; done here, neither map is written and read back).
 * The batch norm's pointwise pass in the same order, relu((x - mean) * scale + shift) (the
 * AVX2 copy may fuse the multiply and add: within one rounding of it). Included by
 * om_kernels.h (one copy per kernel set). */
typedef struct { const float *mean, *scale, *shift; } SFX(Pro);

/* dst[i] = relu((src[i] - m) * s + t) for channel c, or a plain copy without a prologue */
static void SFX(pro_row)(const SFX(Pro) *pr, long c, const float *src,
                                        float *dst, long n) {
    if (!pr || !pr->mean) { memcpy(dst, src, n * sizeof(float)); return; }
    float m = pr->mean[c], s = pr->scale[c], t = pr->shift[c];
    V8 mv = SFX(bc)(m), sv = SFX(bc)(s), tv = SFX(bc)(t);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        V8 v = SFX(ld8)(src + i) - mv;
        v = v * sv;
        v = v + tv;
        SFX(st8)(dst + i, SFX(relu8)(v));
    }
    for (; i < n; i++) {
        float v = src[i] - m;
        v = v * s;
        v = v + t;
        dst[i] = om_relu(v);
    }
}
