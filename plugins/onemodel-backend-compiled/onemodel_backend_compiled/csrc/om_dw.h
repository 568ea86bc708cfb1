/* A depthwise convolution on a larger map (the ones dw_small leaves), kernel 3x3 or 5x5,
 * stride 1 or 2, no dilation: each channel straight from its unpadded rows to its output rows.
 * The direct kernel's depthwise branch copied a channel into a padded plane, ran dw_rows over
 * (Ho - 1) Wp + Wo positions, a second pass for the activation and a third to compact the
 * rows into the output: three extra passes over every value, and on a 112x112 map (50 KiB a
 * channel) through L2. Here each input row is copied once into a zero-padded row slot (split
 * into its even and odd columns at stride 2, so a tap is again a shifted unaligned load), the
 * slots kept in a ring of 16 while the output rows that read them are computed, two output
 * rows a pass, 32 columns at a time in 8 independent sums (then 16, then 8), the activation in
 * the registers (ReLU, clip) or on the output row while it is in L1 (the others, act_rows).
 * Same order of sums as dw_rows: the taps from zero in (row, column) order, then the bias.
 * A row's last columns (Wo not a multiple of 8) are one vector that ends at the row's end and
 * overlaps the one before (it recomputes the same values); a row of under 8 outputs goes
 * through a vector of scratch. Included by om_kernels.h after act_rows. */

#define OM_DW_SLOTS 16  /* row slots: >= the input rows of one pass (4 s + k - s <= 11) */

/* the floats of scratch dw_direct needs (conv_direct_range falls back below it) */
static inline long SFX(dw_direct_scratch)(long W, long pw, long s) {
    long ws = (W + 2 * pw + 1) / s + 24;            /* a slot row (a phase row at stride 2) */
    ws = (ws + 7) / 8 * 8;
    return (OM_DW_SLOTS + 1) * s * ws + 2 * ws * s + 32 + 64;  /* slots, zero row, tmp, taps */
}

/* one pass: output rows r[0..R) at columns [ow, ow + 8 NV), from input row slots rows[0..)
 * (row j of the pass: s R + k - s of them; a slot is its phase rows, ws floats apart). Each
 * input vector is loaded once for the R output rows that read it (row j is tap row j - r s of
 * output row r): an output's taps still come in (row, column) order */
static inline __attribute__((always_inline)) void SFX(dw_block)(
        int KS, int S, int R, int NV, const float *const *rows, long ws, const V8 *wv,
        V8 bv, float *const *orow, long ow, int act, V8 lo, V8 hi) {
    V8 acc[4][4];
    OM_UNROLL for (int r = 0; r < R; r++)
        OM_UNROLL for (int v = 0; v < NV; v++) acc[r][v] = (V8){0};
    OM_UNROLL for (int j = 0; j < S * R + KS - S; j++)
        OM_UNROLL for (int t = 0; t < KS; t++) {
            const float *p = rows[j] + (t % S) * ws + t / S + ow;
            V8 xv[4];
            OM_UNROLL for (int v = 0; v < NV; v++) xv[v] = SFX(ld8)(p + 8 * v);
            OM_UNROLL for (int r = 0; r < R; r++) {
                int u = j - r * S;
                if (u < 0 || u >= KS) continue;
                V8 a = wv[u * KS + t];
                OM_UNROLL for (int v = 0; v < NV; v++) acc[r][v] += a * xv[v];
            }
        }
    OM_UNROLL for (int r = 0; r < R; r++)
        OM_UNROLL for (int v = 0; v < NV; v++) {
            V8 y = acc[r][v] + bv;
            if (act == ACT_RELU) y = SFX(relu8)(y);
            else if (act == ACT_CLIP) y = SFX(min8)(SFX(max8)(y, lo), hi);
            SFX(st8)(orow[r] + ow + 8 * v, y);
        }
}

