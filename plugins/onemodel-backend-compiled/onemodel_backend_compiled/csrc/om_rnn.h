/* I_LSTM and I_GRU: the recurrence of one direction of one layer (ops lstm / gru, PyTorch's
 * gate order). The input projection of every step (x W_ih^T + biases) is one I_GEMM emitted
 * before this instruction into `pre` (T, B, G*H); here, per step, the recurrent GEMM of the
 * previous state with the packed W_hh^T and the gate arithmetic (8 lanes, the same formulas
 * on scalars for the rest of a row). A layer whose batch fills 16 lanes runs fused instead
 * (flag 4, lstm_fused / gru_fused below: no I_GEMM before it, the batch in the lanes, the
 * projection and the cell inside each step's tiles). Included by om_kernels.h once per
 * kernel copy.
 *
 * Fields (both): T, B, H, pre, w, w2, bias, h0, c0, y, y_step, y_row, hn, cn, flags, scratch,
 * input, pre_step, pre_row.
 *   w: W_hh^T as 16-column panels (K = H; N = G*H, or 2H for a GRU with linear_before_reset
 *   off, whose n panels (N = H) are w2); bias: the recurrent bias (G*H) added to the GEMM (a
 *   GRU with linear_before_reset, where r scales W_hn h + b_hn; -1 elsewhere: folded into pre);
 *   h0, c0: initial states (B, H) or -1 (zeros); y: step t, batch row b at
 *   y + t * y_step + b * y_row; hn, cn: the final states (B, H) (cn: -1 for a GRU);
 *   flags: 1 reverse (steps from the last), 2 linear_before_reset (GRU), 4 fused (lstm_fused,
 *   H % 4 == 0; gru_fused, with 2, H even; without 2, H % 4 == 0: pre is x
 *   itself (T, B, I), w is [W_hh | W_ih] by unit, bias the biases by unit or -1);
 *   scratch: B * (G + 2) * H floats; fused, 16 (3 H + 2 I) (LSTM), 16 (2 H + 2 I) (GRU with
 *   2) or 16 (5 H + 2 I) (GRU without)
 *   (the instruction table's formula, instructions.py);
 *   input (field 16): I, the input size;
 *   pre_step, pre_row (17, 18): step t, batch row b of pre at pre + t * pre_step + b * pre_row
 *   (a batch-first input, or its projection, read where it lies: rnn_rules.batch_first_src). */

/* the gates' tanh and sigmoid: the rational form of Eigen's and ONNX Runtime's RNN kernels
 * (odd degree 13 over even degree 6, on x clamped to +-7.905, where tanh rounds to +-1 in
 * float32; NaN stays NaN through the clamp and the quotient), a few ulp from tanh; sigmoid(x) = 0.5 tanh(x / 2) + 0.5, the ops'
 * own formula. About 17 operations a lane and one division: the VM's exponential form of
 * each was most of an LSTM step's time beside its GEMM at batch 16 */
#ifndef OM_GATE_TANH  /* (this header is included once per kernel copy) */
#define OM_GATE_TANH(T, X, CLAMP, SEL) do { \
        T x_ = CLAMP(X); T x2 = x_ * x_; \
        T p_ = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f; \
        p_ = x2 * p_ + -8.60467152213735e-11f; p_ = x2 * p_ + 5.12229709037114e-08f; \
        p_ = x2 * p_ + 1.48572235717979e-05f; p_ = x2 * p_ + 6.37261928875436e-04f; \
        p_ = x2 * p_ + 4.89352455891786e-03f; p_ = x_ * p_; \
        T q_ = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f; \
        q_ = x2 * q_ + 2.26843463243900e-03f; q_ = x2 * q_ + 4.89352518554385e-03f; \
        out_ = SEL(X, p_ / q_); } while (0)
#define OM_GATE_CLAMP8(X) SFX(vmax)(SFX(bc)(-7.90531110763549805f), \
                                    SFX(vmin)(SFX(bc)(7.90531110763549805f), X))
