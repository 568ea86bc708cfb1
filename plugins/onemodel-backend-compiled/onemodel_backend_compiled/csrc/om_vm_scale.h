/* The VM program x * s with s one value a row (stride 0 in the innermost dimension) and x and
 * the output contiguous rows: the squeeze-and-excitation block's scale of every channel of a
 * map by its own factor (MobileNetV3, EfficientNet). A row is one multiply of 8 lanes at a
 * time, the same single rounding of the same operands in the same order as the general loop
 * (the same bits). The general loop (om_vm.h) now reads x in place and s as one value a row
 * too, 2-4x faster than before on every broadcast, but its blocks' bookkeeping still measured
 * 1.1-1.4x this loop's time on EfficientNet's SE shapes (2-core Zen 3, load 5): this stays
 * until it does not. Included by om_vm.h before vm_range, which calls these. */

/* which input is the row's factor when the program is LOAD, LOAD, MUL of two float inputs
 * with the output and the other input contiguous in the innermost dimension; -1: another
 * program. *first: the factor is the multiply's left operand. */
static int SFX(vm_scale_form)(const int64_t *code, long ncode, long nin, const long *istr,
                              const int64_t *ostr, int *first) {
    if (nin != 2 || ncode != 3 || code[0] != VM_LOAD || code[4] != VM_LOAD
        || code[8] != VM_MUL || ostr[3] != 1)
        return -1;
    long d0 = code[1], a0 = code[2], d1 = code[5], a1 = code[6], ra = code[10], rb = code[11];
    if (d0 == d1 || a0 == a1 || a0 < 0 || a0 > 1 || a1 < 0 || a1 > 1
        || !((ra == d0 && rb == d1) || (ra == d1 && rb == d0)))
        return -1;
    for (int s = 0; s < 2; s++)
        if (istr[s] == 0 && istr[1 - s] == 1) {
            long reg_s = a0 == s ? d0 : d1;  /* the register the factor was loaded into */
            *first = ra == reg_s;
            return s;
        }
    return -1;
}

/* elements [e, end) of vm_range's order (rows one after the other), for the program
 * vm_scale_form accepted */
static void SFX(vm_scale_range)(const int64_t *shape, float *out, const int64_t *ostr,
                                float *const *base, const int64_t *ins, int sc, int first,
                                long e, long end) {
    const int64_t *ss = ins + 5 * sc, *xs = ins + 5 * (1 - sc);
    long W = shape[3], r = e / W, j = e % W;
    long i2 = r % shape[2], i1 = r / shape[2] % shape[1], i0 = r / shape[2] / shape[1];
    for (; e < end; j = 0) {
        long stop = end - e < W - j ? j + (end - e) : W;
        e += stop - j;
        float s = base[sc][i0 * ss[1] + i1 * ss[2] + i2 * ss[3]];
        const float *x = base[1 - sc] + i0 * xs[1] + i1 * xs[2] + i2 * xs[3];
        float *o = out + i0 * ostr[0] + i1 * ostr[1] + i2 * ostr[2];
        V8 sv = SFX(bc)(s);
        if (first) {
            for (; j + 8 <= stop; j += 8) SFX(st8)(o + j, sv * SFX(ld8)(x + j));
            for (; j < stop; j++) o[j] = s * x[j];
        } else {
            for (; j + 8 <= stop; j += 8) SFX(st8)(o + j, SFX(ld8)(x + j) * sv);
            for (; j < stop; j++) o[j] = x[j] * s;
        }
        if (++i2 == shape[2]) { i2 = 0; if (++i1 == shape[1]) { i1 = 0; i0++; } }
    }
}