/* the output rows of one pass (R of them) over every column: at most 8 sums at once */
static inline __attribute__((always_inline)) void SFX(dw_pass)(
        int KS, int S, int R, const float *const *rows, long ws, const V8 *wv, V8 bv,
        float *const *orow, long Wo, int act, V8 lo, V8 hi, float *tail) {
    long ow = 0;
    if (R <= 2)
        for (; ow + 32 <= Wo; ow += 32)
            SFX(dw_block)(KS, S, R, 4, rows, ws, wv, bv, orow, ow, act, lo, hi);
    for (; ow + 16 <= Wo; ow += 16)
        SFX(dw_block)(KS, S, R, 2, rows, ws, wv, bv, orow, ow, act, lo, hi);
    for (; ow + 8 <= Wo; ow += 8)
        SFX(dw_block)(KS, S, R, 1, rows, ws, wv, bv, orow, ow, act, lo, hi);
    if (ow == Wo) return;
    if (Wo >= 8) {  /* the last 8 columns, overlapping the ones before: the same values */
        SFX(dw_block)(KS, S, R, 1, rows, ws, wv, bv, orow, Wo - 8, act, lo, hi);
        return;
    }
    float *tr[4] = {tail, tail + 8, tail + 16, tail + 24};  /* under 8: through scratch */
    SFX(dw_block)(KS, S, R, 1, rows, ws, wv, bv, tr, 0, act, lo, hi);
    for (int r = 0; r < R; r++) memcpy(orow[r], tr[r], Wo * sizeof(float));
}

/* a padded row's even and odd columns (n2 of each): 8 of each per two vector loads (also the
 * direct kernel's stride-2 phase planes, phase_planes) */
static inline void SFX(dw_split2)(const float *tmp, float *ev, float *od, long n2) {
    long j = 0;
    for (; j + 8 <= n2; j += 8) {
        V8 m0 = SFX(ld8)(tmp + 2 * j), m1 = SFX(ld8)(tmp + 2 * j + 8);
        SFX(st8)(ev + j, OM_UNLANE8(OM_EVEN8_LANES(m0, m1)));
        SFX(st8)(od + j, OM_UNLANE8(OM_ODD8_LANES(m0, m1)));
    }
    for (; j < n2; j++) { ev[j] = tmp[2 * j]; od[j] = tmp[2 * j + 1]; }
}

/* the even and odd columns (n2 of each) of a row padded with pw zeros on the left and
 * zeros past its W values, split straight from the row: copying it into a padded buffer
 * first and loading that back at another alignment stalled every load on store forwarding
 * (Zen 5: over half of a strided depthwise layer's time). The same values as a padded copy
 * through dw_split2. */
static inline void SFX(dw_split2_row)(const float *src, long W, long pw, float *ev, float *od,
                                      long n2) {
    long j = 0;
    for (; j < n2 && 2 * j - pw < 0; j++) {  /* the left padding */
        long a = 2 * j - pw, b = a + 1;
        ev[j] = a >= 0 && a < W ? src[a] : 0.0f;
        od[j] = b >= 0 && b < W ? src[b] : 0.0f;
    }
#define OM_SPLIT8(J) do { const float *p_ = src + 2 * (J) - pw; \
        V8 m0_ = SFX(ld8)(p_), m1_ = SFX(ld8)(p_ + 8); \
        SFX(st8)(ev + (J), OM_UNLANE8(OM_EVEN8_LANES(m0_, m1_))); \
        SFX(st8)(od + (J), OM_UNLANE8(OM_ODD8_LANES(m0_, m1_))); } while (0)
    for (; j + 8 <= n2 && 2 * j - pw + 16 <= W; j += 8) OM_SPLIT8(j);
    /* the last whole vector of the row, overlapping the one before (the same values): a row
     * of 32 then leaves one column pair to the scalar steps, not 8 */
    long jt = (W - 16 + pw) / 2;
    if (j < n2 && W >= 16 && 2 * jt - pw >= 0 && jt + 8 <= n2 && jt + 8 > j) {
        OM_SPLIT8(jt);
        j = jt + 8;
    }
#undef OM_SPLIT8
    for (; j < n2; j++) {  /* the last columns and the right padding */
        long a = 2 * j - pw, b = a + 1;
        ev[j] = a >= 0 && a < W ? src[a] : 0.0f;
        od[j] = b >= 0 && b < W ? src[b] : 0.0f;
    }
}

/* every channel of images [0, Nn): x [Nn][C][H][W] -> out [Nn][C][Ho][Wo]; wpk: the packed
 * depthwise weights (channel c's tap k at wpk[c 4 KK + 4 k]); scr: dw_direct_scratch floats */