#define OM_GATE_SEL8(X, R) (R)  /* a NaN passes the clamp (vmin / vmax return their second
                                  * operand, X, when it is NaN), so the quotient is NaN */
#define OM_GATE_CLAMP1(X) ((X) > 7.90531110763549805f ? 7.90531110763549805f \
                           : (X) < -7.90531110763549805f ? -7.90531110763549805f : (X))
#define OM_GATE_SEL1(X, R) (R)  /* NaN fails both comparisons: the clamp returns it */
#endif
static inline V8 SFX(gate_tanh8)(V8 x) {
    V8 out_;
    OM_GATE_TANH(V8, x, OM_GATE_CLAMP8, OM_GATE_SEL8);
    return out_;
}
static inline float SFX(gate_tanh)(float x) {
    float out_;
    OM_GATE_TANH(float, x, OM_GATE_CLAMP1, OM_GATE_SEL1);
    return out_;
}
static inline V8 SFX(gate_sig8)(V8 x) { return 0.5f * SFX(gate_tanh8)(0.5f * x) + 0.5f; }
static inline float SFX(gate_sig)(float x) { return 0.5f * SFX(gate_tanh)(0.5f * x) + 0.5f; }

/* the LSTM cell on one batch row: g holds the pre-activations i, f, g, o (4H); c the cell
 * state, updated in place; h the new hidden state */
static void SFX(lstm_row)(const float *g, float *c, float *h, long H) {
    long j = 0;
    for (; j + 8 <= H; j += 8) {
        V8 i = SFX(gate_sig8)(SFX(ld8)(g + j)), fg = SFX(gate_sig8)(SFX(ld8)(g + H + j));
        V8 gg = SFX(gate_tanh8)(SFX(ld8)(g + 2 * H + j));
        V8 o = SFX(gate_sig8)(SFX(ld8)(g + 3 * H + j));
        V8 cv = fg * SFX(ld8)(c + j) + i * gg;
        SFX(st8)(c + j, cv);
        SFX(st8)(h + j, o * SFX(gate_tanh8)(cv));
    }
    for (; j < H; j++) {
        float i = SFX(gate_sig)(g[j]), fg = SFX(gate_sig)(g[H + j]);
        float gg = SFX(gate_tanh)(g[2 * H + j]), o = SFX(gate_sig)(g[3 * H + j]);
        float cv = fg * c[j] + i * gg;
        c[j] = cv;
        h[j] = o * SFX(gate_tanh)(cv);
    }
}

/* a GRU with linear_before_reset: p the row's input part (r, z, n; 3H), q its recurrent part
 * (W_h h + b_h; 3H); n = tanh(p_n + r q_n), h' = n + z (h - n) */
static void SFX(gru_lbr_row)(const float *p, const float *q, const float *hp, float *h, long H) {
    long j = 0;
    for (; j + 8 <= H; j += 8) {
        V8 r = SFX(gate_sig8)(SFX(ld8)(p + j) + SFX(ld8)(q + j));
        V8 z = SFX(gate_sig8)(SFX(ld8)(p + H + j) + SFX(ld8)(q + H + j));
        V8 n = SFX(gate_tanh8)(SFX(ld8)(p + 2 * H + j) + r * SFX(ld8)(q + 2 * H + j));
        SFX(st8)(h + j, n + z * (SFX(ld8)(hp + j) - n));
    }
    for (; j < H; j++) {
        float r = SFX(gate_sig)(p[j] + q[j]), z = SFX(gate_sig)(p[H + j] + q[H + j]);
        float n = SFX(gate_tanh)(p[2 * H + j] + r * q[2 * H + j]);
        h[j] = n + z * (hp[j] - n);
    }
}

/* a GRU without it (ONNX's default), first half: r and z from p (3H) and q = W_rz h (2H); z
 * kept in q's z half, rh = r * h for the n GEMM */
