/* The pointwise VM: a chain of ops over blocks of VM_BLK elements (included by om_kernels.h,
 * once per kernel copy).
 *
 * I_VM loops over a 4-d iteration space (om_split's fields: shape[4], the output's and each
 * input's strides). Its elements are taken in order, the innermost dimension's rows one after
 * the other, VM_BLK at a time: a block is up to VM_BLK consecutive elements and may hold the end
 * of one row and the start of the next (a 7x7 map's rows of 49, or 16 rows of a 2x2 map, fill
 * whole blocks). Each block is a list of segments, one per row it touches; an input whose
 * segments chain into one run at its innermost stride (a contiguous input over rows that
 * follow in memory) is read as that run, else segment by segment:
 *   - stride 1 in one run: no copy, the ops read the input's memory;
 *   - stride 0 (a value broadcast along the row: a bias, a scale, a mean per channel): one splat
 *     a segment, not a load an element;
 *   - any other stride: a gather.
 * The last op writes straight into the output when the output is one contiguous run, else
 * into a register that is stored segment by segment.
 *
 * Every op computes an element from the same operands by the same formula wherever it lies in a
 * block (the 8- and 16-lane forms and their 1-7 element tails agree bit for bit, om_vmath.h's
 * padded tails), so the result does not depend on how the elements fall into blocks, nor on the
 * split over threads (items: blocks; om_split.h). */
#include "om_masks.h"
#include "om_vmath.h"

#define VM_BLK 1024  /* elements a block at most (4 KB a register) */
#define VM_MAXSEG 64  /* segments a block at most: a block of shorter rows ends sooner */
#ifndef OM_VM_SEGS_T
#define OM_VM_SEGS_T
/* a block's segments: their lengths, and per input (the output last) each one's first element
 * (an offset in floats from the buffer's base) and whether they are one run (an operand whose
 * rows follow each other in memory, or a block within one row; off[j][0] alone then) */
typedef struct {
    long n, nseg;
    long len[VM_MAXSEG];
    long off[VM_MAXIN + 1][VM_MAXSEG];
    int run[VM_MAXIN + 1];
} om_vm_segs;
enum { VM_VEC, VM_SPLAT, VM_SEGS };  /* what a register holds (vm_block) */
#endif

/* rd = f(ra): 8 lanes at a time (VEC, of the V8 v), the scalar formula (SCALAR, of i) for the
 * rest; GCC does not vectorise the scalar exp (its float-to-int rounding), so the transcendental
 * ops take the 8-lane forms */
#undef OM_VM_WIDE_START
#ifdef OM_LANES16  /* exp, tanh, sigmoid, GELU-tanh, swish: a 16-lane prefix first (om_wide.h) */
#define OM_VM_WIDE_START SFX(vm_wide)(opc, ra, rd, n)
#else
#define OM_VM_WIDE_START 0
#endif
#define OM_VM_UNARY8(VEC, SCALAR) do { long i = OM_VM_WIDE_START; \
    for (; i + 8 <= n; i += 8) { V8 v = SFX(ld8)(ra + i); SFX(st8)(rd + i, VEC); } \
    for (; i < n; i++) rd[i] = SCALAR; } while (0)
/* the same for rd = f(ra, rb) (u of ra, v of rb): GCC leaves om_max's branches scalar */
#define OM_VM_BINARY8(VEC, SCALAR) do { long i = 0; \
    for (; i + 8 <= n; i += 8) { V8 u = SFX(ld8)(ra + i), v = SFX(ld8)(rb + i); \
                                 SFX(st8)(rd + i, VEC); } \
    for (; i < n; i++) rd[i] = SCALAR; } while (0)

/* A register holds a vector of the block's n values (VM_VEC: at cur[r]), one value for all of
 * them (VM_SPLAT: sv[r]; a broadcast input, a constant) or one value a segment (VM_SEGS: at
 * reg + r * VM_BLK, segment k's at [k]; an input broadcast along rows that change within the
 * block). An add, subtract, multiply or divide reads a splat's value in a vector register;
 * the other ops get the splats they read filled first (OM_VM_FILL). */
