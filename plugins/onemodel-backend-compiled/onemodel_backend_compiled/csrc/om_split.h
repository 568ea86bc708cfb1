/* Intra-op threads: how each instruction splits into independent parts (om_pool.h runs them).
 * Included by om_kernels.h, once per kernel copy (SFX); the driver that hands the parts to the
 * pool (om_exec.h) is compiled once and reaches these through the kind table (om_kinds.h).
 *
 * Every kind that splits has a range function computing items [lo, hi) of the instruction
 * (rows, images, heads, ...) by the same code the one-thread run uses on [0, items) -- the
 * kind's run function calls these same functions on the whole range -- so a split never
 * changes a result bit: each output element is computed by the same code, in the same order,
 * whatever the number of threads.
 *
 * To let a new instruction kind use the threads: give it a range function and a split function
 * (SFX(<kind>_split): its items, an estimate of its work in FLOP-equivalents, the scratch
 * floats a part on another thread needs, 0 when parts share the instruction's) here, and name
 * both in its entry of om_kinds.h. Parts must write disjoint outputs and may read anything the
 * instruction reads. */

/* I_BMM, batches [lo, hi): nb, A, sa, lda, B, sb, bk, bn, out, so, M, K, N, act, scratch.
 * With B shared by the batches (sb = 0) it is packed once: by this call when pack_shared,
 * else already in S (om_split's prep) */
static void SFX(bmm_range)(const int64_t *f, float **bufs, long lo, long hi, float *S,
                           int pack_shared) {
    long M = f[10], K = f[11], N = f[12];
    float *A = OM_ADDR(bufs, f[1]), *B = OM_ADDR(bufs, f[4]), *C = OM_ADDR(bufs, f[8]);
    SFX(Epi) e = {0, 0, 0, 0, (int)f[13]};
    for (long b = lo; b < hi; b++) {
        if (f[5] != 0 || (b == lo && pack_shared)) SFX(pack_b)(B + b * f[5], K, N, f[6], f[7], S);
        SFX(gemm)(M, K, N, A + b * f[2], f[3], S, C + b * f[9], N, &e);
    }
}

/* I_MEAN_ROWS, rows [lo, hi): x, rows, cols, out: the mean of each contiguous row */
static void SFX(mean_range)(const int64_t *f, float **bufs, long lo, long hi) {
    const float *x = OM_ADDR(bufs, f[0]);
    float *y = OM_ADDR(bufs, f[3]);
    long cols = f[2];
    for (long r = lo; r < hi; r++) y[r] = SFX(sum)(x + r * cols, cols) / (float)cols;
}

/* I_SOFTMAX, rows [lo, hi): x, y, rows, cols */
static void SFX(softmax_range)(const int64_t *f, float **bufs, long lo, long hi) {
    long cols = f[3];
    const float *x = OM_ADDR(bufs, f[0]);
    float *y = OM_ADDR(bufs, f[1]);
    for (long r = lo; r < hi; r++) SFX(softmax_row)(x + r * cols, y + r * cols, cols, 1.0f, 1);
}

/* the first n (< 8) floats of p, the other lanes pad */
static inline V8 SFX(ld8_pad)(const float *p, long n, float pad) {
    float t[8] = {pad, pad, pad, pad, pad, pad, pad, pad};
    memcpy(t, p, n * sizeof(float));
    return SFX(ld8)(t);
}

/* I_LAYERNORM, rows [lo, hi): x, y, rows, cols, gamma, beta, eps.
 * Every step is a vector one, the row's last cols % 8 values too (one step padded with the
 * mean, whose delta adds +0, and stored through a buffer): a scalar tail would leave it to the
 * compiler whether d * d + var, or v * g + b, is one fused multiply-add, and GCC decides that
 * differently per target (the avx512 copy fused what the avx2 copy did not). A missing weight
 * is 1 and a missing bias -0.0: x * 1 and x + -0.0 are x, bit for bit, fused or not. */
