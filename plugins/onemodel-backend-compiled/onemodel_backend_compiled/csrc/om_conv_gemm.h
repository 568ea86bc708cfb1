/* A convolution as an implicit GEMM (included by om_kernels.h after the packed GEMM and
 * act_rows; compiled once per kernel copy like the rest).
 *
 * Every output position of every image is one row of A: its receptive field gathered as
 * (input channel, kernel row, kernel column), zeros where the window covers padding. The
 * weights were packed once, at lowering, as 16-column panels of the (cin kh kw) x cout matrix,
 * so C = A W is the packed GEMM's 6x16 (or 4x16) register tiles with the bias and ReLU in the
 * register epilogue; C (positions x channels) is then transposed back to channels first, and
 * any other activation applied while the channel is in cache.
 *
 * On small maps (4x4, 2x2, 3x3 late in a network) this beats the direct kernel, whose tiles
 * are 24 positions wide and mostly empty there: every row of a tile is a real output position.
 * The GEMM goes over A in blocks of rows that stay in L2 with one weight panel, each panel
 * streamed once per block (once in all when the block holds every row, the common case on a
 * small map). */

/* R (6 or 4) rows of A packed as ap[k][R] against one 16-column weight panel: one stream of
 * A instead of R (the packed GEMM's ukr6x16 reads R rows at stride K); the epilogue as there */
static inline __attribute__((always_inline)) void SFX(ukrp)(
        const int R, long K, const float *ap, const float *bp, int mr, int nr, long m0, long n0,
        float *C, long ldc, const SFX(Epi) *e) {
    V8 c[12];
    for (int q = 0; q < 2 * R; q++) c[q] = (V8){0};
    for (long k = 0; k < K; k++) {
        V8 b0 = SFX(ld8)(bp), b1 = SFX(ld8)(bp + 8);
        bp += 16;
        for (int r = 0; r < R; r++) {
            V8 a = SFX(bc)(ap[r]);
            c[2 * r] += a * b0; c[2 * r + 1] += a * b1;
        }
        ap += R;
    }
    if (SFX(fast_epi)(nr, e)) {
        for (int r = 0; r < mr; r++) SFX(store16)(c[2 * r], c[2 * r + 1], m0 + r, n0, C, ldc, e);
        return;
    }
    float tile[96];
    for (int q = 0; q < 2 * R; q++) SFX(st8)(tile + 8 * q, c[q]);
    SFX(store_tile)(tile, mr, nr, m0, n0, C, ldc, e);
}

static void SFX(ukrp6)(long K, const float *ap, const float *bp, int mr, int nr, long m0,
                       long n0, float *C, long ldc, const SFX(Epi) *e) {
    SFX(ukrp)(6, K, ap, bp, mr, nr, m0, n0, C, ldc, e);
}

static void SFX(ukrp4)(long K, const float *ap, const float *bp, int mr, int nr, long m0,
                       long n0, float *C, long ldc, const SFX(Epi) *e) {
    SFX(ukrp)(4, K, ap, bp, mr, nr, m0, n0, C, ldc, e);
}

/* the rows [m0, m1) of A (m = (n, oh, ow), k = (ci, u, t)) packed by tiles of 6 rows (4 for a
 * last tile of at most 4) as [tile][k][rows], gathered from the zero-padded input xp
 * ([n][ci][Hp][Wp]): no bounds checks, one offset per row and one per tap */
