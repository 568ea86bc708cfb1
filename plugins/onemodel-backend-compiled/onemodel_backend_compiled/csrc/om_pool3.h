/* The strided max pools by rows (included by om_kernels.h, one copy per kernel set; pool_range
 * of om_split.h calls them). NaN anywhere in a window gives NaN (max8, as om_max).
 *
 * The 2x2 stride-2 pool without padding (the common one): each output the max of its row
 * pair's maxima, 8 outputs per two loads of each row split into even and odd columns (16 per
 * four in the 16-lane copies, om_wide.h); the scalar loop was a gather of four per output.
 *
 * The 3x3 stride-2 max pool (SqueezeNet's, in ceil mode, and ResNet's stem pool with padding 1)
 * by rows: the up to three input rows of an output row reduced to one row first (8 columns at
 * a time), laid out with -inf padding on both sides, then each output the max of three
 * neighbours of that row, 8 outputs per two loads split into even and odd columns. The generic
 * loop took a strided gather per tap (a fifth of SqueezeNet's native time). */

/* x: NC maps of H x W, out: NC maps of Ho x Wo with 2 Ho <= H and 2 Wo <= W (no window
 * clipped). out[i][j] = om_max(om_max(r0[2j], r0[2j + 1]), om_max(r1[2j], r1[2j + 1])) in that
 * grouping at every width, so the bits (a NaN's too) do not depend on the lanes */
static void SFX(maxpool2s2)(const float *x, float *out, long NC, long H, long W, long Ho,
                            long Wo) {
    for (long c = 0; c < NC; c++)
        for (long oh = 0; oh < Ho; oh++) {
            const float *r0 = x + c * H * W + 2 * oh * W, *r1 = r0 + W;
            float *o = out + c * Ho * Wo + oh * Wo;
            long j = OM_WIDE_PREFIX(SFX(pool2_wide)(r0, r1, o, Wo));
            if (Wo >= 8)  /* the last 8 overlap the ones before: the same values again */
                for (; j < Wo; j += 8) {
                    long j8 = j + 8 <= Wo ? j : Wo - 8;
                    V8 a0 = SFX(ld8)(r0 + 2 * j8), a1 = SFX(ld8)(r0 + 2 * j8 + 8);
                    V8 b0 = SFX(ld8)(r1 + 2 * j8), b1 = SFX(ld8)(r1 + 2 * j8 + 8);
                    V8 top = SFX(max8)(OM_EVEN8_LANES(a0, a1), OM_ODD8_LANES(a0, a1));
                    V8 bot = SFX(max8)(OM_EVEN8_LANES(b0, b1), OM_ODD8_LANES(b0, b1));
                    SFX(st8)(o + j8, OM_UNLANE8(SFX(max8)(top, bot)));
                }
            else
                for (; j < Wo; j++)
                    o[j] = om_max(om_max(r0[2 * j], r0[2 * j + 1]),
                                  om_max(r1[2 * j], r1[2 * j + 1]));
        }
}

#define OM_POOL3_BUF 4096  /* floats of a call's row slots (16 KiB of stack) */

/* 8 outputs from a -inf padded row of column maxima r: out[j] = max(r[2j], r[2j+1], r[2j+2]),
 * by two loads of 8 split into even and odd columns (reads r[0, 18)) */
static inline V8 SFX(pool3_row8)(const float *r) {
    V8 a0 = SFX(ld8)(r), a1 = SFX(ld8)(r + 8), b0 = SFX(ld8)(r + 2), b1 = SFX(ld8)(r + 10);
    /* the maxima in an in-lane shuffle's order, put in order once (om_kernels.h) */
    V8 m = SFX(max8)(SFX(max8)(OM_EVEN8_LANES(a0, a1), OM_ODD8_LANES(a0, a1)),
                     OM_EVEN8_LANES(b0, b1));
    return OM_UNLANE8(m);
}

/* returns 0 when the shape is not this kernel's (the caller runs the generic loop). Maps under
 * 8 wide, and rows of under 8 outputs, go through one padded vector too: their scalar loops
 * compiled to branches that mispredict on real data (SqueezeNet's 15x15 -> 7x7 pool at batch 4,
 * 512 maps: 10 ns an output, 0.25 ms, where the 16x16 -> 8x8 one took 0.07).
 * In two passes over chunks of output rows: first every row's column maxima into its own
 * -inf padded slot, then the outputs from the slots. One slot reused row after row had each
 * output load (at offsets 2 and 10, across two of the stores just made) wait on store
 * forwarding: SqueezeNet's three pools at b4, 174 us against ORT's 55 (Zen 4). */