static void SFX(layernorm_range)(const int64_t *f, float **bufs, long lo, long hi) {
    long cols = f[3];
    const float *x = OM_ADDR(bufs, f[0]), *g = OM_ADDR(bufs, f[4]), *bt = OM_ADDR(bufs, f[5]);
    float *y = OM_ADDR(bufs, f[1]);
    double epsd; memcpy(&epsd, f + 6, 8);
    float eps = (float)epsd;
    long c8 = cols / 8 * 8, tail = cols - c8;
    V8 one = SFX(bc)(1.0f), nzero = SFX(bc)(-0.0f);
    for (long r = lo; r < hi; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mean = SFX(sum)(xr, cols) / (float)cols;
        V8 mv = SFX(bc)(mean), sq = {0};
        for (long i = 0; i < c8; i += 8) { V8 dlt = SFX(ld8)(xr + i) - mv; sq += dlt * dlt; }
        if (tail) { V8 dlt = SFX(ld8_pad)(xr + c8, tail, mean) - mv; sq += dlt * dlt; }
        float var = SFX(hsum8)(sq) / (float)cols;
        float inv = 1.0f / sqrtf(var + eps);
        V8 iv = SFX(bc)(inv);
#ifdef OM_LANES16
        long i = SFX(ln_wide)(xr, yr, g, bt, mean, inv, cols);  /* om_wide.h: the 16s first */
#else
        long i = 0;
#endif
        for (; i < c8; i += 8)
            SFX(st8)(yr + i, (SFX(ld8)(xr + i) - mv) * iv * (g ? SFX(ld8)(g + i) : one)
                             + (bt ? SFX(ld8)(bt + i) : nzero));
        if (tail) {
            float t[8];
            SFX(st8)(t, (SFX(ld8_pad)(xr + c8, tail, mean) - mv) * iv
                        * (g ? SFX(ld8_pad)(g + c8, tail, 1.0f) : one)
                        + (bt ? SFX(ld8_pad)(bt + c8, tail, -0.0f) : nzero));
            memcpy(yr + c8, t, tail * sizeof(float));
        }
    }
}

/* I_ATTN, heads [lo, hi) of nb0 x nb1, with the scratch scr (NULL: the instruction's):
 * nb0, nb1, sq, sk, d, dv, scale, q(addr,s0,s1,ss), k(..), v(..), o(..), scratch; I_ATTN_MASK
 * (masked) the same, then mask(addr, s0, s1, row, col), is_bool.
 * Per head, S = Q K^T on the packed GEMM (K packed as the B panels), a softmax per row of S
 * left unnormalised, O = S V (V packed) written at O's strides, and each row of O divided by
 * its row's sum (dv divisions a row instead of sk) */
static long SFX(attn_scratch)(const int64_t *f) {
    long sq = f[2], sk = f[3], d = f[4], dv = f[5];
    return (sk + 15) / 16 * 16 * d + sq * sk + (dv + 15) / 16 * 16 * sk + sq;
}

static void SFX(attn_range)(const int64_t *f, float **bufs, long lo, long hi, float *scr,
                            int masked) {
    long nb1 = f[1], sq = f[2], sk = f[3], d = f[4], dv = f[5];
    double scd; memcpy(&scd, f + 6, 8);
    float scale = (float)scd;
    const int64_t *Q = f + 7, *Kd = f + 11, *Vd = f + 15, *O = f + 19;
    float *kp = scr ? scr : OM_ADDR(bufs, f[23]), *S = kp + (sk + 15) / 16 * 16 * d;
    float *vp = S + sq * sk, *sums = vp + (dv + 15) / 16 * 16 * sk;
    SFX(Epi) none = {0, 0, 0, 0, ACT_NONE};
    for (long h = lo; h < hi; h++) {
        long b0 = h / nb1, b1 = h % nb1;
        const float *q = OM_ADDR(bufs, Q[0]) + b0 * Q[1] + b1 * Q[2];
        const float *k = OM_ADDR(bufs, Kd[0]) + b0 * Kd[1] + b1 * Kd[2];
        const float *v = OM_ADDR(bufs, Vd[0]) + b0 * Vd[1] + b1 * Vd[2];
        float *o = OM_ADDR(bufs, O[0]) + b0 * O[1] + b1 * O[2];
        SFX(pack_bt)(k, d, sk, Kd[3], kp);
        SFX(gemm)(sq, d, sk, q, Q[3], kp, S, sk, &none);
        float rs = scale;
        if (masked) {  /* S scaled and masked first (om_masks.h) */
            SFX(attn_mask)(S, sq, sk, scale, OM_ADDR(bufs, f[24]) + b0 * f[25] + b1 * f[26], f[27],
                           f[28], (int)f[29]);
            rs = 1.0f;
        }
        for (long i = 0; i < sq; i++)
            sums[i] = SFX(softmax_row)(S + i * sk, S + i * sk, sk, rs, 0);
        SFX(pack_b)(v, sk, dv, Vd[3], 1, vp);
        SFX(gemm)(sq, sk, dv, S, sk, vp, o, O[3], &none);
        for (long i = 0; i < sq; i++) SFX(div_row)(o + i * O[3], dv, sums[i]);
    }
}