static void SFX(gru_rz_row)(const float *p, float *q, const float *hp, float *rh, long H) {
    long j = 0;
    for (; j + 8 <= H; j += 8) {
        V8 r = SFX(gate_sig8)(SFX(ld8)(p + j) + SFX(ld8)(q + j));
        SFX(st8)(q + H + j, SFX(gate_sig8)(SFX(ld8)(p + H + j) + SFX(ld8)(q + H + j)));
        SFX(st8)(rh + j, r * SFX(ld8)(hp + j));
    }
    for (; j < H; j++) {
        float r = SFX(gate_sig)(p[j] + q[j]);
        q[H + j] = SFX(gate_sig)(p[H + j] + q[H + j]);
        rh[j] = r * hp[j];
    }
}

/* second half: a = p_n + W_n (r h) (the GEMM added p_n), n = tanh(a), h' = n + z (h - n) */
static void SFX(gru_n_row)(const float *a, const float *z, const float *hp, float *h, long H) {
    long j = 0;
    for (; j + 8 <= H; j += 8) {
        V8 n = SFX(gate_tanh8)(SFX(ld8)(a + j));
        SFX(st8)(h + j, n + SFX(ld8)(z + j) * (SFX(ld8)(hp + j) - n));
    }
    for (; j < H; j++) {
        float n = SFX(gate_tanh)(a[j]);
        h[j] = n + z[j] * (hp[j] - n);
    }
}

/* -- the fused LSTM (flags & 4: rnn_rules.fused_rnn, a batch filling 16 lanes, H % 4 == 0) --
 * The batch lies in the lanes: per group of 16 batch rows, one panel (H + I, 16) holds h^T over
 * x_t^T, the B operand of the whole step's product (W_hh h + W_ih x_t, K = H + I: 12 KiB at
 * H = 128, I = 64, in L1), and c^T is (H, 16). W = [W_hh | W_ih], packed by unit as
 * w[j][k][i, f, g, o], is streamed once a step (the 6x16 GEMM of the unfused path re-read W_hh
 * for rows 0-5, 6-11 and 12-15, and the projection of every step went through a (T, B, 4H)
 * buffer, 1 MiB at batch 16). One tile is the 4 gates of one hidden unit j for the 16 rows: 8
 * accumulators, the biases and the cell on them in registers, h^T written into the next
 * step's panel. x_t comes into lanes and h^T back into y's rows by 8x8 register transposes.
 * Scratch: 16 (3 H + 2 I) floats (two panels, c^T). */
static __attribute__((noinline)) void SFX(lstm_unit16)(long K, const float *wj, const float *bj,
                                                       const float *P, float *cj, float *hj) {
    V8 i0 = {0}, i1 = {0}, f0 = {0}, f1 = {0}, g0 = {0}, g1 = {0}, o0 = {0}, o1 = {0};
    /* the weights of the unit two ahead, a line at a time: the hardware's stream prefetch
     * stops at each 4 KiB page, and W (384 KiB at H = 128, I = 64) is read once a step, from
     * L3 where L2 is shared with a busy neighbour (a prefetch past W's end does not fault) */
    for (long o = 0; o < 4 * K; o += 16) __builtin_prefetch(wj + 8 * K + o);
    for (long k = 0; k < K; k++) {
        V8 a0 = SFX(ld8)(P + 16 * k), a1 = SFX(ld8)(P + 16 * k + 8), w;
        const float *wk = wj + 4 * k;
        w = SFX(bc)(wk[0]); i0 += w * a0; i1 += w * a1;
        w = SFX(bc)(wk[1]); f0 += w * a0; f1 += w * a1;
        w = SFX(bc)(wk[2]); g0 += w * a0; g1 += w * a1;
        w = SFX(bc)(wk[3]); o0 += w * a0; o1 += w * a1;
    }
    if (bj) {
        V8 b = SFX(bc)(bj[0]); i0 += b; i1 += b;
        b = SFX(bc)(bj[1]); f0 += b; f1 += b;
        b = SFX(bc)(bj[2]); g0 += b; g1 += b;
        b = SFX(bc)(bj[3]); o0 += b; o1 += b;
    }
    i0 = SFX(gate_sig8)(i0); i1 = SFX(gate_sig8)(i1);
    f0 = SFX(gate_sig8)(f0); f1 = SFX(gate_sig8)(f1);
    g0 = SFX(gate_tanh8)(g0); g1 = SFX(gate_tanh8)(g1);
    o0 = SFX(gate_sig8)(o0); o1 = SFX(gate_sig8)(o1);
    V8 c0 = f0 * SFX(ld8)(cj) + i0 * g0, c1 = f1 * SFX(ld8)(cj + 8) + i1 * g1;
    SFX(st8)(cj, c0); SFX(st8)(cj + 8, c1);
    SFX(st8)(hj, o0 * SFX(gate_tanh8)(c0)); SFX(st8)(hj + 8, o1 * SFX(gate_tanh8)(c1));
}