static inline __attribute__((always_inline)) void SFX(dw_direct_k)(
        int KS, int S, const float *x, const float *wpk, const float *bias, float *out,
        float *scr, long Nn, long C, long H, long W, long ph, long pw, long Ho, long Wo,
        int act, float ep0, float ep1) {
    long ws = ((W + 2 * pw + 1) / S + 24 + 7) / 8 * 8, slot = S * ws;
    float *zero = scr + OM_DW_SLOTS * slot, *tmp = zero + slot, *tail = tmp + 2 * ws * S;
    V8 lo = SFX(bc)(ep0), hi = SFX(bc)(ep1);
    memset(scr, 0, (OM_DW_SLOTS + 1) * slot * sizeof(float));  /* paddings stay zero */
    int late = act != ACT_NONE && act != ACT_RELU && act != ACT_CLIP;
    for (long nn = 0; nn < Nn; nn++)
        for (long c = 0; c < C; c++) {
            const float *xc = x + (nn * C + c) * H * W;
            float *oc = out + (nn * C + c) * Ho * Wo;
            V8 wv[25];
            for (int k = 0; k < KS * KS; k++) wv[k] = SFX(bc)(wpk[c * 4 * KS * KS + 4 * k]);
            V8 bv = SFX(bc)(bias ? bias[c] : 0.0f);
            long tag[OM_DW_SLOTS];
            for (int i = 0; i < OM_DW_SLOTS; i++) tag[i] = -1;
            int rb = Wo >= 32 ? 2 : 4;  /* rows a pass: up to 8 sums of 8 columns */
            for (long oh = 0; oh < Ho;) {
                int R = oh + rb <= Ho ? rb : 1;
                const float *rows[16];
                for (int j = 0; j < S * R + KS - S; j++) {
                    long ih = oh * S - ph + j;
                    if (ih < 0 || ih >= H) { rows[j] = zero; continue; }
                    float *sl = scr + (ih % OM_DW_SLOTS) * slot;
                    rows[j] = sl;
                    if (tag[ih % OM_DW_SLOTS] == ih) continue;
                    tag[ih % OM_DW_SLOTS] = ih;
                    if (S == 1) { memcpy(sl + pw, xc + ih * W, W * sizeof(float)); continue; }
                    SFX(dw_split2_row)(xc + ih * W, W, pw, sl, sl + ws, (W + 2 * pw + 1) / 2);
                }
                float *orow[4];
                for (int r = 0; r < 4; r++) orow[r] = oc + (oh + (r < R ? r : 0)) * Wo;
                if (R == 4) SFX(dw_pass)(KS, S, 4, rows, ws, wv, bv, orow, Wo, act, lo, hi, tail);
                else if (R == 2) SFX(dw_pass)(KS, S, 2, rows, ws, wv, bv, orow, Wo, act, lo, hi, tail);
                else SFX(dw_pass)(KS, S, 1, rows, ws, wv, bv, orow, Wo, act, lo, hi, tail);
                if (late) SFX(act_rows)(act, ep0, ep1, orow[0], R * Wo);
                oh += R;
            }
        }
}

/* whether dw_direct runs this depthwise convolution (the caller checked one channel a group,
 * no pool, no prologue) */
static inline int SFX(dw_direct_fits)(long kh, long kw, long sh, long sw, long dh, long dw,
                                      long ph, long pw) {
    return kh == kw && (kh == 3 || kh == 5) && sh == sw && (sh == 1 || sh == 2) && dh == 1
           && dw == 1 && ph < kh && pw < kw;
}

static void SFX(dw_direct)(long k, long s, const float *x, const float *wpk, const float *bias,
                           float *out, float *scr, long Nn, long C, long H, long W, long ph,
                           long pw, long Ho, long Wo, int act, float ep0, float ep1) {
#define OM_DW_CASE(KS, S) if (k == KS && s == S) { SFX(dw_direct_k)(KS, S, x, wpk, bias, out, \
        scr, Nn, C, H, W, ph, pw, Ho, Wo, act, ep0, ep1); return; }
    OM_DW_CASE(3, 1) OM_DW_CASE(3, 2) OM_DW_CASE(5, 1) OM_DW_CASE(5, 2)
#undef OM_DW_CASE
}
#undef OM_DW_SLOTS
