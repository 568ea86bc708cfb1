/* The channels-in-lanes direct convolution (I_CONV_LANES): one group, output channels a
 * multiple of 16, column stride 1 or 2. Included by om_kernels.h once per kernel copy, after
 * the direct kernel (it shares its prologue, epilogue, 2x2 max and 8x8 transpose).
 *
 * Why: the positions-in-lanes direct kernel (conv_direct_range) computes a row's padding
 * columns and a map's last partial tile and drops them: on a 16->32 3x3 convolution on 14x14
 * it executes 69,120 FMA instructions an image for 56,448 useful ones (82 %), where ORT's
 * NCHWc kernel keeps channels in the lanes and wastes none. Here a register tile is R
 * consecutive outputs of one output row (R <= OM_CL_RMAX, a row of Wo split into near-equal
 * tiles) by 32 (or, for a last block, 16) output channels: two 16-lane accumulators a
 * position. A reduction step k = (ci, u, t) loads the 32 channels' weights once and
 * broadcasts each position's input value, at xp + koff[k] + r * sw: any stride along a row is
 * an address displacement, so no phase planes and no computed-and-dropped positions.
 *
 * Layout. The weights are packed [Cout / 32 blocks][K][32] (a last block of 16 as [K][16],
 * rules.py pack_lanes_weights). The input is read in place without padding or prologue, else
 * copied once per image into zero-padded planes (rows of W + 2 pw) with the batch-norm + ReLU
 * prologue applied on the copy. Results of a group of rows (about 128 positions) land as
 * [positions][32] in the scratch; bias and ReLU are applied in the tile, another activation
 * over the group (act_rows), an optional 2x2 max pool on that layout (pool2_rows' order of
 * the four maxima), then 8x8 transposes turn the group into channels-first rows in L1, each
 * copied to its plane as one run: a group's positions over consecutive rows are contiguous
 * in a plane (no compaction). Storing the transposes straight into the 32 planes (8-float
 * pieces of 32 streams) was slower: 1->16 + pool on 28x28 b64 417 against 344 us, 16->64 on
 * 55x55 b4 3110 against 2855 (Zen 4).
 *
 * Arithmetic: each output is the sum over k in order from zero, then the bias, then the
 * activation (then the pool): conv_direct_range's order where it does not chunk the input
 * channels (inputs over 64 KiB), so the same bits as it there and on every copy with fused
 * multiply-add, whatever R or the split (tests/test_conv_lanes.py).
 *
 * The split (om_split.h) is over images x channel blocks; a part copies an image's padded
 * input into its own scratch when it reaches that image. GCC/clang vector extensions only
 * (a 64-byte vector: one zmm with AVX-512, two ymm with AVX2, four xmm on the baseline). */

#ifndef OM_CL_RMAX
/* positions a tile: 28 accumulators need AVX-512's 32 registers; an 8-lane copy holds a
 * position's 32 channels in 4 ymm, so 3 positions (12 accumulators) fit its 16 */
#define OM_CL_RMAX 3
#endif
#define OM_CL_ROWS_POSITIONS 128  /* positions of a group of rows (its [positions][32]: 16 KiB) */

typedef float SFX(clv) __attribute__((vector_size(64)));
typedef int32_t SFX(cli) __attribute__((vector_size(64)));
#define CLV SFX(clv)