/* rows [0, nb) of src (row stride ld, n columns) into dst^T (n, 16); lanes from nb on are
 * zero */
static void SFX(rows_to_lanes)(const float *src, long ld, long nb, long n, float *dst) {
    long c = 0;
    for (; c + 8 <= n; c += 8)
        for (long half = 0; half < 2; half++) {
            long m = nb - 8 * half;
            V8 r[8];
            for (long b = 0; b < 8; b++)
                r[b] = b < m ? SFX(ld8)(src + (8 * half + b) * ld + c) : (V8){0};
            if (m > 0) SFX(transpose8)(r);
            for (long q = 0; q < 8; q++) SFX(st8)(dst + (c + q) * 16 + 8 * half, r[q]);
        }
    for (; c < n; c++)
        for (long b = 0; b < 16; b++) dst[c * 16 + b] = b < nb ? src[b * ld + c] : 0.0f;
}

/* the inverse for rows [0, nb): dst[b * ld + j] = src[j * 16 + b], any n */
static void SFX(lanes_to_rows)(const float *src, long nb, long n, float *dst, long ld) {
    long c = 0;
    for (; c + 8 <= n; c += 8)
        for (long half = 0; half * 8 < nb; half++) {
            V8 r[8];
            for (long q = 0; q < 8; q++) r[q] = SFX(ld8)(src + (c + q) * 16 + 8 * half);
            SFX(transpose8)(r);
            for (long b = 0; b < 8 && 8 * half + b < nb; b++)
                SFX(st8)(dst + (8 * half + b) * ld + c, r[b]);
        }
    for (; c < n; c++)
        for (long b = 0; b < nb; b++) dst[b * ld + c] = src[c * 16 + b];
}

static void SFX(lstm_fused)(long T, long B, long H, long I, const float *x, long xstep,
                            long xrow, const float *w, const float *bias, const float *h0, const float *c0, float *y,
                            long ystep, long yrow, float *hn, float *cn, int rev, float *S) {
    long K = H + I;
    float *pa = S, *pb = pa + 16 * K, *cT = pb + 16 * K;
    for (long b0 = 0; b0 < B; b0 += 16) {
        long nb = B - b0 < 16 ? B - b0 : 16;
        float *pc = pa, *px = pb;
        if (h0) SFX(rows_to_lanes)(h0 + b0 * H, H, nb, H, pc);
        else memset(pc, 0, 16 * H * sizeof(float));
        if (c0) SFX(rows_to_lanes)(c0 + b0 * H, H, nb, H, cT);
        else memset(cT, 0, 16 * H * sizeof(float));
        for (long s = 0; s < T; s++) {
            long t = rev ? T - 1 - s : s;
            SFX(rows_to_lanes)(x + t * xstep + b0 * xrow, xrow, nb, I, pc + 16 * H);
            for (long j = 0; j < H; j++)
                SFX(lstm_unit16)(K, w + j * 4 * K, bias ? bias + 4 * j : 0, pc, cT + 16 * j,
                                 px + 16 * j);
            SFX(lanes_to_rows)(px, nb, H, y + t * ystep + b0 * yrow, yrow);
            float *tmp = pc; pc = px; px = tmp;
        }
        SFX(lanes_to_rows)(pc, nb, H, hn + b0 * H, H);
        SFX(lanes_to_rows)(cT, nb, H, cn + b0 * H, H);
    }
}