static void SFX(pack_patches)(const float *xp, float *ap, long m0, long m1, long Cin, long Hp,
                              long Wp, long kh, long kw, long dh, long dw, long sh, long sw,
                              long Ho, long Wo, long *toff) {
    long P = Ho * Wo, T = kh * kw, plane = Hp * Wp;
    for (long u = 0, i = 0; u < kh; u++)
        for (long t = 0; t < kw; t++, i++) toff[i] = u * dh * Wp + t * dw;
    for (long mt = m0; mt < m1; mt += 6) {
        int R = m1 - mt > 4 ? 6 : 4, mr = (int)(m1 - mt < R ? m1 - mt : R);
        const float *pr[6];
        for (int r = 0; r < R; r++) {
            long m = mt + (r < mr ? r : 0), n = m / P, p = m % P;
            pr[r] = xp + n * Cin * plane + (p / Wo) * sh * Wp + (p % Wo) * sw;
        }
        if (R == 6)
            for (long ci = 0; ci < Cin; ci++, ap += 6 * T) {
                long co = ci * plane;
                for (long i = 0; i < T; i++) {
                    long o = co + toff[i];
                    float *a = ap + 6 * i;
                    a[0] = pr[0][o]; a[1] = pr[1][o]; a[2] = pr[2][o];
                    a[3] = pr[3][o]; a[4] = pr[4][o]; a[5] = pr[5][o];
                }
            }
        else
            for (long ci = 0; ci < Cin; ci++, ap += 4 * T) {
                long co = ci * plane;
                for (long i = 0; i < T; i++) {
                    long o = co + toff[i];
                    float *a = ap + 4 * i;
                    a[0] = pr[0][o]; a[1] = pr[1][o]; a[2] = pr[2][o]; a[3] = pr[3][o];
                }
            }
    }
}

/* f: x, N, Cin, H, W, Cout, kh, kw, ph, pw, dh, dw, sh, sw, Ho, Wo, wpanels, bias, act, out,
 *    scratch, p0, p1 (the activation's parameters, as doubles), then the input prologue's
 *    mean, scale and shift (om_prologue.h; -1 for none), layout (0 positions first, the
 *    weights as 16-column panels of W^T; 1 channels first, conv_gemm_cols: W as it is)
 * scratch: N Cin Hp Wp (rounded up to 16; none without padding or prologue) + mb' K (rounded
 * up to 16; mb' is mb rounded up to whole tiles of 6) + N Ho Wo Cout + 2 kh kw + 2 floats,
 * mb = conv_gemm_rows(K, N Ho Wo); layout 1: the padded input, then 16 K + (Cout times N Ho Wo
 * rounded up to 16, when Ho Wo % 16 != 0) */
static long SFX(conv_gemm_rows)(long K, long M) {
    long mb = (98304 / (K > 0 ? K : 1)) / 6 * 6;  /* about 384 KiB of A next to a panel in L2 */
    if (mb < 6) mb = 6;
    return mb < M ? mb : M;
}

/* the channels-first form (layout 1): out[n] (Cout x Ho Wo) = W (Cout x K) B[n], B's columns
 * the output positions of every image in turn and its rows the taps (ci, u, t), packed one
 * 16-column panel at a time from the padded input: at stride 1 a panel's row is a run of
 * contiguous floats per output row it covers (one vector copy on a 16x16 map, two on 8x8,
 * four 4-float runs on 4x4), where the positions-first form gathers every element alone (a
 * third of a 128->32 3x3 layer's time on 4x4). W's rows are A's rows as they are, bias per
 * row and ReLU in the registers, straight into out when Ho Wo is a multiple of 16, otherwise
 * through C (Cout x the panels' columns) and out by runs. scratch: the padded input as
 * conv_gemm's, then one panel (16 K), then C (when Ho Wo % 16 != 0) */