static inline CLV SFX(cl_ld)(const float *p) { CLV v; memcpy(&v, p, 64); return v; }
static inline void SFX(cl_st)(float *p, CLV v) { memcpy(p, &v, 64); }
static inline CLV SFX(cl_bc)(float x) {
    return (CLV){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
}

/* ReLU as relu8: 0 where 0 > v (+0.0), else v (NaN and -0.0 pass) */
static inline CLV SFX(cl_relu)(CLV v) {
    SFX(cli) neg = (CLV){0} > v;
    return (CLV)((SFX(cli))v & ~neg);
}

/* R positions (stride S along the row) x 16 NV channels: sums over k from zero, + bias, then
 * ReLU when relu is set, into dst[r][16 NV] */
#ifdef OM_LANES16
static inline __attribute__((always_inline)) void SFX(cl_tile)(
        const int R, const int S, const int NV, long K, const long *koff, const float *xr,
        const float *wp, const float *bias, float *dst, int relu) {
    CLV c0[14], c1[14];  /* R <= 14: the table below */
    OM_UNROLL for (int r = 0; r < R; r++) { c0[r] = (CLV){0}; c1[r] = (CLV){0}; }
    for (long k = 0; k < K; k++) {
        const float *p = xr + koff[k];
        CLV w0 = SFX(cl_ld)(wp + 16 * NV * k);
        CLV w1 = NV > 1 ? SFX(cl_ld)(wp + 16 * NV * k + 16) : w0;
        OM_UNROLL for (int r = 0; r < R; r++) {
            CLV a = SFX(cl_bc)(p[r * S]);
            c0[r] += a * w0;
            if (NV > 1) c1[r] += a * w1;
        }
    }
    CLV b0 = bias ? SFX(cl_ld)(bias) : (CLV){0};
    CLV b1 = bias && NV > 1 ? SFX(cl_ld)(bias + 16) : (CLV){0};
    OM_UNROLL for (int r = 0; r < R; r++) {
        CLV v0 = bias ? c0[r] + b0 : c0[r], v1 = bias ? c1[r] + b1 : c1[r];
        SFX(cl_st)(dst + 16 * NV * r, relu ? SFX(cl_relu)(v0) : v0);
        if (NV > 1) SFX(cl_st)(dst + 16 * NV * r + 16, relu ? SFX(cl_relu)(v1) : v1);
    }
}
#else
/* the same on 8-lane vectors: a 64-byte vector on AVX2 went through the stack (GCC 12: 930
 * stack accesses for 16 FMAs in the 4-position tile, 5-6x slower than the positions-first
 * kernel on a Zen 1), so a position's 16 NV channels are 2 NV V8 here; each lane's sums are
 * the same as the 16-lane form's, so the bits too */
static inline __attribute__((always_inline)) void SFX(cl_tile)(
        const int R, const int S, const int NV, long K, const long *koff, const float *xr,
        const float *wp, const float *bias, float *dst, int relu) {
    const int NW = 2 * NV;
    V8 c[14][4];  /* R <= OM_CL_RMAX: the rest is never reached */
    OM_UNROLL for (int r = 0; r < R; r++)
        OM_UNROLL for (int j = 0; j < NW; j++) c[r][j] = (V8){0};
    for (long k = 0; k < K; k++) {
        const float *p = xr + koff[k];
        V8 w[4];
        OM_UNROLL for (int j = 0; j < NW; j++) w[j] = SFX(ld8)(wp + 16 * NV * k + 8 * j);
        OM_UNROLL for (int r = 0; r < R; r++) {
            V8 a = SFX(bc)(p[r * S]);
            OM_UNROLL for (int j = 0; j < NW; j++) c[r][j] += a * w[j];
        }
    }
    OM_UNROLL for (int j = 0; j < NW; j++) {
        V8 b = bias ? SFX(ld8)(bias + 8 * j) : (V8){0};
        OM_UNROLL for (int r = 0; r < R; r++) {
            V8 v = bias ? c[r][j] + b : c[r][j];
            SFX(st8)(dst + 16 * NV * r + 8 * j, relu ? SFX(relu8)(v) : v);
        }
    }
}
#endif

/* one function per tile shape (each its own register allocation), in a table by [NV][S][R] */
typedef void (*SFX(cl_fn))(long K, const long *koff, const float *xr, const float *wp,
                           const float *bias, float *dst, int relu);
#define OM_CL_FN(R, S, NV) \
    static void SFX(cl_t##R##_##S##_##NV)(long K, const long *koff, const float *xr, \
                                          const float *wp, const float *bias, float *dst, \
                                          int relu) { \
        if (R <= OM_CL_RMAX) SFX(cl_tile)(R, S, NV, K, koff, xr, wp, bias, dst, relu); \
    }
#define OM_CL_FNS(S, NV) \
    OM_CL_FN(1, S, NV) OM_CL_FN(2, S, NV) OM_CL_FN(3, S, NV) OM_CL_FN(4, S, NV) \
    OM_CL_FN(5, S, NV) OM_CL_FN(6, S, NV) OM_CL_FN(7, S, NV) OM_CL_FN(8, S, NV) \
    OM_CL_FN(9, S, NV) OM_CL_FN(10, S, NV) OM_CL_FN(11, S, NV) OM_CL_FN(12, S, NV) \
    OM_CL_FN(13, S, NV) OM_CL_FN(14, S, NV)
OM_CL_FNS(1, 1) OM_CL_FNS(2, 1) OM_CL_FNS(1, 2) OM_CL_FNS(2, 2)
#define OM_CL_ROW(S, NV) \
    {SFX(cl_t1_##S##_##NV), SFX(cl_t2_##S##_##NV), SFX(cl_t3_##S##_##NV), \
     SFX(cl_t4_##S##_##NV), SFX(cl_t5_##S##_##NV), SFX(cl_t6_##S##_##NV), \
     SFX(cl_t7_##S##_##NV), SFX(cl_t8_##S##_##NV), SFX(cl_t9_##S##_##NV), \
     SFX(cl_t10_##S##_##NV), SFX(cl_t11_##S##_##NV), SFX(cl_t12_##S##_##NV), \
     SFX(cl_t13_##S##_##NV), SFX(cl_t14_##S##_##NV)}
static const SFX(cl_fn) SFX(cl_fns)[2][2][14] = {{OM_CL_ROW(1, 1), OM_CL_ROW(2, 1)},
                                                  {OM_CL_ROW(1, 2), OM_CL_ROW(2, 2)}};
#undef OM_CL_ROW
#undef OM_CL_FNS
#undef OM_CL_FN

/* P positions of [P][cbw] at src into cbw planes (plane c at dst + c * ldp, positions 0..P),
 * 8 positions x 8 channels a transpose; a last partial 8 stores only its positions */
static void SFX(cl_scatter)(const float *src, long P, int cbw, float *dst, long ldp) {
    for (long p0 = 0; p0 < P; p0 += 8) {
        long n = P - p0 < 8 ? P - p0 : 8;
        for (int c8 = 0; c8 < cbw; c8 += 8) {
            V8 r[8];
            for (int i = 0; i < 8; i++)
                r[i] = i < n ? SFX(ld8)(src + (p0 + i) * cbw + c8) : (V8){0};
            SFX(transpose8)(r);
            for (int j = 0; j < 8; j++) {
                float *d = dst + (c8 + j) * ldp + p0;
                if (n == 8) SFX(st8)(d, r[j]);
                else memcpy(d, &r[j], n * sizeof(float));
            }
        }
    }
}

/* the same through tb (channels first, rows of P in L1): a run of P floats per plane */
static void SFX(cl_scatter_runs)(const float *src, long P, int cbw, float *tb, float *dst,
                                 long ldp) {
    long Pr = (P + 7) / 8 * 8;
    SFX(cl_scatter)(src, Pr, cbw, tb, Pr);
    for (int c = 0; c < cbw; c++) memcpy(dst + c * ldp, tb + c * Pr, P * sizeof(float));
}

/* rows of a group (rows x Wo positions of [.][cbw]) 2x2 max-pooled into [rows/2 x Wq][cbw]:
 * pool2_rows' order, the max of each column's two rows, then of the two columns */
static void SFX(cl_pool)(const float *g, long rows, long Wo, int cbw, float *o) {
    long Wq = Wo / 2;
    for (long i = 0; i < rows / 2; i++)
        for (long j = 0; j < Wq; j++) {
            const float *a0 = g + ((2 * i) * Wo + 2 * j) * cbw, *a1 = a0 + Wo * cbw;
            float *d = o + (i * Wq + j) * cbw;
            for (int c = 0; c < cbw; c += 8) {
                V8 left = SFX(max8)(SFX(ld8)(a0 + c), SFX(ld8)(a1 + c));
                V8 right = SFX(max8)(SFX(ld8)(a0 + cbw + c), SFX(ld8)(a1 + cbw + c));
                SFX(st8)(d + c, SFX(max8)(left, right));
            }
        }
}

/* rows of a group and the floats of scratch (instructions.py conv_lanes_scratch mirrors it) */
static long SFX(cl_group_rows)(long Wo, int pool) {
    long gr = OM_CL_ROWS_POSITIONS / Wo;
    if (gr < 1) gr = 1;
    if (pool) gr = gr < 2 ? 2 : gr / 2 * 2;
    return gr;
}

/* the split's items: images x blocks of 32 output channels (a last one of 16) */
static long SFX(cl_items)(const int64_t *f) { return f[1] * ((f[5] + 31) / 32); }

/* f: conv_direct_range's fields (G 1, Cout % 16 == 0, sw 1 or 2: plan_check.py); items
 * [lo, hi) of images x channel blocks, with the scratch scr_part (NULL: the instruction's) */
static __attribute__((noinline)) void SFX(conv_lanes_range)(const int64_t *f, float **bufs,
                                                           long lo, long hi, float *scr_part) {
    const float *x = OM_ADDR(bufs, f[0]), *wpk = OM_ADDR(bufs, f[15]);
    const float *bias = OM_ADDR(bufs, f[16]);
    float *out = OM_ADDR(bufs, f[18]), *scr = scr_part ? scr_part : OM_ADDR(bufs, f[19]);
    SFX(Pro) pro = {OM_ADDR(bufs, f[25]), OM_ADDR(bufs, f[26]), OM_ADDR(bufs, f[27])};
    long Cin = f[2], H = f[3], W = f[4], Cout = f[5], kh = f[6], kw = f[7];
    long ph = f[8], pw = f[9], dh = f[10], dw = f[11], Ho = f[13], Wo = f[14];
    long sh = f[21], sw = f[22];
    int act = (int)f[17], pool = (int)f[20];
    float ep0, ep1;  /* the activation's two parameters, as conv_direct_range's */
    {
        double d0, d1;
        memcpy(&d0, f + 23, 8); memcpy(&d1, f + 24, 8);
        ep0 = (float)d0; ep1 = (float)d1;
    }
    long K = Cin * kh * kw, nb = (Cout + 31) / 32;
    int inplace = ph == 0 && pw == 0 && !pro.mean;
    long Wpp = W + 2 * pw, plane = (H + 2 * ph) * Wpp;
    long xpn = inplace ? 0 : (Cin * plane + 15) / 16 * 16;
    float *xp = scr;
    long *koff = (long *)(scr + xpn);
    float *gb = scr + xpn + (2 * K + 15) / 16 * 16;
    long gr = SFX(cl_group_rows)(Wo, pool);
    long gp = (gr * Wo + 7) / 8 * 8, pp = pool ? (gr / 2 * (Wo / 2) + 7) / 8 * 8 : 0;
    float *pb = gb + gp * 32, *tb = pb + pp * 32;  /* each [8 k][32]: transposes read whole 8s */
    for (long ci = 0, k = 0; ci < Cin; ci++)
        for (long u = 0; u < kh; u++)
            for (long t = 0; t < kw; t++, k++) koff[k] = ci * plane + u * dh * Wpp + t * dw;
    long Hc = pool ? Ho / 2 * 2 : Ho, Hq = Ho / 2, Wq = Wo / 2;
    long ntile = (Wo + OM_CL_RMAX - 1) / OM_CL_RMAX;  /* a row's tiles, near-equal */
    const int si = sw == 2;
    if (!inplace) memset(xp, 0, Cin * plane * sizeof(float));  /* the padding stays zero */
    long cur = -1;
    for (long it = lo; it < hi; it++) {
        long nn = it / nb, c0 = it % nb * 32;
        int nv = Cout - c0 >= 32 ? 2 : 1, cbw = 16 * nv;
        const float *xn = x + nn * Cin * H * W;
        if (!inplace && nn != cur) {  /* this image's padded planes, prologue applied */
            for (long ci = 0; ci < Cin; ci++) {
                if (pw == 0)
                    SFX(pro_row)(&pro, ci, xn + ci * H * W, xp + ci * plane + ph * Wpp, H * W);
                else
                    for (long h = 0; h < H; h++)
                        SFX(pro_row)(&pro, ci, xn + (ci * H + h) * W,
                                     xp + ci * plane + (h + ph) * Wpp + pw, W);
            }
            cur = nn;
        }
        const float *xs = inplace ? xn : xp;
        const float *wb = wpk + c0 * K, *bb = bias ? bias + c0 : 0;
        const SFX(cl_fn) *fns = SFX(cl_fns)[nv - 1][si];
        for (long oh0 = 0; oh0 < Hc; oh0 += gr) {
            long rows = Hc - oh0 < gr ? Hc - oh0 : gr;
            for (long r = 0; r < rows; r++) {
                const float *xr = xs + (oh0 + r) * sh * Wpp;
                float *dr = gb + r * Wo * cbw;
                for (long t = 0, ow0 = 0; t < ntile; t++) {
                    long ow1 = Wo * (t + 1) / ntile;
                    fns[ow1 - ow0 - 1](K, koff, xr + ow0 * sw, wb, bb, dr + ow0 * cbw,
                                       act == ACT_RELU);
                    ow0 = ow1;
                }
            }
            long P = rows * Wo;
            if (act != ACT_NONE && act != ACT_RELU)  /* ReLU was, in the tile */
                SFX(act_rows)(act, ep0, ep1, gb, P * cbw);
            if (pool) {
                SFX(cl_pool)(gb, rows, Wo, cbw, pb);
                SFX(cl_scatter_runs)(pb, rows / 2 * Wq, cbw, tb,
                                out + (nn * Cout + c0) * Hq * Wq + oh0 / 2 * Wq, Hq * Wq);
            } else
                SFX(cl_scatter_runs)(gb, P, cbw, tb, out + (nn * Cout + c0) * Ho * Wo + oh0 * Wo,
                                Ho * Wo);
        }
    }
}

static void SFX(conv_lanes)(const int64_t *f, float **bufs) {
    SFX(conv_lanes_range)(f, bufs, 0, SFX(cl_items)(f), 0);
}

#undef CLV
