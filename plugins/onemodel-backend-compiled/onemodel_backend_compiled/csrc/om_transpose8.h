/* An 8x8 transpose of floats in registers (r[i][j] -> r[j][i]) in three rounds of two-operand
 * shuffles: how the small-map depthwise kernel turns 8 channels' rows of 8 positions into 8
 * positions' vectors of 8 channels and back, instead of 64 scalar moves each way. Included by
 * om_kernels.h (one copy per kernel set). */
typedef int32_t SFX(t8) __attribute__((vector_size(32)));
#ifdef __clang__
#define OM_SHUF2(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define OM_SHUF2(a, b, ...) __builtin_shuffle(a, b, (SFX(t8)){__VA_ARGS__})
#endif

static inline void SFX(transpose8)(V8 *r) {
    V8 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {  /* pairs of rows interleaved within each 128-bit half */
        t[i] = OM_SHUF2(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = OM_SHUF2(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int i = 0; i < 8; i += 4)    /* then pairs of pairs */
        for (int j = 0; j < 2; j++) {
            u[i + 2 * j] = OM_SHUF2(t[i + j], t[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            u[i + 2 * j + 1] = OM_SHUF2(t[i + j], t[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    for (int j = 0; j < 4; j++) {     /* then the halves: column j and column j + 4 */
        r[j] = OM_SHUF2(u[j], u[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[j + 4] = OM_SHUF2(u[j], u[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}
#undef OM_SHUF2
