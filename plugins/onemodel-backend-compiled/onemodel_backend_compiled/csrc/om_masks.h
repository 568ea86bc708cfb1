/* Text models' glue in native code (included by om_kernels.h once per kernel copy): the VM's
 * mask ops and the row gather of embeddings.
 *
 * Bools are float32 0.0 / 1.0 (numpy's bool -> float promotion), so a comparison, isnan, cast or
 * where is one VM op; NaN compares unequal to everything, as in numpy. Int64 values (token ids,
 * an int mask) are read by VM_LOADI64 and by the gather's indices, at their own 8-byte elements
 * (vm_range counts an int64 input's strides in floats, two per element). */

/* the VM's mask ops, spliced into vm_block's switch (rd: the destination; ra, rb: the operands,
 * rc: where's condition, the destination register's values before; n: lanes) */
#define OM_VM_MASK_CASES \
    case VM_LOADI64: { /* segment by segment (om_vm.h's block) */ \
        long s = istr[a], pos = 0, nseg = B->run[a] ? 1 : B->nseg; \
        for (long k = 0; k < nseg; k++) { \
            const float *p = base[a] + B->off[a][k]; \
            long len = B->run[a] ? B->n : B->len[k]; \
            for (long i = 0; i < len; i++) { \
                int64_t v; memcpy(&v, p + i * s, 8); rd[pos + i] = (float)v; } \
            pos += len; } \
        break; } \
    case VM_ISNAN: for (long i = 0; i < n; i++) rd[i] = ra[i] != ra[i] ? 1.0f : 0.0f; break; \
    case VM_WHERE: for (long i = 0; i < n; i++) rd[i] = rc[i] != 0.0f ? ra[i] : rb[i]; break; \
    case VM_EQ: for (long i = 0; i < n; i++) rd[i] = ra[i] == rb[i] ? 1.0f : 0.0f; break; \
    case VM_NE: for (long i = 0; i < n; i++) rd[i] = ra[i] != rb[i] ? 1.0f : 0.0f; break; \
    case VM_LT: for (long i = 0; i < n; i++) rd[i] = ra[i] < rb[i] ? 1.0f : 0.0f; break; \
    case VM_LE: for (long i = 0; i < n; i++) rd[i] = ra[i] <= rb[i] ? 1.0f : 0.0f; break;

/* I_GATHER: x, outer, n, inner, idx, nidx, out, negative. out[o][i][:] = x[o][idx[i]][:] (rows
 * of inner floats; with negative 1, indices from -n count from the end as numpy's take, with 0
 * they must be in [0, n) as torch's embedding). Every index is checked before anything is
 * written: 0 when one is out of range (the plan re-runs the segment on numpy to name the node). */
static int SFX(gather)(const int64_t *f, float **bufs) {
    const float *x = OM_ADDR(bufs, f[0]);
    long outer = f[1], n = f[2], inner = f[3], nidx = f[5], lo = f[7] ? -n : 0;
    const int64_t *ip = OM_PTR(const int64_t, bufs, f[4]);
    float *o = OM_ADDR(bufs, f[6]);
    for (long i = 0; i < nidx; i++) {
        int64_t k; memcpy(&k, ip + i, 8);
        if (k < lo || k >= n) return 0;
    }
    for (long a = 0; a < outer; a++)
        for (long i = 0; i < nidx; i++) {
            int64_t k; memcpy(&k, ip + i, 8);
            if (k < 0) k += n;
            const float *src = x + (a * n + k) * inner;
            float *dst = o + (a * nidx + i) * inner;
            if (inner == 1) *dst = *src;
            else memcpy(dst, src, inner * sizeof(float));
        }
    return 1;
}

/* I_ATTN_MASK's step between the scores and their softmax, as the numpy kernel: S = S * scale,
 * then plus the float mask, or -inf where the bool mask (0.0 / 1.0) is false. mask[i][j] at
 * i * mr + j * mc (0 strides broadcast). */
static void SFX(attn_mask)(float *S, long sq, long sk, float scale, const float *mask, long mr,
                           long mc, int is_bool) {
    for (long i = 0; i < sq; i++) {
        float *si = S + i * sk;
        const float *mi = mask + i * mr;
        if (is_bool)
            for (long j = 0; j < sk; j++) si[j] = mi[j * mc] != 0.0f ? si[j] * scale : -INFINITY;
        else
            for (long j = 0; j < sk; j++) si[j] = si[j] * scale + mi[j * mc];
    }
}
