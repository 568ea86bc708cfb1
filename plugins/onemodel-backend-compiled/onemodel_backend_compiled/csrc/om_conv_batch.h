/* The direct convolution's helpers for many channels and images (included by om_kernels.h
 * after the direct kernel's tiles, once per kernel copy).
 *
 * compact_rows: a channel's results leave the padded-width buffer (rows of Wp) for the output
 * (rows of Wo). One memcpy per row of 15 floats was a fifth of a 1x1 16->64 convolution on
 * 15x15 (960 calls an image); rows move 8 floats at a time instead, each row's last vector
 * spilling into the next row (written after it), and a map whose rows are not padded (Wp ==
 * Wo: 1x1 kernels, no column padding) is one copy. */

/* Ho rows of Wo floats at stride Wp in src into o (rows of Wo). src has 7 readable floats past
 * its last row's end (the tile buffer's slack). A row's last partial vector is stored whole
 * only where 8 floats fit before the end of what may be written (the map, then the ``after``
 * floats that follow it, written later), else float by float: on maps under 8 wide a whole
 * vector of a row before the last can reach past the map's end. */
static void SFX(compact_rows)(const float *src, long Wp, long Ho, long Wo, float *o,
                              long after) {
    if (Wp == Wo) {
        memcpy(o, src, Ho * Wo * sizeof(float));
        return;
    }
    for (long i = 0; i < Ho; i++) {
        const float *s = src + i * Wp;
        float *d = o + i * Wo;
        long j = 0;
        for (; j + 8 <= Wo; j += 8) SFX(st8)(d + j, SFX(ld8)(s + j));
        if (j == Wo) continue;
        if ((Ho - i) * Wo - j + after >= 8) SFX(st8)(d + j, SFX(ld8)(s + j));
        else for (; j < Wo; j++) d[j] = s[j];
    }
}
