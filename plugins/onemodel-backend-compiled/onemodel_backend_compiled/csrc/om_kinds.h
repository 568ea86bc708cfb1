/* This copy's kind table: one entry per opcode (om_kind.h), the end of om_kernels.h.
 *
 * Each kind's run function runs the whole instruction on the calling thread (its split's range
 * function over [0, items) where it has one: the same code a split runs). The table's rows
 * follow OM_KINDS (om_program.h, generated from instructions.py): every kind named there needs
 * its SFX(kind_<key>) entry below, so adding an instruction is a row in instructions.py, its
 * kernel and an entry here. A copy that provides only some kinds (om_wide.h's) builds its own
 * table with the others NULL: native.c fills those from the copy below. */

static int SFX(gemm_run)(const int64_t *f, float **bufs) {
    SFX(Epi) e = {OM_ADDR(bufs, f[6]), (int)f[7], OM_ADDR(bufs, f[8]), f[9], (int)f[12]};
    SFX(gemm)(f[2], f[3], f[4], OM_ADDR(bufs, f[0]), f[1], OM_ADDR(bufs, f[5]), OM_ADDR(bufs, f[10]), f[11], &e);
    return 1;
}
static int SFX(bmm_run)(const int64_t *f, float **bufs) {
    SFX(bmm_range)(f, bufs, 0, f[0], OM_ADDR(bufs, f[14]), 1);
    return 1;
}
static int SFX(vm_run)(const int64_t *f, float **bufs) {
    SFX(vm_range)(f, bufs, 0, SFX(vm_items)(f));
    return 1;
}
static int SFX(mean_rows_run)(const int64_t *f, float **bufs) {
    SFX(mean_range)(f, bufs, 0, f[1]);
    return 1;
}
static int SFX(softmax_run)(const int64_t *f, float **bufs) {
    SFX(softmax_range)(f, bufs, 0, f[2]);
    return 1;
}
static int SFX(layernorm_run)(const int64_t *f, float **bufs) {
    SFX(layernorm_range)(f, bufs, 0, f[2]);
    return 1;
}
static int SFX(attn_run)(const int64_t *f, float **bufs) {
    SFX(attn_range)(f, bufs, 0, f[0] * f[1], 0, 0);
    return 1;
}
static int SFX(attn_mask_run)(const int64_t *f, float **bufs) {
    SFX(attn_range)(f, bufs, 0, f[0] * f[1], 0, 1);
    return 1;
}
static int SFX(conv1x1_run)(const int64_t *f, float **bufs) {
    SFX(conv1x1_gemm)(f, bufs);
    return 1;
}
static int SFX(conv_direct_run)(const int64_t *f, float **bufs) {
    SFX(conv_direct)(f, bufs);
    return 1;
}
static int SFX(conv_lanes_run)(const int64_t *f, float **bufs) {
    SFX(conv_lanes)(f, bufs);
    return 1;
}
static int SFX(conv_gemm_run)(const int64_t *f, float **bufs) {
    SFX(conv_gemm)(f, bufs);
    return 1;
}
static int SFX(maxpool_run)(const int64_t *f, float **bufs) {
    SFX(pool_range)(0, f, bufs, 0, f[1]);
    return 1;
}
static int SFX(avgpool_run)(const int64_t *f, float **bufs) {
    SFX(pool_range)(1, f, bufs, 0, f[1]);
    return 1;
}

/* I_CONCAT: out, outer, row, nin, (addr, len, offset) * nin: input i's rows of len floats
 * written at offset in each row of the output */
static int SFX(concat_run)(const int64_t *f, float **bufs) {
    float *o = OM_ADDR(bufs, f[0]);
    long outer = f[1], row = f[2], nin = f[3];
    for (long i = 0; i < nin; i++) {
        const float *x = OM_ADDR(bufs, f[4 + 3 * i]);
        long len = f[5 + 3 * i], off = f[6 + 3 * i];
        for (long r = 0; r < outer; r++)
            memcpy(o + r * row + off, x + r * len, len * sizeof(float));
    }
    return 1;
}