#define OM_VM_FILL(r) do { float *f_ = reg + (r) * VM_BLK; \
    if (kind[r] == VM_SPLAT) { float v_ = sv[r]; for (long i = 0; i < n; i++) f_[i] = v_; } \
    else if (kind[r] == VM_SEGS) { \
        long p_ = n; /* the last segment first: segment k's value at [k] <= its first place */ \
        for (long k = B->nseg - 1; k >= 0; k--) { \
            float v_ = f_[k]; p_ -= B->len[k]; \
            for (long i = 0; i < B->len[k]; i++) f_[p_ + i] = v_; } } \
    cur[r] = f_; kind[r] = VM_VEC; } while (0)
/* each segment k of the block: its value v_ = q_[k], 8 lanes then one at a time (a row of 49 is
 * short: no loop versions, no alignment peeling) */
#define OM_VM_SEGLOOP(VEC, SCALAR) do { \
    for (long k = 0; k < B->nseg; k++) { \
        float v_ = q_[k]; long i = p_, e_ = p_ + B->len[k]; \
        for (; i + 8 <= e_; i += 8) SFX(st8)(rd + i, VEC); \
        for (; i < e_; i++) rd[i] = SCALAR; \
        p_ = e_; } } while (0)
/* rd = ra OP rb (one rounding: the same bits whatever form an operand has) */
#define OM_VM_ARITH(OP) do { \
    if (kind[a] != VM_VEC && kind[b] != VM_VEC) OM_VM_FILL(a); \
    const float *ra_ = cur[a], *rb_ = cur[b]; \
    if (kind[b] == VM_SPLAT) { \
        float v_ = sv[b]; V8 w_ = SFX(bc)(v_); long i = 0; \
        for (; i + 8 <= n; i += 8) SFX(st8)(rd + i, SFX(ld8)(ra_ + i) OP w_); \
        for (; i < n; i++) rd[i] = ra_[i] OP v_; } \
    else if (kind[a] == VM_SPLAT) { \
        float u_ = sv[a]; V8 w_ = SFX(bc)(u_); long i = 0; \
        for (; i + 8 <= n; i += 8) SFX(st8)(rd + i, w_ OP SFX(ld8)(rb_ + i)); \
        for (; i < n; i++) rd[i] = u_ OP rb_[i]; } \
    else if (kind[b] == VM_SEGS || kind[a] == VM_SEGS) { \
        int sb_ = kind[b] == VM_SEGS; \
        const float *q_ = reg + (sb_ ? b : a) * VM_BLK, *x_ = sb_ ? ra_ : rb_; \
        if (q_ == rd) { memcpy(segv, q_, B->nseg * sizeof(float)); q_ = segv; } \
        long p_ = 0; \
        if (sb_) OM_VM_SEGLOOP(SFX(ld8)(x_ + i) OP SFX(bc)(v_), x_[i] OP v_); \
        else OM_VM_SEGLOOP(SFX(bc)(v_) OP SFX(ld8)(x_ + i), v_ OP x_[i]); } \
    else for (long i = 0; i < n; i++) rd[i] = ra_[i] OP rb_[i]; } while (0)

/* input a's elements of the block into rd (n floats), s floats apart along a row */
static inline void SFX(vm_gather)(float *rd, const float *p0, const om_vm_segs *B, int a, long s) {
    long pos = 0, nseg = B->run[a] ? 1 : B->nseg;  /* a run: one segment of n */
    for (long k = 0; k < nseg; k++) {
        const float *p = p0 + B->off[a][k];
        long len = B->run[a] ? B->n : B->len[k];
        float *r = rd + pos;
        if (s == 1) memcpy(r, p, len * sizeof(float));
        else if (s == 0) { float v = p[0]; for (long i = 0; i < len; i++) r[i] = v; }
        else for (long i = 0; i < len; i++) r[i] = p[i * s];
        pos += len;
    }
}

/* one block: base[i] the inputs' buffers, istr[i] their innermost strides (floats), out / ostr
 * the output's. noinline: out of its callers, as conv_direct (the same reason) */