/* -- the fused GRU with linear_before_reset (flags 2 | 4; rnn_rules.fused_rnn, H even) -----
 * As lstm_fused, with one tile for two units j, j + 1 (r, z, n of each: 12 accumulators): the
 * h rows of the panel first (W_hh), then n's recurrent part is set aside and the x rows (W_ih)
 * go on into r, z and n's input part, since r scales W_hn h + b_hn alone. w: per pair of
 * units, H then I rows of (r, z, n of j, then of j + 1); bias: per unit (b_ir + b_hr,
 * b_iz + b_hz, b_in, b_hn) or -1. Scratch: 16 (2 H + 2 I) floats (two panels). */
static __attribute__((noinline)) void SFX(gru_pair16)(long H, long I, const float *wp,
                                                      const float *bj, const float *P,
                                                      const float *hr, float *hj) {
    V8 r0 = {0}, r1 = {0}, z0 = {0}, z1 = {0}, n0 = {0}, n1 = {0};
    V8 s0 = {0}, s1 = {0}, u0 = {0}, u1 = {0}, m0 = {0}, m1 = {0};  /* unit j + 1 */
    V8 keep[4];
    for (int part = 0; part < 2; part++) {  /* (prefetching as lstm_unit16 does lost here) */
        long K = part ? I : H;
        const float *Pk = part ? P + 16 * H : P;
        for (long k = 0; k < K; k++) {
            V8 a0 = SFX(ld8)(Pk + 16 * k), a1 = SFX(ld8)(Pk + 16 * k + 8), w;
            const float *wk = wp + 6 * k;
            w = SFX(bc)(wk[0]); r0 += w * a0; r1 += w * a1;
            w = SFX(bc)(wk[1]); z0 += w * a0; z1 += w * a1;
            w = SFX(bc)(wk[2]); n0 += w * a0; n1 += w * a1;
            w = SFX(bc)(wk[3]); s0 += w * a0; s1 += w * a1;
            w = SFX(bc)(wk[4]); u0 += w * a0; u1 += w * a1;
            w = SFX(bc)(wk[5]); m0 += w * a0; m1 += w * a1;
        }
        wp += 6 * K;
        if (!part) {  /* W_hn h set aside: r scales it alone */
            keep[0] = n0; keep[1] = n1; keep[2] = m0; keep[3] = m1;
            n0 = n1 = m0 = m1 = (V8){0};
        }
    }
    V8 acc[2][6] = {{r0, r1, z0, z1, n0, n1}, {s0, s1, u0, u1, m0, m1}};
    for (int u = 0; u < 2; u++) {
        V8 br = {0}, bz = {0}, bn = {0}, bh = {0};
        if (bj) {
            br = SFX(bc)(bj[4 * u]); bz = SFX(bc)(bj[4 * u + 1]);
            bn = SFX(bc)(bj[4 * u + 2]); bh = SFX(bc)(bj[4 * u + 3]);
        }
        const float *hp = hr + 16 * u;  /* this unit's row of h^T */
        for (int q = 0; q < 2; q++) {
            V8 r = SFX(gate_sig8)(acc[u][q] + br), z = SFX(gate_sig8)(acc[u][2 + q] + bz);
            V8 n = SFX(gate_tanh8)(acc[u][4 + q] + bn + r * (keep[2 * u + q] + bh));
            SFX(st8)(hj + 16 * u + 8 * q, n + z * (SFX(ld8)(hp + 8 * q) - n));
        }
    }
}