/* I_COPY: src, dst, shape[6], sstride[6]  (dst contiguous) */
static int SFX(copy_run)(const int64_t *f, float **bufs) {
    const float *s = OM_ADDR(bufs, f[0]);
    float *dd = OM_ADDR(bufs, f[1]);
    const int64_t *sh = f + 2, *st = f + 8;
    for (long a = 0; a < sh[0]; a++)
     for (long b = 0; b < sh[1]; b++)
      for (long c = 0; c < sh[2]; c++)
       for (long e2 = 0; e2 < sh[3]; e2++)
        for (long g = 0; g < sh[4]; g++) {
            const float *p = s + a * st[0] + b * st[1] + c * st[2] + e2 * st[3] + g * st[4];
            if (st[5] == 1) { memcpy(dd, p, sh[5] * sizeof(float)); dd += sh[5]; }
            else for (long h = 0; h < sh[5]; h++) *dd++ = p[h * st[5]];
        }
    return 1;
}

static int SFX(gather_run)(const int64_t *f, float **bufs) { return SFX(gather)(f, bufs); }
static int SFX(lstm_run)(const int64_t *f, float **bufs) { SFX(rnn)(I_LSTM, f, bufs); return 1; }
static int SFX(gru_run)(const int64_t *f, float **bufs) { SFX(rnn)(I_GRU, f, bufs); return 1; }
/* I_FAIL: the plan names the node (plan.py); the run stops here */
static int SFX(fail_run)(const int64_t *f, float **bufs) { (void)f; (void)bufs; return 0; }

/* -- the entries: run, split, range, prep (NULL: none) -- */
static const om_kind SFX(kind_gemm) = {SFX(gemm_run), SFX(gemm_split), SFX(gemm_range), 0};
static const om_kind SFX(kind_vm) = {SFX(vm_run), SFX(vm_split), SFX(vm_part), 0};
static const om_kind SFX(kind_softmax) = {SFX(softmax_run), SFX(softmax_split),
                                          SFX(softmax_part), 0};
static const om_kind SFX(kind_layernorm) = {SFX(layernorm_run), SFX(layernorm_split),
                                            SFX(layernorm_part), 0};
static const om_kind SFX(kind_attn) = {SFX(attn_run), SFX(attn_split), SFX(attn_part), 0};
static const om_kind SFX(kind_maxpool) = {SFX(maxpool_run), SFX(pool_split),
                                          SFX(maxpool_part), 0};
static const om_kind SFX(kind_avgpool) = {SFX(avgpool_run), SFX(pool_split),
                                          SFX(avgpool_part), 0};
static const om_kind SFX(kind_copy) = {SFX(copy_run), 0, 0, 0};
static const om_kind SFX(kind_bmm) = {SFX(bmm_run), SFX(bmm_split), SFX(bmm_part),
                                      SFX(bmm_prep)};
static const om_kind SFX(kind_conv_direct) = {SFX(conv_direct_run), SFX(conv_direct_split),
                                              SFX(conv_direct_part), 0};
static const om_kind SFX(kind_conv1x1) = {SFX(conv1x1_run), SFX(conv1x1_split),
                                          SFX(conv1x1_part), 0};
static const om_kind SFX(kind_mean_rows) = {SFX(mean_rows_run), SFX(mean_rows_split),
                                            SFX(mean_rows_part), 0};
static const om_kind SFX(kind_concat) = {SFX(concat_run), 0, 0, 0};
static const om_kind SFX(kind_conv_lanes) = {SFX(conv_lanes_run), SFX(conv_lanes_split),
                                             SFX(conv_lanes_part), 0};
static const om_kind SFX(kind_conv_gemm) = {SFX(conv_gemm_run), 0, 0, 0};
static const om_kind SFX(kind_gather) = {SFX(gather_run), 0, 0, 0};
static const om_kind SFX(kind_attn_mask) = {SFX(attn_mask_run), SFX(attn_split),
                                            SFX(attn_mask_part), 0};
static const om_kind SFX(kind_lstm) = {SFX(lstm_run), 0, 0, 0};
static const om_kind SFX(kind_gru) = {SFX(gru_run), 0, 0, 0};
static const om_kind SFX(kind_fail) = {SFX(fail_run), 0, 0, 0};

/* the table, by opcode: every kind of instructions.py (OM_KINDS), an entry each */
#define OM_KIND_ENTRY(OP, key) [OP] = &SFX(kind_##key),
static const om_kind *const SFX(kinds)[OM_OPCODE_LIMIT] = {OM_KINDS(OM_KIND_ENTRY)};
#undef OM_KIND_ENTRY