static __attribute__((noinline)) void SFX(vm_block)(const int64_t *code, long ncode,
                                                     const float *consts, float *reg,
                                                     float *const *base, const long *istr,
                                                     const om_vm_segs *B, float *out,
                                                     long ostr, int nin) {
    const float *cur[VM_MAXREG];  /* where each register's values are: reg, or an input's run */
    for (int r = 0; r < VM_MAXREG; r++) cur[r] = reg + r * VM_BLK;
    float sv[VM_MAXREG], segv[VM_MAXSEG];  /* splats' values; a copy of a VM_SEGS register's */
    unsigned char kind[VM_MAXREG];
    memset(kind, VM_VEC, sizeof kind);
    long n = B->n;
    int direct = B->run[nin] && ostr == 1;  /* the last op writes the output itself */
    float *o0 = out + B->off[nin][0];
    int last = 0;
    for (long pc = 0; pc < ncode; pc++) {
        const int64_t *c = code + 4 * pc;
        int opc = (int)c[0], d = (int)c[1], a = (int)c[2], b = (int)c[3];
        float *rd = direct && pc == ncode - 1 ? o0 : reg + d * VM_BLK;
        last = d;
        int end = pc == ncode - 1;  /* the last op writes rd (the output when direct) */
        if (opc == VM_LOAD) {
            const float *p = base[a] + B->off[a][0];
            long s = istr[a];
            kind[d] = VM_VEC;
            if (B->run[a] && s == 1) { cur[d] = p; continue; }  /* read in place */
            if (s == 0 && !end) {
                if (B->run[a]) { sv[d] = p[0]; kind[d] = VM_SPLAT; continue; }
                float *q = reg + d * VM_BLK;
                for (long k = 0; k < B->nseg; k++) q[k] = base[a][B->off[a][k]];
                kind[d] = VM_SEGS;
                continue;
            }
            SFX(vm_gather)(rd, base[a], B, a, s);
            cur[d] = rd;
            continue;
        }
        if (opc == VM_CONST && !end) { sv[d] = consts[a]; kind[d] = VM_SPLAT; continue; }
        int arith = opc == VM_ADD || opc == VM_SUB || opc == VM_MUL || opc == VM_DIV;
        if (!arith) {  /* the other ops read vectors: fill the splats they read */
            if (kind[a] != VM_VEC) OM_VM_FILL(a);
            if (kind[b] != VM_VEC) OM_VM_FILL(b);
            if (kind[d] != VM_VEC) OM_VM_FILL(d);  /* where's condition */
        }
        const float *ra = cur[a], *rb = cur[b], *rc = cur[d];  /* rc: where's condition */
        switch (opc) {
        case VM_CONST: { float v = consts[a]; for (long i = 0; i < n; i++) rd[i] = v; break; }
        case VM_ADD: OM_VM_ARITH(+); break;
        case VM_SUB: OM_VM_ARITH(-); break;
        case VM_MUL: OM_VM_ARITH(*); break;
        case VM_DIV: OM_VM_ARITH(/); break;
        case VM_MAX: OM_VM_BINARY8(SFX(max8)(u, v), om_max(ra[i], rb[i])); break;
        case VM_MIN: OM_VM_BINARY8(SFX(min8)(u, v), om_min(ra[i], rb[i])); break;
        case VM_POW: for (long i = 0; i < n; i++) rd[i] = powf(ra[i], rb[i]); break;
        case VM_NEG: for (long i = 0; i < n; i++) rd[i] = -ra[i]; break;
        case VM_ABS: for (long i = 0; i < n; i++) rd[i] = fabsf(ra[i]); break;
        case VM_EXP: OM_VM_UNARY8(SFX(exp8)(v), om_exp(ra[i])); break;
        case VM_LOG: for (long i = 0; i < n; i++) rd[i] = logf(ra[i]); break;
        case VM_SQRT: for (long i = 0; i < n; i++) rd[i] = sqrtf(ra[i]); break;
        case VM_TANH: OM_VM_UNARY8(SFX(tanh8)(v), om_tanh(ra[i])); break;
        case VM_SIGMOID: OM_VM_UNARY8(SFX(sigmoid8)(v), om_sigmoid(ra[i])); break;
        case VM_RELU: for (long i = 0; i < n; i++) rd[i] = om_relu(ra[i]); break;
        case VM_ERF: for (long i = 0; i < n; i++) rd[i] = om_erf(ra[i]); break;
        case VM_GELU: for (long i = 0; i < n; i++) rd[i] = om_gelu(ra[i]); break;
        case VM_GELU_TANH: OM_VM_UNARY8(SFX(gelu_tanh8)(v), om_gelu_tanh(ra[i])); break;
        case VM_SQUARE: for (long i = 0; i < n; i++) rd[i] = ra[i] * ra[i]; break;
        case VM_RECIP: for (long i = 0; i < n; i++) rd[i] = 1.0f / ra[i]; break;
        case VM_SWISH: OM_VM_UNARY8(v * SFX(sigmoid8)(v), ra[i] * om_sigmoid(ra[i])); break;
        case VM_COPY: memmove(rd, ra, n * sizeof(float)); break;
        OM_VM_MASK_CASES
        OM_VM_MATH_CASES
        default: break;
        }
        cur[d] = rd;
        kind[d] = VM_VEC;
    }
    if (kind[last] != VM_VEC) OM_VM_FILL(last);
    const float *res = cur[last];
    if (res == o0 && direct) return;
    if (B->run[nin]) {
        if (ostr == 1) memmove(o0, res, n * sizeof(float));
        else for (long i = 0; i < n; i++) o0[i * ostr] = res[i];
        return;
    }
    long pos = 0;
    for (long k = 0; k < B->nseg; k++) {
        float *o = out + B->off[nin][k];
        long len = B->len[k];
        if (ostr == 1) memcpy(o, res + pos, len * sizeof(float));
        else for (long i = 0; i < len; i++) o[i * ostr] = res[pos + i];
        pos += len;
    }
}

