/* A 1x1 stride-1 convolution (one group, no padding) as the GEMM it is in channels-first
 * order: out[n] (Cout x HW) = W (Cout x Cin) x[n] (Cin x HW), ONNX Runtime's form. Included by
 * om_kernels.h after the packed GEMM's register tiles and the prologue (one copy per kernel
 * set).
 *
 * The columns are the positions of every image in turn; x is packed once into 16-column
 * panels (each channel's row of positions is contiguous, so a panel's row is one or two runs,
 * with the input prologue, batch norm and ReLU, applied as it is copied) and W's rows are A's
 * rows as they are, so the result is channels first: nothing is transposed on either side.
 * When HW is a multiple of 16 the register tiles store straight into out; otherwise a panel may
 * hold the end of one image and the start of the next, and C goes through the scratch, one
 * contiguous run per image and channel. Bias per row (channel) and ReLU in the registers, any
 * other activation over out in one pass. Before, the input and the result were transposed
 * element by element around a positions-first GEMM (about 36 GFLOP/s on DenseNet's
 * 1024->128 on 4x4, a third of it the transposes and the per-row prologue calls).
 *
 * On a map of a few positions (2x2 at batch 1: 4 columns of a 16-column panel) the other
 * layout wins: positions first, (N HW x Cin) x (Cin x Cout) against the weights packed in
 * 16-column panels, both sides transposed (layout 0, conv1x1_rows).
 *
 * f: x, N, Cin, HW, Cout, w, bias, act, out, scratch, p0, p1, then the prologue's mean, scale
 *    and shift (om_prologue.h; -1 for none), layout (0 positions first: w as 16-column panels
 *    of W^T; 1 channels first: w as W, Cout x Cin row-major)
 * scratch: layout 1: N S Cin (the panels) + N S Cout (C, when HW % 16 != 0), S = HW rounded
 * up to 16; layout 0: N HW Cin rounded up to 16 (the transposed input) + N HW Cout (C) */

/* layout 0, images [n_lo, n_hi) only: each image's rows of the transposed input and of the
 * GEMM's result have their own place in the scratch, so parts of a split share it */
static void SFX(conv1x1_rows)(const int64_t *f, float **bufs, long n_lo, long n_hi) {
    const float *x = OM_ADDR(bufs, f[0]), *wp = OM_ADDR(bufs, f[5]), *bias = OM_ADDR(bufs, f[6]);
    float *out = OM_ADDR(bufs, f[8]), *scr = OM_ADDR(bufs, f[9]);
    SFX(Pro) pro = {OM_ADDR(bufs, f[12]), OM_ADDR(bufs, f[13]), OM_ADDR(bufs, f[14])};
    long Nn = f[1], Cin = f[2], HW = f[3], Cout = f[4];
    int act = (int)f[7];
    double d0, d1;
    memcpy(&d0, f + 10, 8); memcpy(&d1, f + 11, 8);
    float *T = scr, *C = scr + (Nn * HW * Cin + 15) / 16 * 16;
    long whole = Nn * HW;  /* one row in all takes the GEMV */
    x += n_lo * Cin * HW; out += n_lo * Cout * HW;
    T += n_lo * HW * Cin; C += n_lo * HW * Cout;
    Nn = n_hi - n_lo;
    for (long n = 0; n < Nn; n++)
        for (long ci = 0; ci < Cin; ci++) {
            const float *xr = x + (n * Cin + ci) * HW;
            float *t = T + n * HW * Cin + ci;
            if (pro.mean) {  /* normalised into C's place first (C is written after) */
                SFX(pro_row)(&pro, ci, xr, C, HW);
                xr = C;
            }
            for (long p = 0; p < HW; p++) t[p * Cin] = xr[p];
        }
    SFX(Epi) e = {bias, bias ? 1 : 0, 0, 0, act == ACT_RELU ? ACT_RELU : ACT_NONE};
    if (whole == 1) SFX(gemm)(1, Cin, Cout, T, Cin, wp, C, Cout, &e);
    else SFX(gemm_part)(0, Nn * HW, 0, (Cout + 15) / 16, Cin, Cout, T, Cin, wp, C, Cout, &e);
    for (long n = 0; n < Nn; n++)
        for (long co = 0; co < Cout; co++) {
            const float *c = C + n * HW * Cout + co;
            float *o = out + (n * Cout + co) * HW;
            for (long p = 0; p < HW; p++) o[p] = c[p * Cout];
        }
    if (act != ACT_NONE && act != ACT_RELU)
        SFX(act_rows)(act, (float)d0, (float)d1, out, Nn * Cout * HW);
}