/* -- the fused GRU without linear_before_reset (flags 4; ONNX's default, H % 4 == 0) --------
 * r gates h before n's recurrent product, so a step has two passes over the units. First, per
 * pair of units, r and z from the h rows (W_hr, W_hz) and the x rows (W_ir, W_iz, W_in; 8 then
 * 12 accumulators): r h into a panel RH (H, 16), z and n's input part (W_in x + b_in) set
 * aside (zb, nb: (H, 16) each). Then, per four units, n = tanh(nb + b_hn + W_hn (r h)) over
 * RH (8 accumulators) and h' = n + z (h - n) into the next step's panel. w: per pair, H rows
 * of (r, z of j, r, z of j + 1), then I rows of (r, z, n of j, then of j + 1); then W_hn per
 * four units, H rows of (n of j .. j + 3): 3 H (H + I) floats, as the form with
 * linear_before_reset. bias: per unit (b_ir + b_hr, b_iz + b_hz, b_in, b_hn) or -1. Scratch:
 * 16 (5 H + 2 I) floats (two panels, RH, zb, nb). */
static __attribute__((noinline)) void SFX(gru_rzx16)(long H, long I, const float *wp,
                                                     const float *bj, const float *P,
                                                     const float *hr, float *rh, float *zb,
                                                     float *nb) {
    V8 r0 = {0}, r1 = {0}, z0 = {0}, z1 = {0}, s0 = {0}, s1 = {0}, u0 = {0}, u1 = {0};
    V8 n0 = {0}, n1 = {0}, m0 = {0}, m1 = {0};
    for (long k = 0; k < H; k++) {  /* the h rows: r and z */
        V8 a0 = SFX(ld8)(P + 16 * k), a1 = SFX(ld8)(P + 16 * k + 8), w;
        const float *wk = wp + 4 * k;
        w = SFX(bc)(wk[0]); r0 += w * a0; r1 += w * a1;
        w = SFX(bc)(wk[1]); z0 += w * a0; z1 += w * a1;
        w = SFX(bc)(wk[2]); s0 += w * a0; s1 += w * a1;
        w = SFX(bc)(wk[3]); u0 += w * a0; u1 += w * a1;
    }
    wp += 4 * H;
    const float *Px = P + 16 * H;
    for (long k = 0; k < I; k++) {  /* the x rows: r, z and n's input part */
        V8 a0 = SFX(ld8)(Px + 16 * k), a1 = SFX(ld8)(Px + 16 * k + 8), w;
        const float *wk = wp + 6 * k;
        w = SFX(bc)(wk[0]); r0 += w * a0; r1 += w * a1;
        w = SFX(bc)(wk[1]); z0 += w * a0; z1 += w * a1;
        w = SFX(bc)(wk[2]); n0 += w * a0; n1 += w * a1;
        w = SFX(bc)(wk[3]); s0 += w * a0; s1 += w * a1;
        w = SFX(bc)(wk[4]); u0 += w * a0; u1 += w * a1;
        w = SFX(bc)(wk[5]); m0 += w * a0; m1 += w * a1;
    }
    V8 acc[2][6] = {{r0, r1, z0, z1, n0, n1}, {s0, s1, u0, u1, m0, m1}};
    for (int u = 0; u < 2; u++) {
        V8 br = {0}, bz = {0}, bn = {0};
        if (bj) {
            br = SFX(bc)(bj[4 * u]); bz = SFX(bc)(bj[4 * u + 1]); bn = SFX(bc)(bj[4 * u + 2]);
        }
        for (int q = 0; q < 2; q++) {
            long o = 16 * u + 8 * q;
            V8 r = SFX(gate_sig8)(acc[u][q] + br);
            SFX(st8)(rh + o, r * SFX(ld8)(hr + o));
            SFX(st8)(zb + o, SFX(gate_sig8)(acc[u][2 + q] + bz));
            SFX(st8)(nb + o, acc[u][4 + q] + bn);
        }
    }
}