#include "om_vm_scale.h"
/* I_VM, blocks [lo, hi) of the elements in order (VM_BLK each, the last one short): nin,
 * shape[4], out, ostr[4], (addr, str[4]) * nin, ncode, code*4, nconst, consts */
static void SFX(vm_range)(const int64_t *f, float **bufs, long lo, long hi) {
    float reg[VM_MAXREG * VM_BLK];
    om_vm_segs B;
    long nin = f[0];
    const int64_t *shape = f + 1;
    float *out = OM_ADDR(bufs, f[5]);
    const int64_t *ostr = f + 6;
    const int64_t *ins = f + 10;
    long ncode = ins[5 * nin];
    const int64_t *code = ins + 5 * nin + 1;
    long nconst = code[4 * ncode];
    float consts[VM_MAXCONST];
    for (long i = 0; i < nconst && i < VM_MAXCONST; i++) {
        double dv; memcpy(&dv, code + 4 * ncode + 1 + i, 8); consts[i] = (float)dv;
    }
    float *base[VM_MAXIN];
    long istr[VM_MAXIN + 1], st[VM_MAXIN + 1][3];  /* strides in floats; the output last */
    long wide[VM_MAXIN];  /* floats per element: 2 for an int64 input (one VM_LOADI64 reads) */
    for (long i = 0; i < nin; i++) wide[i] = 1;
    for (long i = 0; i < ncode; i++)
        if (code[4 * i] == VM_LOADI64 && code[4 * i + 2] >= 0 && code[4 * i + 2] < nin) wide[code[4 * i + 2]] = 2;
    for (long i = 0; i <= nin; i++) {
        const int64_t *s = i < nin ? ins + 5 * i + 1 : ostr;
        long w = i < nin ? wide[i] : 1;
        for (int k = 0; k < 3; k++) st[i][k] = s[k] * w;
        istr[i] = s[3] * w;
        if (i < nin) base[i] = OM_ADDR(bufs, ins[5 * i]);
    }
    long W = shape[3], total = shape[0] * shape[1] * shape[2] * W;
    if (W <= 0 || total <= 0) return;
    long e = lo * VM_BLK, end = hi * VM_BLK < total ? hi * VM_BLK : total;
    if (e >= end) return;
    int first, sc = SFX(vm_scale_form)(code, ncode, nin, istr, ostr, &first);
    if (sc >= 0) {  /* x * (one factor a row): om_vm_scale.h */
        SFX(vm_scale_range)(shape, out, ostr, base, ins, sc, first, e, end);
        return;
    }
    /* an operand whose rows follow each other in memory (each W * its stride after the last)
     * has element e at e * stride: one run in any block. The others ("nf") get their offset
     * per segment, from a cursor over the rows: row r = (i0, i1, i2), column c. */
    long nf[VM_MAXIN + 1], nnf = 0;
    for (long j = 0; j <= nin; j++) {
        long step = W * istr[j];
        int flat = (shape[2] == 1 || st[j][2] == step)
                   && (shape[1] == 1 || st[j][1] - (shape[2] - 1) * st[j][2] == step)
                   && (shape[0] == 1 || st[j][0] - (shape[1] - 1) * st[j][1]
                                        - (shape[2] - 1) * st[j][2] == step);
        if (!flat) nf[nnf++] = j;
        B.run[j] = 1;
    }
    long r = e / W, c = e % W;
    long i2 = r % shape[2], i1 = r / shape[2] % shape[1], i0 = r / shape[2] / shape[1];
    long roff[VM_MAXIN + 1];
    for (long q = 0; q < nnf; q++) {
        long j = nf[q];
        roff[j] = i0 * st[j][0] + i1 * st[j][1] + i2 * st[j][2];
    }
    while (e < end) {
        long n = end - e < VM_BLK ? end - e : VM_BLK, got = 0, k = 0;
        for (long j = 0; j <= nin; j++) B.off[j][0] = e * istr[j];  /* the flat ones' */
        while (got < n && k < VM_MAXSEG) {
            long len = W - c < n - got ? W - c : n - got;
            B.len[k] = len;
            for (long q = 0; q < nnf; q++) B.off[nf[q]][k] = roff[nf[q]] + c * istr[nf[q]];
            got += len; c += len; k++;
            if (c == W) {  /* the next row */
                c = 0;
                for (long q = 0; q < nnf; q++) roff[nf[q]] += st[nf[q]][2];
                if (++i2 == shape[2]) {
                    i2 = 0;
                    for (long q = 0; q < nnf; q++) {
                        long j = nf[q];
                        roff[j] += st[j][1] - shape[2] * st[j][2];
                    }
                    if (++i1 == shape[1]) {
                        i1 = 0;
                        for (long q = 0; q < nnf; q++) {
                            long j = nf[q];
                            roff[j] += st[j][0] - shape[1] * st[j][1];
                        }
                    }
                }
            }
        }
        B.n = got;
        B.nseg = k;
        for (long q = 0; q < nnf; q++) B.run[nf[q]] = k == 1;  /* one row: one run */
        e += got;
        SFX(vm_block)(code, ncode, consts, reg, base, istr, &B, out, istr[nin], (int)nin);
    }
}

