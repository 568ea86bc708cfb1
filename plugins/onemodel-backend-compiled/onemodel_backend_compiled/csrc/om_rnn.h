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
#define OM_GATE_CLAMP16(X) SFX(vmax16)(SFX(bc16)(-7.90531110763549805f), \
                                      SFX(vmin16)(SFX(bc16)(7.90531110763549805f), X))
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

/* -- the fused kernels' batch vector (RB): the 16 rows of one panel row --------------------
 * One 16-lane register in the copies built with OM_LANES16, two 8-lane halves elsewhere
 * (RB_N of RB_W lanes). A tile keeps 8 accumulators of its gate sums whatever the width: one
 * hidden unit's 4 gates x 2 halves on 8 lanes, two units' x 1 on 16 (RB_U units a tile; the
 * GRU's tiles likewise take RB_P pairs or quads of units), so the FMA pipes have enough
 * independent chains either way. Per lane the operations and their order are the same, so
 * the copies' results are identical (test_rnn_copies.py). */
#ifdef OM_LANES16
#define RB_N 1
typedef SFX(v16) SFX(rb);
#define RB SFX(rb)
static inline RB SFX(rb_ld)(const float *p) { return SFX(ld16)(p); }
static inline void SFX(rb_st)(float *p, RB v) { SFX(st16)(p, v); }
static inline RB SFX(rb_bc)(float x) { return SFX(bc16)(x); }
static inline RB SFX(rb_tanh)(RB x) {
    RB out_;
    OM_GATE_TANH(RB, x, OM_GATE_CLAMP16, OM_GATE_SEL8);
    return out_;
}
#else
#define RB_N 2
typedef V8 SFX(rb);
#define RB SFX(rb)
static inline RB SFX(rb_ld)(const float *p) { return SFX(ld8)(p); }
static inline void SFX(rb_st)(float *p, RB v) { SFX(st8)(p, v); }
static inline RB SFX(rb_bc)(float x) { return SFX(bc)(x); }
static inline RB SFX(rb_tanh)(RB x) { return SFX(gate_tanh8)(x); }
#endif
#define RB_W (16 / RB_N)  /* lanes of one RB */
#define RB_U (2 / RB_N)   /* units (LSTM) or pairs / quads of units (GRU) per tile */
static inline RB SFX(rb_sig)(RB x) { return 0.5f * SFX(rb_tanh)(0.5f * x) + 0.5f; }

/* the tiles' accumulators: np tiles of up to 6 gate sums (4 for the LSTM and the GRU's n
 * quads), each of RB_N batch vectors; rb_zero clears the first G of each tile */
typedef RB SFX(rb_acc)[6][RB_N];
static inline __attribute__((always_inline)) void SFX(rb_zero)(int np, int G,
                                                              SFX(rb_acc) *acc) {
    for (int t = 0; t < np; t++)
        for (int g = 0; g < G; g++)
            for (int q = 0; q < RB_N; q++) acc[t][g][q] = (RB){0};
}

/* the sums of every fused kernel: for k in [0, K), panel row k (P + 16 k) times the G weights
 * of row k of each of np tiles (tile t's at w + t * tstride + G k) into acc[t][to[g]] (to:
 * NULL for g itself), in k order, one fused multiply-add a step */
static inline __attribute__((always_inline)) void SFX(rb_sums)(
        int np, int G, long K, const float *P, const float *w, long tstride, const int *to,
        SFX(rb_acc) *acc) {
    for (long k = 0; k < K; k++) {
        RB a[RB_N];
        for (int q = 0; q < RB_N; q++) a[q] = SFX(rb_ld)(P + 16 * k + RB_W * q);
        for (int t = 0; t < np; t++) {
            const float *wk = w + t * tstride + G * k;
            for (int g = 0; g < G; g++) {
                RB b = SFX(rb_bc)(wk[g]);
                int d = to ? to[g] : g;
                for (int q = 0; q < RB_N; q++) acc[t][d][q] += b * a[q];
            }
        }
    }
}

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
 * buffer, 1 MiB at batch 16). One tile is the 4 gates of RB_U hidden units j.. for the 16
 * rows: 8 accumulators, the biases and the cell on them in registers, h^T written into the
 * next step's panel. x_t comes into lanes and h^T back into y's rows by 8x8 register
 * transposes. Scratch: 16 (3 H + 2 I) floats (two panels, c^T). */