static __attribute__((noinline)) void SFX(gru_nquad16)(long H, const float *wq, const float *bj,
                                                       const float *RH, const float *nb,
                                                       const float *zb, const float *hr,
                                                       float *hj) {
    V8 a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0}, c0 = {0}, c1 = {0}, d0 = {0}, d1 = {0};
    for (long k = 0; k < H; k++) {
        V8 x0 = SFX(ld8)(RH + 16 * k), x1 = SFX(ld8)(RH + 16 * k + 8), w;
        const float *wk = wq + 4 * k;
        w = SFX(bc)(wk[0]); a0 += w * x0; a1 += w * x1;
        w = SFX(bc)(wk[1]); b0 += w * x0; b1 += w * x1;
        w = SFX(bc)(wk[2]); c0 += w * x0; c1 += w * x1;
        w = SFX(bc)(wk[3]); d0 += w * x0; d1 += w * x1;
    }
    V8 acc[8] = {a0, a1, b0, b1, c0, c1, d0, d1};
    for (int u = 0; u < 4; u++) {
        V8 bh = bj ? SFX(bc)(bj[4 * u + 3]) : (V8){0};
        for (int q = 0; q < 2; q++) {
            long o = 16 * u + 8 * q;
            V8 n = SFX(gate_tanh8)(acc[2 * u + q] + SFX(ld8)(nb + o) + bh);
            SFX(st8)(hj + o, n + SFX(ld8)(zb + o) * (SFX(ld8)(hr + o) - n));
        }
    }
}

/* the fused GRU's steps, either form: lbr 1 (linear_before_reset: gru_pair16, one pass a step)
 * or 0 (gru_rzx16 then gru_nquad16, two passes a step) */
static void SFX(gru_fused)(long T, long B, long H, long I, const float *x, long xstep,
                           long xrow, const float *w, const float *bias, const float *h0, float *y, long ystep,
                           long yrow, float *hn, int rev, int lbr, float *S) {
    long K = H + I;
    float *pa = S, *pb = pa + 16 * K, *RH = pb + 16 * K;  /* RH, zb, nb: without lbr only */
    const float *wn = w + (H / 2) * (4 * H + 6 * I);  /* without lbr: W_hn by four units */
    for (long b0 = 0; b0 < B; b0 += 16) {
        long nbat = B - b0 < 16 ? B - b0 : 16;
        float *pc = pa, *px = pb;
        if (h0) SFX(rows_to_lanes)(h0 + b0 * H, H, nbat, H, pc);
        else memset(pc, 0, 16 * H * sizeof(float));
        for (long s = 0; s < T; s++) {
            long t = rev ? T - 1 - s : s;
            SFX(rows_to_lanes)(x + t * xstep + b0 * xrow, xrow, nbat, I, pc + 16 * H);
            if (lbr) {
                for (long j = 0; j < H; j += 2)
                    SFX(gru_pair16)(H, I, w + j * 3 * K, bias ? bias + 4 * j : 0, pc,
                                    pc + 16 * j, px + 16 * j);
            } else {
                float *zb = RH + 16 * H, *nb = zb + 16 * H;
                for (long j = 0; j < H; j += 2)
                    SFX(gru_rzx16)(H, I, w + (j / 2) * (4 * H + 6 * I), bias ? bias + 4 * j : 0,
                                   pc, pc + 16 * j, RH + 16 * j, zb + 16 * j, nb + 16 * j);
                for (long j = 0; j < H; j += 4)
                    SFX(gru_nquad16)(H, wn + j * H, bias ? bias + 4 * j : 0, RH, nb + 16 * j,
                                     zb + 16 * j, pc + 16 * j, px + 16 * j);
            }
            SFX(lanes_to_rows)(px, nbat, H, y + t * ystep + b0 * yrow, yrow);
            float *tmp = pc; pc = px; px = tmp;
        }
        SFX(lanes_to_rows)(pc, nbat, H, hn + b0 * H, H);
    }
}