static long SFX(vm_items)(const int64_t *f) {
    return (f[1] * f[2] * f[3] * f[4] + VM_BLK - 1) / VM_BLK;
}

/* the VM's work per element: a transcendental op (exp, tanh, erf, ...) costs about 1 ns an
 * element, ten times a load, add or multiply (8 lanes), ~110 GFLOP/s being 0.009 ns a unit */
static double SFX(vm_cost)(const int64_t *f) {
    long nin = f[0], ncode = f[10 + 5 * nin];
    const int64_t *code = f + 10 + 5 * nin + 1;
    double c = 10.0;  /* the store */
    for (long i = 0; i < ncode; i++) {
        switch ((int)code[4 * i]) {
        case VM_EXP: case VM_LOG: case VM_POW: case VM_TANH: case VM_SIGMOID: case VM_ERF:
        case VM_GELU: case VM_GELU_TANH: case VM_SWISH: case VM_SQRT:
        case VM_SIN: case VM_COS: case VM_TAN: case VM_ASIN: case VM_ACOS: case VM_ATAN:
        case VM_ATAN2: case VM_LOG1P: case VM_EXPM1: case VM_FMOD: case VM_REMAINDER:
        case VM_FLOORDIV: c += 100.0; break;
        default: c += 10.0; break;
        }
    }
    return c;
}