static __attribute__((noinline)) void SFX(conv_gemm_cols)(const int64_t *f, float **bufs, const float *xp, long Hp,
                                long Wp, float *scr) {
    const float *w = OM_ADDR(bufs, f[16]), *bias = OM_ADDR(bufs, f[17]);
    float *out = OM_ADDR(bufs, f[19]);
    long Nn = f[1], Cin = f[2], Cout = f[5], kh = f[6], kw = f[7];
    long dh = f[10], dw = f[11], sh = f[12], sw = f[13], Ho = f[14], Wo = f[15];
    int act = (int)f[18];
    long K = Cin * kh * kw, P = Ho * Wo, cols = Nn * P, np = (cols + 15) / 16, ldc = np * 16;
    long plane = Hp * Wp;
    float *B = scr, *Cs = scr + 16 * K;
    int direct = P % 16 == 0;
    SFX(Epi) e = {bias, bias ? 2 : 0, 0, 0, act == ACT_RELU ? ACT_RELU : ACT_NONE};
    for (long j = 0; j < np; j++) {
        long c0 = j * 16, c1 = c0 + 16 < cols ? c0 + 16 : cols;
        if (c1 - c0 < 16)
            for (long k = 0; k < K; k++)
                memset(B + k * 16 + (c1 - c0), 0, (16 - (c1 - c0)) * sizeof(float));
        for (long c = c0; c < c1;) {  /* a run: consecutive positions of one output row */
            long n = c / P, p = c % P, oh = p / Wo, ow = p % Wo;
            long run = Wo - ow < c1 - c ? Wo - ow : c1 - c;
            const float *xn = xp + n * Cin * plane + oh * sh * Wp + ow * sw;
            float *b = B + (c - c0);
            /* inline copies (a memcpy call per run was most of the time) */
#define OM_COLS_RUNS(COPY) \
            for (long ci = 0; ci < Cin; ci++) \
                for (long u = 0; u < kh; u++) \
                    for (long t = 0; t < kw; t++, b += 16) { \
                        const float *src = xn + ci * plane + u * dh * Wp + t * dw; \
                        COPY; \
                    }
            if (sw != 1) OM_COLS_RUNS(for (long q = 0; q < run; q++) b[q] = src[q * sw])
            else if (run == 16) OM_COLS_RUNS(SFX(st8)(b, SFX(ld8)(src));
                                             SFX(st8)(b + 8, SFX(ld8)(src + 8)))
            else if (run == 8) OM_COLS_RUNS(SFX(st8)(b, SFX(ld8)(src)))
            else if (run == 4) OM_COLS_RUNS(b[0] = src[0]; b[1] = src[1]; b[2] = src[2];
                                            b[3] = src[3])
            else OM_COLS_RUNS(for (long q = 0; q < run; q++) b[q] = src[q])
#undef OM_COLS_RUNS
            c += run;
        }
        float *C = Cs;
        long n0 = c0, ld = ldc;
        if (direct) { C = out + (c0 / P) * Cout * P; n0 = c0 % P; ld = P; }
        int nr = (int)(c1 - c0);
        for (long m0 = 0; m0 < Cout; m0 += 6) {
            int mr = (int)(Cout - m0 < 6 ? Cout - m0 : 6);
            const float *r[6];
            for (int q = 0; q < 6; q++) r[q] = w + (m0 + (q < mr ? q : 0)) * K;
            if (mr <= 4) SFX(ukr4x16)(K, r, B, mr, nr, m0, n0, C, ld, &e);
            else SFX(ukr6x16)(K, r, B, mr, nr, m0, n0, C, ld, &e);
        }
    }
    if (!direct)
        for (long n = 0; n < Nn; n++)
            for (long co = 0; co < Cout; co++)
                memcpy(out + (n * Cout + co) * P, Cs + co * ldc + n * P, P * sizeof(float));
}