static void SFX(rnn)(int64_t op, const int64_t *f, float **bufs) {
    long T = f[0], B = f[1], H = f[2], ystep = f[10], yrow = f[11], pstep = f[17], prow = f[18];
    int lstm = op == I_LSTM, rev = (int)(f[14] & 1), lbr = (int)((f[14] >> 1) & 1);
    long G = lstm ? 4 : 3, GH = G * H;
    const float *pre = OM_ADDR(bufs, f[3]), *w = OM_ADDR(bufs, f[4]), *w2 = OM_ADDR(bufs, f[5]), *bias = OM_ADDR(bufs, f[6]);
    const float *h0 = OM_ADDR(bufs, f[7]), *c0 = OM_ADDR(bufs, f[8]);
    float *y = OM_ADDR(bufs, f[9]), *hn = OM_ADDR(bufs, f[12]), *cn = OM_ADDR(bufs, f[13]), *S = OM_ADDR(bufs, f[15]);
    if (lstm && (f[14] & 4)) {  /* pre: x itself (T, B, I) */
        SFX(lstm_fused)(T, B, H, f[16], pre, pstep, prow, w, bias, h0, c0, y, ystep, yrow, hn, cn, rev, S);
        return;
    }
    if (!lstm && (f[14] & 4)) {  /* pre: x itself (T, B, I) */
        SFX(gru_fused)(T, B, H, f[16], pre, pstep, prow, w, bias, h0, y, ystep, yrow, hn, rev, lbr, S);
        return;
    }
    float *q = S, *rh = S + B * GH, *qn = rh + B * H;
    /* the state before the first step: h0, or zeros in hn (written again at the end) */
    const float *hp = h0;
    long ldh = H;
    if (!hp) { memset(hn, 0, B * H * sizeof(float)); hp = hn; }
    if (lstm) {
        if (c0) memcpy(cn, c0, B * H * sizeof(float));
        else memset(cn, 0, B * H * sizeof(float));
    }
    for (long s = 0; s < T; s++) {
        long t = rev ? T - 1 - s : s;
        const float *p = pre + t * pstep;
        float *yt = y + t * ystep;
        if (lstm) {  /* q = p + h W_hh^T, then the cell */
            SFX(Epi) e = {0, 0, p, prow, ACT_NONE};
            SFX(gemm)(B, H, GH, hp, ldh, w, q, GH, &e);
            for (long b = 0; b < B; b++)
                SFX(lstm_row)(q + b * GH, cn + b * H, yt + b * yrow, H);
        } else if (lbr) {  /* q = h W_hh^T + b_hh */
            SFX(Epi) e = {bias, bias ? 1 : 0, 0, 0, ACT_NONE};
            SFX(gemm)(B, H, GH, hp, ldh, w, q, GH, &e);
            for (long b = 0; b < B; b++)
                SFX(gru_lbr_row)(p + b * prow, q + b * GH, hp + b * ldh, yt + b * yrow, H);
        } else {  /* q = h W_rz^T; r, z; qn = p_n + (r h) W_n^T; n, h' */
            SFX(Epi) none = {0, 0, 0, 0, ACT_NONE};
            SFX(gemm)(B, H, 2 * H, hp, ldh, w, q, 2 * H, &none);
            for (long b = 0; b < B; b++)
                SFX(gru_rz_row)(p + b * prow, q + b * 2 * H, hp + b * ldh, rh + b * H, H);
            SFX(Epi) e = {0, 0, p + 2 * H, prow, ACT_NONE};
            SFX(gemm)(B, H, H, rh, H, w2, qn, H, &e);
            for (long b = 0; b < B; b++)
                SFX(gru_n_row)(qn + b * H, q + b * 2 * H + H, hp + b * ldh, yt + b * yrow, H);
        }
        hp = yt;
        ldh = yrow;
    }
    for (long b = 0; b < B; b++) memcpy(hn + b * H, hp + b * ldh, H * sizeof(float));
}
