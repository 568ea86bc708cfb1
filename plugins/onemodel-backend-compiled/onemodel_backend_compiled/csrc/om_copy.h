/* One kernel copy: om_kernels.h under the copy's ISA, then its descriptor. Included by native.c
 * once per copy, with these defined before (and undefined here after):
 *   SFX(name)        the copy's names (name##_<copy>)
 *   OM_COPY_NAME     its name, a string ("avx2"): _native.use(), isa(), copies(), kernels()
 *   OM_LANES         float32 lanes of its vectors (4, 8 or 16): copies() and platform.py
 *   OM_COPY_BELOW    the descriptor of the copy whose entries fill the ones this copy leaves
 *                    NULL, e.g. &copy_desc_generic (0: none, the bottom copy)
 *   OM_COPY_CPU      a C expression, true when this CPU runs the copy (__builtin_cpu_supports)
 *   OM_COPY_AUTO     1: may be chosen at import; 0: a test copy, only by use() / the env var
 *   OM_COPY_TARGET   optional: the target attribute string ("avx2,fma"); none: baseline ISA
 * plus whatever the copy's kernels read (OM_VEC_MINMAX, OM_LANES16). The CPU check is compiled
 * outside the target, so testing for the ISA never needs it. */
#define OM_PRAGMA_(x) _Pragma(#x)
#define OM_PRAGMA(x) OM_PRAGMA_(x)

#ifdef OM_COPY_TARGET
#if defined(__clang__)
OM_PRAGMA(clang attribute push(__attribute__((target(OM_COPY_TARGET))), apply_to = function))
#else
OM_PRAGMA(GCC push_options)
OM_PRAGMA(GCC target(OM_COPY_TARGET))
#endif
#endif

#include "om_kernels.h"

#ifdef OM_COPY_TARGET
#if defined(__clang__)
OM_PRAGMA(clang attribute pop)
#else
OM_PRAGMA(GCC pop_options)
#endif
#endif

static int SFX(cpu_runs)(void) { return OM_COPY_CPU; }
static const om_copy SFX(copy_desc) = {OM_COPY_NAME, OM_LANES, SFX(kinds), SFX(cpu_runs),
                                       OM_COPY_BELOW, OM_COPY_AUTO};

#undef OM_PRAGMA
#undef OM_PRAGMA_
#undef SFX
#undef OM_COPY_NAME
#undef OM_LANES
#undef OM_COPY_BELOW
#undef OM_COPY_CPU
#undef OM_COPY_AUTO
#undef OM_COPY_TARGET
#undef OM_VEC_MINMAX
#undef OM_LANES16
#undef OM_CL_RMAX