static void SFX(conv_gemm)(const int64_t *f, float **bufs) {
    const float *x = OM_ADDR(bufs, f[0]), *wp = OM_ADDR(bufs, f[16]), *bias = OM_ADDR(bufs, f[17]);
    float *out = OM_ADDR(bufs, f[19]), *scr = OM_ADDR(bufs, f[20]);
    SFX(Pro) pro = {OM_ADDR(bufs, f[23]), OM_ADDR(bufs, f[24]), OM_ADDR(bufs, f[25])};  /* batch norm + ReLU, or none */
    long Nn = f[1], Cin = f[2], H = f[3], W = f[4], Cout = f[5], kh = f[6], kw = f[7];
    long ph = f[8], pw = f[9], dh = f[10], dw = f[11], sh = f[12], sw = f[13];
    long Ho = f[14], Wo = f[15];
    int act = (int)f[18];
    double d0, d1;
    memcpy(&d0, f + 21, 8); memcpy(&d1, f + 22, 8);
    long K = Cin * kh * kw, P = Ho * Wo, M = Nn * P, np = (Cout + 15) / 16;
    long Hp = H + 2 * ph, Wp = W + 2 * pw, padded = ph != 0 || pw != 0 || pro.mean;
    long xpn = padded ? (Nn * Cin * Hp * Wp + 15) / 16 * 16 : 0;
    long mb = SFX(conv_gemm_rows)(K, M);
    float *xp = scr, *A = scr + xpn, *C = A + ((mb + 5) / 6 * 6 * K + 15) / 16 * 16;
    long *toff = (long *)(C + (M * Cout + 1) / 2 * 2);  /* 8-byte aligned */
    if (!padded) xp = (float *)x;  /* nothing to pad or normalise: gather from x itself */
    else {
        memset(xp, 0, Nn * Cin * Hp * Wp * sizeof(float));
        for (long c = 0; c < Nn * Cin; c++)
            for (long h = 0; h < H; h++)
                SFX(pro_row)(&pro, c % Cin, x + (c * H + h) * W, xp + (c * Hp + h + ph) * Wp + pw,
                             W);
    }
    if (f[26]) {  /* channels first; then any activation past ReLU over out in one pass */
        SFX(conv_gemm_cols)(f, bufs, xp, Hp, Wp, scr + xpn);
        if (act != ACT_NONE && act != ACT_RELU)
            SFX(act_rows)(act, (float)d0, (float)d1, out, M * Cout);
        return;
    }
    SFX(Epi) e = {bias, bias ? 1 : 0, 0, 0, act == ACT_RELU ? ACT_RELU : ACT_NONE};
    for (long m0b = 0; m0b < M; m0b += mb) {
        long m1b = m0b + mb < M ? m0b + mb : M;
        SFX(pack_patches)(xp, A, m0b, m1b, Cin, Hp, Wp, kh, kw, dh, dw, sh, sw, Ho, Wo, toff);
#ifdef OM_LANES16
        SFX(wconv_block)(K, A, wp, m0b, m1b, np, Cout, C, &e);  /* om_wide.h: 2 panels a tile */
#else
        for (long j = 0; j < np; j++) {  /* one panel against every row of the block */
            const float *b = wp + j * 16 * K;
            long n0 = j * 16;
            int nr = (int)(Cout - n0 < 16 ? Cout - n0 : 16);
            const float *ap = A;
            for (long m0 = m0b; m0 < m1b; m0 += 6, ap += 6 * K) {
                int mr = (int)(m1b - m0 < 6 ? m1b - m0 : 6);
                if (mr <= 4) SFX(ukrp4)(K, ap, b, mr, nr, m0, n0, C, Cout, &e);
                else SFX(ukrp6)(K, ap, b, mr, nr, m0, n0, C, Cout, &e);
            }
        }
#endif
    }
    for (long n = 0; n < Nn; n++)  /* positions x channels -> channels first */
        for (long co = 0; co < Cout; co++) {
            const float *c = C + n * P * Cout + co;
            float *o = out + (n * Cout + co) * P;
            for (long p = 0; p < P; p++) o[p] = c[p * Cout];
        }
    /* any activation past ReLU over out in one pass: a call per channel on a 2x2 map ran
     * 4 values through the scalar tail each time (320->1280 on 2x2, b4, Zen 5: clip 122 us
     * and swish 237 against 70 without) */
    if (act != ACT_NONE && act != ACT_RELU)
        SFX(act_rows)(act, (float)d0, (float)d1, out, M * Cout);
}