static __attribute__((noinline)) void SFX(lstm_unit16)(long K, const float *wj, const float *bj,
                                                       const float *P, float *cj, float *hj) {
    SFX(rb_acc) acc[RB_U];
    SFX(rb_zero)(RB_U, 4, acc);
    /* the weights of the units two ahead, a line at a time: the hardware's stream prefetch
     * stops at each 4 KiB page, and W (384 KiB at H = 128, I = 64) is read once a step, from
     * L3 where L2 is shared with a busy neighbour (a prefetch past W's end does not fault) */
    for (long o = 0; o < 4 * K * RB_U; o += 16) __builtin_prefetch(wj + 8 * K + o);
    SFX(rb_sums)(RB_U, 4, K, P, wj, 4 * K, 0, acc);
    for (int u = 0; u < RB_U; u++)
        for (int q = 0; q < RB_N; q++) {
            RB i = acc[u][0][q], f = acc[u][1][q], g = acc[u][2][q], o = acc[u][3][q];
            if (bj) {
                i += SFX(rb_bc)(bj[4 * u]); f += SFX(rb_bc)(bj[4 * u + 1]);
                g += SFX(rb_bc)(bj[4 * u + 2]); o += SFX(rb_bc)(bj[4 * u + 3]);
            }
            i = SFX(rb_sig)(i); f = SFX(rb_sig)(f); g = SFX(rb_tanh)(g); o = SFX(rb_sig)(o);
            long at = 16 * u + RB_W * q;
            RB c = f * SFX(rb_ld)(cj + at) + i * g;
            SFX(rb_st)(cj + at, c);
            SFX(rb_st)(hj + at, o * SFX(rb_tanh)(c));
        }
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
            for (long j = 0; j < H; j += RB_U)  /* (H % 4 == 0) */
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
 * As lstm_fused, with one tile for np pairs of units j, j + 1 (r, z, n of each: 6 sums a pair
 * and half); np is RB_U, or 1 for the last pair when H / 2 is odd: the h rows of the panel
 * first (W_hh), then n's recurrent part is set aside and the x rows (W_ih) go on into r, z
 * and n's input part, since r scales W_hn h + b_hn alone. w: per pair of units, H then I rows
 * of (r, z, n of j, then of j + 1); bias: per unit (b_ir + b_hr, b_iz + b_hz, b_in, b_hn) or
 * -1. Scratch: 16 (2 H + 2 I) floats (two panels). */
static inline __attribute__((always_inline)) void SFX(gru_pairs)(
        int np, long H, long I, const float *wp, const float *bj, const float *P,
        const float *hr, float *hj) {
    SFX(rb_acc) acc[RB_U];
    RB keep[RB_U][2][RB_N];
    SFX(rb_zero)(np, 6, acc);
    long pair = 6 * (H + I);  /* floats of one pair's weights */
    /* the h rows (prefetching as lstm_unit16 does lost here) */
    SFX(rb_sums)(np, 6, H, P, wp, pair, 0, acc);
    for (int p = 0; p < np; p++)  /* W_hn h set aside: r scales it alone */
        for (int q = 0; q < RB_N; q++) {
            keep[p][0][q] = acc[p][2][q]; keep[p][1][q] = acc[p][5][q];
            acc[p][2][q] = acc[p][5][q] = (RB){0};
        }
    SFX(rb_sums)(np, 6, I, P + 16 * H, wp + 6 * H, pair, 0, acc);  /* the x rows */
    for (int p = 0; p < np; p++)
        for (int u = 0; u < 2; u++) {
            long unit = 2 * p + u;
            RB br = {0}, bz = {0}, bn = {0}, bh = {0};
            if (bj) {
                br = SFX(rb_bc)(bj[4 * unit]); bz = SFX(rb_bc)(bj[4 * unit + 1]);
                bn = SFX(rb_bc)(bj[4 * unit + 2]); bh = SFX(rb_bc)(bj[4 * unit + 3]);
            }
            for (int q = 0; q < RB_N; q++) {
                long at = 16 * unit + RB_W * q;  /* this unit's row of h^T */
                RB r = SFX(rb_sig)(acc[p][3 * u][q] + br);
                RB z = SFX(rb_sig)(acc[p][3 * u + 1][q] + bz);
                RB n = SFX(rb_tanh)(acc[p][3 * u + 2][q] + bn + r * (keep[p][u][q] + bh));
                SFX(rb_st)(hj + at, n + z * (SFX(rb_ld)(hr + at) - n));
            }
        }
}
static __attribute__((noinline)) void SFX(gru_pair16)(long H, long I, const float *wp,
                                                      const float *bj, const float *P,
                                                      const float *hr, float *hj) {
    SFX(gru_pairs)(RB_U, H, I, wp, bj, P, hr, hj);
}
#if RB_U > 1
static __attribute__((noinline)) void SFX(gru_pair16_one)(long H, long I, const float *wp,
                                                          const float *bj, const float *P,
                                                          const float *hr, float *hj) {
    SFX(gru_pairs)(1, H, I, wp, bj, P, hr, hj);
}
#endif

/* -- the fused GRU without linear_before_reset (flags 4; ONNX's default, H % 4 == 0) --------
 * r gates h before n's recurrent product, so a step has two passes over the units. First, per
 * RB_U pairs of units, r and z from the h rows (W_hr, W_hz) and the x rows (W_ir, W_iz, W_in;
 * 4 then 6 sums a pair and half): r h into a panel RH (H, 16), z and n's input part
 * (W_in x + b_in) set aside (zb, nb: (H, 16) each). Then, per np quads of units (RB_U, or 1
 * for the last when H / 4 is odd), n = tanh(nb + b_hn + W_hn (r h)) over RH (4 sums a quad
 * and half) and h' = n + z (h - n) into the next step's panel. w: per pair, H rows of
 * (r, z of j, r, z of j + 1), then I rows of (r, z, n of j, then of j + 1); then W_hn per four
 * units, H rows of (n of j .. j + 3): 3 H (H + I) floats, as the form with
 * linear_before_reset. bias: per unit (b_ir + b_hr, b_iz + b_hz, b_in, b_hn) or -1. Scratch:
 * 16 (5 H + 2 I) floats (two panels, RH, zb, nb). */
static __attribute__((noinline)) void SFX(gru_rzx16)(long H, long I, const float *wp,
                                                     const float *bj, const float *P,
                                                     const float *hr, float *rh, float *zb,
                                                     float *nb) {
    SFX(rb_acc) acc[RB_U];  /* per pair: r, z, n of j, then of j + 1 (n: the x rows only) */
    SFX(rb_zero)(RB_U, 6, acc);
    long pair = 4 * H + 6 * I;  /* floats of one pair's weights */
    static const int hrow[4] = {0, 1, 3, 4};  /* the h rows' r, z of j, r, z of j + 1 */
    SFX(rb_sums)(RB_U, 4, H, P, wp, pair, hrow, acc);  /* the h rows: r and z */
    /* the x rows: r, z and n's input part */
    SFX(rb_sums)(RB_U, 6, I, P + 16 * H, wp + 4 * H, pair, 0, acc);
    for (int p = 0; p < RB_U; p++)
        for (int u = 0; u < 2; u++) {
            long unit = 2 * p + u;
            RB br = {0}, bz = {0}, bn = {0};
            if (bj) {
                br = SFX(rb_bc)(bj[4 * unit]); bz = SFX(rb_bc)(bj[4 * unit + 1]);
                bn = SFX(rb_bc)(bj[4 * unit + 2]);
            }
            for (int q = 0; q < RB_N; q++) {
                long o = 16 * unit + RB_W * q;
                RB r = SFX(rb_sig)(acc[p][3 * u][q] + br);
                SFX(rb_st)(rh + o, r * SFX(rb_ld)(hr + o));
                SFX(rb_st)(zb + o, SFX(rb_sig)(acc[p][3 * u + 1][q] + bz));
                SFX(rb_st)(nb + o, acc[p][3 * u + 2][q] + bn);
            }
        }
}

static inline __attribute__((always_inline)) void SFX(gru_nquads)(
        int nq, long H, const float *wq, const float *bj, const float *RH, const float *nb,
        const float *zb, const float *hr, float *hj) {
    SFX(rb_acc) acc[RB_U];
    SFX(rb_zero)(nq, 4, acc);
    SFX(rb_sums)(nq, 4, H, RH, wq, 4 * H, 0, acc);
    for (int p = 0; p < nq; p++)
        for (int u = 0; u < 4; u++) {
            long unit = 4 * p + u;
            RB bh = bj ? SFX(rb_bc)(bj[4 * unit + 3]) : (RB){0};
            for (int q = 0; q < RB_N; q++) {
                long o = 16 * unit + RB_W * q;
                RB n = SFX(rb_tanh)(acc[p][u][q] + SFX(rb_ld)(nb + o) + bh);
                SFX(rb_st)(hj + o, n + SFX(rb_ld)(zb + o) * (SFX(rb_ld)(hr + o) - n));
            }
        }
}
static __attribute__((noinline)) void SFX(gru_nquad16)(long H, const float *wq, const float *bj,
                                                       const float *RH, const float *nb,
                                                       const float *zb, const float *hr,
                                                       float *hj) {
    SFX(gru_nquads)(RB_U, H, wq, bj, RH, nb, zb, hr, hj);
}
#if RB_U > 1
static __attribute__((noinline)) void SFX(gru_nquad16_one)(long H, const float *wq,
                                                           const float *bj, const float *RH,
                                                           const float *nb, const float *zb,
                                                           const float *hr, float *hj) {
    SFX(gru_nquads)(1, H, wq, bj, RH, nb, zb, hr, hj);
}
#endif

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
            if (lbr) {  /* (H even) */
                long j = 0;
                for (; j + 2 * RB_U <= H; j += 2 * RB_U)
                    SFX(gru_pair16)(H, I, w + j * 3 * K, bias ? bias + 4 * j : 0, pc,
                                    pc + 16 * j, px + 16 * j);
#if RB_U > 1
                if (j < H)
                    SFX(gru_pair16_one)(H, I, w + j * 3 * K, bias ? bias + 4 * j : 0, pc,
                                        pc + 16 * j, px + 16 * j);
#endif
            } else {  /* (H % 4 == 0) */
                float *zb = RH + 16 * H, *nb = zb + 16 * H;
                for (long j = 0; j < H; j += 2 * RB_U)
                    SFX(gru_rzx16)(H, I, w + (j / 2) * (4 * H + 6 * I), bias ? bias + 4 * j : 0,
                                   pc, pc + 16 * j, RH + 16 * j, zb + 16 * j, nb + 16 * j);
                long j = 0;
                for (; j + 4 * RB_U <= H; j += 4 * RB_U)
                    SFX(gru_nquad16)(H, wn + j * H, bias ? bias + 4 * j : 0, RH, nb + 16 * j,
                                     zb + 16 * j, pc + 16 * j, px + 16 * j);
#if RB_U > 1
                if (j < H)
                    SFX(gru_nquad16_one)(H, wn + j * H, bias ? bias + 4 * j : 0, RH,
                                         nb + 16 * j, zb + 16 * j, pc + 16 * j, px + 16 * j);
#endif
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
#undef RB
#undef RB_N
#undef RB_W
#undef RB_U