/* I_MAXPOOL / I_AVGPOOL, channels [lo, hi): x, NC, H, W, kh, kw, sh, sw, ph, pw, Ho, Wo, out */
static void SFX(pool_range)(int isavg, const int64_t *f, float **bufs, long lo, long hi) {
    long H = f[2], W = f[3], kh = f[4], kw = f[5], sh = f[6], sw = f[7];
    long ph = f[8], pw = f[9], Ho = f[10], Wo = f[11];
    const float *x = OM_ADDR(bufs, f[0]) + lo * H * W;
    float *out = OM_ADDR(bufs, f[12]) + lo * Ho * Wo;
    long NC = hi - lo;
    float inv = 1.0f / (float)(kh * kw);
    if (!isavg && kh == 3 && kw == 3 && sh == 2 && sw == 2
        && SFX(maxpool3s2)(x, out, NC, H, W, ph, pw, Ho, Wo))
        return;
    if (!isavg && kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0
        && 2 * Ho <= H && 2 * Wo <= W) {  /* (not a ceil-mode pool's clipped windows) */
        SFX(maxpool2s2)(x, out, NC, H, W, Ho, Wo);  /* om_pool3.h */
        return;
    }
    if (!isavg && kw <= 64) {  /* by output rows: each valid tap a max over a run of outputs */
        long ow_lo[64], ow_hi[64];  /* per column tap t: outputs whose input is in range */
        for (long t = 0; t < kw; t++) {
            long l = pw - t > 0 ? (pw - t + sw - 1) / sw : 0;
            long h = (W - 1 + pw - t) >= 0 ? (W - 1 + pw - t) / sw + 1 : 0;
            ow_lo[t] = l; ow_hi[t] = h < Wo ? h : Wo;
        }
        for (long c = 0; c < NC; c++)
            for (long oh = 0; oh < Ho; oh++) {
                float *o = out + (c * Ho + oh) * Wo;
                for (long ow = 0; ow < Wo; ow++) o[ow] = -INFINITY;
                for (long u = 0; u < kh; u++) {
                    long ih = oh * sh - ph + u;
                    if (ih < 0 || ih >= H) continue;
                    const float *row = x + (c * H + ih) * W - pw;
                    for (long t = 0; t < kw; t++) {
                        long ow = ow_lo[t];
                        for (; ow + 8 <= ow_hi[t]; ow += 8) {  /* 8 outputs at a time */
                            const float *q = row + ow * sw + t;
                            V8 v = {q[0], q[sw], q[2 * sw], q[3 * sw], q[4 * sw],
                                    q[5 * sw], q[6 * sw], q[7 * sw]};
                            SFX(st8)(o + ow, SFX(max8)(SFX(ld8)(o + ow), v));
                        }
                        for (; ow < ow_hi[t]; ow++) {  /* om_max without branches */
                            float a = o[ow], b = row[ow * sw + t];
                            o[ow] = (a > b) | (a != a) ? a : b;
                        }
                    }
                }
            }
        return;
    }
    for (long c = 0; c < NC; c++) {
        const float *xc = x + c * H * W;
        float *oc = out + c * Ho * Wo;
        for (long oh = 0; oh < Ho; oh++)
            for (long ow = 0; ow < Wo; ow++) {
                float m = isavg ? 0.0f : -INFINITY;
                for (long u = 0; u < kh; u++) {
                    long ih = oh * sh - ph + u;
                    if (ih < 0 || ih >= H) continue;
                    for (long t = 0; t < kw; t++) {
                        long iw = ow * sw - pw + t;
                        if (iw < 0 || iw >= W) continue;
                        float v = xc[ih * W + iw];
                        if (isavg) m += v;
                        else m = om_max(m, v);
                    }
                }
                oc[oh * Wo + ow] = isavg ? m * inv : m;
            }
    }
}