/* layout 1, images [n_lo, n_hi) only: each image owns S columns of panels and of C in the scratch (a part
 * of a split uses at most its images' share), and every element of C is one ukr's sum in the
 * same order whichever panel it lands in, so a split computes the same bits */
static void SFX(conv1x1_cols)(const int64_t *f, float **bufs, long n_lo, long n_hi) {
    const float *x = OM_ADDR(bufs, f[0]), *w = OM_ADDR(bufs, f[5]), *bias = OM_ADDR(bufs, f[6]);
    float *out = OM_ADDR(bufs, f[8]), *scr = OM_ADDR(bufs, f[9]);
    SFX(Pro) pro = {OM_ADDR(bufs, f[12]), OM_ADDR(bufs, f[13]), OM_ADDR(bufs, f[14])};
    long Nall = f[1], Cin = f[2], HW = f[3], Cout = f[4];
    int act = (int)f[7];
    double d0, d1;
    memcpy(&d0, f + 10, 8); memcpy(&d1, f + 11, 8);
    long S = (HW + 15) / 16 * 16, Nn = n_hi - n_lo;
    float *B = scr + n_lo * S * Cin, *Cs = scr + Nall * S * Cin + n_lo * S * Cout;
    x += n_lo * Cin * HW; out += n_lo * Cout * HW;
    long cols = Nn * HW, np = (cols + 15) / 16, ldc = np * 16;
    int direct = HW % 16 == 0;
    if (cols % 16)  /* the last panel's columns past the images: zeros, never stored */
        for (long ci = 0; ci < Cin; ci++)
            memset(B + ((np - 1) * Cin + ci) * 16 + cols % 16, 0, (16 - cols % 16) * sizeof(float));
    for (long n = 0; n < Nn; n++)
        for (long ci = 0; ci < Cin; ci++) {
            const float *src = x + (n * Cin + ci) * HW;
            for (long c = n * HW, e = c + HW; c < e;) {  /* runs of one panel row each */
                long j = c / 16, o = c % 16, run = 16 - o < e - c ? 16 - o : e - c;
                SFX(pro_row)(&pro, ci, src + (c - n * HW), B + (j * Cin + ci) * 16 + o, run);
                c += run;
            }
        }
    SFX(Epi) e = {bias, bias ? 2 : 0, 0, 0, act == ACT_RELU ? ACT_RELU : ACT_NONE};
#ifdef OM_LANES16  /* the 16-lane packed GEMM (om_wide.h): W's rows as A, the panels as B */
    if (direct)
        for (long n = 0; n < Nn; n++)
            SFX(gemm)(Cout, Cin, HW, w, Cin, B + n * HW * Cin, out + n * Cout * HW, HW, &e);
    else
        SFX(gemm)(Cout, Cin, cols, w, Cin, B, Cs, ldc, &e);
#else
    long jb = 65536 / (16 * (Cin > 0 ? Cin : 1));  /* panels per block: about 256 KiB in L2 */
    if (jb < 1) jb = 1;
    for (long j0 = 0; j0 < np; j0 += jb) {
        long j1 = j0 + jb < np ? j0 + jb : np;
        for (long m0 = 0; m0 < Cout; m0 += 6) {  /* 6 output channels against the block */
            int mr = (int)(Cout - m0 < 6 ? Cout - m0 : 6);
            const float *r[6];
            for (int q = 0; q < 6; q++) r[q] = w + (m0 + (q < mr ? q : 0)) * Cin;
            for (long j = j0; j < j1; j++) {
                const float *bp = B + j * 16 * Cin;
                float *C = Cs;
                long n0 = j * 16, ld = ldc;
                int nr = (int)(cols - n0 < 16 ? cols - n0 : 16);
                if (direct) {  /* the panel lies in one image: into out itself */
                    C = out + (n0 / HW) * Cout * HW;
                    n0 %= HW;
                    ld = HW;
                }
                if (mr <= 4) SFX(ukr4x16)(Cin, r, bp, mr, nr, m0, n0, C, ld, &e);
                else SFX(ukr6x16)(Cin, r, bp, mr, nr, m0, n0, C, ld, &e);
            }
        }
    }
#endif
    if (!direct)
        for (long n = 0; n < Nn; n++)
            for (long co = 0; co < Cout; co++)
                memcpy(out + (n * Cout + co) * HW, Cs + co * ldc + n * HW, HW * sizeof(float));
    if (act != ACT_NONE && act != ACT_RELU)
        SFX(act_rows)(act, (float)d0, (float)d1, out, Nn * Cout * HW);
}

static void SFX(conv1x1_range)(const int64_t *f, float **bufs, long n_lo, long n_hi) {
    if (f[15]) SFX(conv1x1_cols)(f, bufs, n_lo, n_hi);
    else SFX(conv1x1_rows)(f, bufs, n_lo, n_hi);
}