static int SFX(maxpool3s2)(const float *x, float *out, long NC, long H, long W, long ph,
                           long pw, long Ho, long Wo) {
    float buf[OM_POOL3_BUF];
    long need = 2 * Wo + 18;  /* the last group of 8 outputs reads 2 (Wo + 7) + 3 floats */
    long rs = need > pw + W + 8 ? need : pw + W + 8;  /* a slot: padding, W, padding */
    rs = (rs + 7) / 8 * 8;
    if (ph > 1 || pw > 1 || rs > OM_POOL3_BUF) return 0;
    long chunk = OM_POOL3_BUF / rs;
    chunk = chunk > Ho ? Ho : chunk;
    for (long i = 0; i < chunk * rs; i++) buf[i] = -INFINITY;  /* only interiors are written */
    V8 ninf = SFX(bc)(-INFINITY);
    V8 lane = {0, 1, 2, 3, 4, 5, 6, 7}, wlim = SFX(bc)((float)W);
    for (long c = 0; c < NC; c++) {
        const float *xc = x + c * H * W;
        float *oc = out + c * Ho * Wo;
        for (long oh0 = 0; oh0 < Ho; oh0 += chunk) {
            long nr = Ho - oh0 < chunk ? Ho - oh0 : chunk;
            for (long r = 0; r < nr; r++) {  /* the column maxima of each output row */
                float *vm = buf + r * rs + pw;  /* vm[iw]: the rows' max at column iw */
                long oh = oh0 + r, h0 = 2 * oh - ph, h1 = h0 + 3;
                h0 = h0 < 0 ? 0 : h0;
                h1 = h1 > H ? H : h1;
                if (W >= 8 && h1 - h0 == 3) {  /* a whole window: three rows, no loop */
                    const float *a = xc + h0 * W, *b = a + W, *d = b + W;
                    for (long w = 0; w < W; w += 8) {  /* (the last 8 overlap: idempotent) */
                        long w8 = w + 8 <= W ? w : W - 8;
                        SFX(st8)(vm + w8, SFX(max8)(SFX(max8)(SFX(ld8)(a + w8),
                                                              SFX(ld8)(b + w8)),
                                                    SFX(ld8)(d + w8)));
                    }
                } else if (W >= 8)  /* a window clipped at an edge */
                    for (long w = 0; w < W; w += 8) {
                        long w8 = w + 8 <= W ? w : W - 8;
                        V8 m = ninf;
                        for (long h = h0; h < h1; h++)
                            m = SFX(max8)(m, SFX(ld8)(xc + h * W + w8));
                        SFX(st8)(vm + w8, m);
                    }
                else {  /* each input row's W columns in a vector, lanes W.. -inf */
                    V8 m = ninf;
                    for (long h = h0; h < h1; h++) {
                        V8 v;
                        if ((c * H + h) * W + 8 <= NC * H * W)  /* 8 floats inside x */
                            v = SFX(ld8)(xc + h * W);
                        else {  /* the part's last row: no read past it */
                            float t[8];
                            SFX(st8)(t, ninf);
                            memcpy(t, xc + h * W, (size_t)W * sizeof(float));
                            v = SFX(ld8)(t);
                        }
                        m = SFX(max8)(m, SFX(vsel)(lane < wlim, v, ninf));
                    }
                    SFX(st8)(vm, m);
                }
            }
            for (long r = 0; r < nr; r++) {  /* then the outputs of each */
                const float *row = buf + r * rs;
                long oh = oh0 + r;
                float *o = oc + oh * Wo;
                if (Wo >= 8)
                    for (long j = 0; j < Wo; j += 8) {
                        long j8 = j + 8 <= Wo ? j : Wo - 8;
                        SFX(st8)(o + j8, SFX(pool3_row8)(row + 2 * j8));
                    }
                else if ((c * Ho + oh) * Wo + 8 <= NC * Ho * Wo)  /* lanes Wo.. land on the
                                                                   * next rows, written after */
                    SFX(st8)(o, SFX(pool3_row8)(row));
                else {  /* the part's last rows: no write past its end */
                    float t[8];
                    SFX(st8)(t, SFX(pool3_row8)(row));
                    memcpy(o, t, (size_t)Wo * sizeof(float));
                }
            }
        }
    }
    return 1;
}