/* -- each kind's split (om_kind.h's split and range) ----------------------------------------- */
/* I_GEMM: A, lda, M, K, N, Bp, bias, bias_mode, resid, ldr, C, ldc, act */
static int SFX(gemm_split)(const int64_t *f, int threads, om_split_t *s) {
    long M = f[2], K = f[3], N = f[4], np = (N + 15) / 16;
    if (M == 1 && f[11] == N) return 0;  /* the GEMV (batch 1) */
    s->work = 2.0 * M * K * N;
    /* by 16-column panels when there are enough: each thread streams only its panels of the
     * weights (a split by rows streams all of them once per part: 4x the weight traffic of a
     * 784x512 layer at batch 64); else by row tiles (OM_GEMM_MR rows: 6, 12 in the 16-lane
     * copies) */
    s->items = np;
    s->mode = 1;
    if (np < 2 * threads) { s->items = (M + OM_GEMM_MR - 1) / OM_GEMM_MR; s->mode = 0; }
    return 1;
}

static void SFX(gemm_range)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                            float *scr) {
    SFX(Epi) e = {OM_ADDR(bufs, f[6]), (int)f[7], OM_ADDR(bufs, f[8]), f[9], (int)f[12]};
    long M = f[2], np = (f[4] + 15) / 16;
    (void)scr;
    if (mode == 0)
        SFX(gemm_part)(OM_GEMM_MR * lo, OM_GEMM_MR * hi < M ? OM_GEMM_MR * hi : M, 0, np, f[3],
                       f[4], OM_ADDR(bufs, f[0]), f[1], OM_ADDR(bufs, f[5]),
                       OM_ADDR(bufs, f[10]), f[11], &e);
    else
        SFX(gemm_part)(0, M, lo, hi, f[3], f[4], OM_ADDR(bufs, f[0]), f[1], OM_ADDR(bufs, f[5]), OM_ADDR(bufs, f[10]),
                       f[11], &e);
}

static int SFX(bmm_split)(const int64_t *f, int threads, om_split_t *s) {
    (void)threads;
    s->items = f[0];
    s->work = 2.0 * f[0] * f[10] * f[11] * f[12];
    s->scratch = f[5] != 0 ? (f[12] + 15) / 16 * 16 * f[11] : 0;
    return 1;
}

/* one B for every batch (sb = 0): packed once, before the parts */
static void SFX(bmm_prep)(const int64_t *f, float **bufs) {
    if (f[5] == 0) SFX(pack_b)(OM_ADDR(bufs, f[4]), f[11], f[12], f[6], f[7], OM_ADDR(bufs, f[14]));
}

static void SFX(bmm_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                          float *scr) {
    (void)mode;
    SFX(bmm_range)(f, bufs, lo, hi, scr ? scr : OM_ADDR(bufs, f[14]), 0);
}

static int SFX(attn_split)(const int64_t *f, int threads, om_split_t *s) {
    (void)threads;
    s->items = f[0] * f[1];
    s->work = 2.0 * s->items * f[2] * f[3] * (f[4] + f[5]) + 100.0 * s->items * f[2] * f[3];
    s->scratch = SFX(attn_scratch)(f);
    return 1;
}

static void SFX(attn_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                           float *scr) {
    (void)mode;
    SFX(attn_range)(f, bufs, lo, hi, scr, 0);
}

static void SFX(attn_mask_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                                float *scr) {
    (void)mode;
    SFX(attn_range)(f, bufs, lo, hi, scr, 1);
}

static int SFX(conv_direct_split)(const int64_t *f, int threads, om_split_t *s) {  /* images */
    long K = f[2] / f[12] * f[6] * f[7];
    (void)threads;
    s->items = f[1];
    s->work = 2.0 * f[1] * f[5] * f[13] * f[14] * K;
    s->scratch = SFX(conv_direct_scratch)(f);
    return 1;
}

static void SFX(conv_direct_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                                  float *scr) {
    (void)mode;
    SFX(conv_direct_range)(f, bufs, lo, hi, scr);
}

/* images x blocks of 32 output channels (om_conv_lanes.h) */
static int SFX(conv_lanes_split)(const int64_t *f, int threads, om_split_t *s) {
    (void)threads;
    s->items = SFX(cl_items)(f);
    s->work = 2.0 * f[1] * f[5] * f[13] * f[14] * f[2] * f[6] * f[7];
    s->scratch = f[28];
    return 1;
}

static void SFX(conv_lanes_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                                 float *scr) {
    (void)mode;
    SFX(conv_lanes_range)(f, bufs, lo, hi, scr);
}

static int SFX(conv1x1_split)(const int64_t *f, int threads, om_split_t *s) {
    (void)threads;
    s->items = f[1];
    s->work = 2.0 * f[1] * f[3] * f[2] * f[4];
    return 1;
}

static void SFX(conv1x1_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                              float *scr) {
    (void)mode; (void)scr;
    SFX(conv1x1_range)(f, bufs, lo, hi);
}

static int SFX(vm_split)(const int64_t *f, int threads, om_split_t *s) {
    (void)threads;
    s->items = SFX(vm_items)(f);
    s->work = (double)f[1] * f[2] * f[3] * f[4] * SFX(vm_cost)(f);
    return 1;
}

static void SFX(vm_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                         float *scr) {
    (void)mode; (void)scr;
    SFX(vm_range)(f, bufs, lo, hi);
}

static int SFX(softmax_split)(const int64_t *f, int threads, om_split_t *s) {
    (void)threads;
    s->items = f[2];
    s->work = 100.0 * f[2] * f[3];  /* an exponential, max, sum and division */
    return 1;
}

static void SFX(softmax_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                              float *scr) {
    (void)mode; (void)scr;
    SFX(softmax_range)(f, bufs, lo, hi);
}

static int SFX(layernorm_split)(const int64_t *f, int threads, om_split_t *s) {
    (void)threads;
    s->items = f[2];
    s->work = 40.0 * f[2] * f[3];
    return 1;
}

static void SFX(layernorm_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                                float *scr) {
    (void)mode; (void)scr;
    SFX(layernorm_range)(f, bufs, lo, hi);
}

static int SFX(mean_rows_split)(const int64_t *f, int threads, om_split_t *s) {
    (void)threads;
    s->items = f[1];
    s->work = 6.0 * f[1] * f[2];
    return 1;
}

static void SFX(mean_rows_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                                float *scr) {
    (void)mode; (void)scr;
    SFX(mean_range)(f, bufs, lo, hi);
}

static int SFX(pool_split)(const int64_t *f, int threads, om_split_t *s) {  /* max and avg */
    (void)threads;
    s->items = f[1];
    s->work = 16.0 * f[1] * f[10] * f[11] * f[4] * f[5];
    return 1;
}

static void SFX(maxpool_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                              float *scr) {
    (void)mode; (void)scr;
    SFX(pool_range)(0, f, bufs, lo, hi);
}

static void SFX(avgpool_part)(const int64_t *f, float **bufs, int mode, long lo, long hi,
                              float *scr) {
    (void)mode; (void)scr;
    SFX(pool_range)(1, f, bufs, lo, hi);
}
