/* The per-kind table's types, shared by every kernel copy and the once-compiled executor.
 *
 * Each kernel copy (om_kernels.h under its SFX) ends with a table indexed by opcode
 * (om_kinds.h); an entry holds the kind's functions. At import native.c assembles the active
 * table per opcode from the best copy the CPU runs that provides the entry, and the executor
 * and the split driver (om_exec.h, compiled once for the baseline ISA) call through it. */
#ifndef OM_KIND_H
#define OM_KIND_H
#include <stdint.h>

/* how an instruction splits over the pool's threads (om_split.h) */
typedef struct {
    long items;      /* independent items (rows, images, heads, ...) */
    double work;     /* the whole instruction's work, FLOP-equivalents */
    long scratch;    /* floats of scratch a part needs on a worker (0: parts share it) */
    int mode;        /* a kind's own choice (GEMM: 0 row tiles, 1 column panels) */
} om_split_t;

typedef struct {
    /* the whole instruction on this thread; 0 fails the run at this instruction */
    int (*run)(const int64_t *f, float **bufs);
    /* how it splits (NULL, or 0 returned: it does not), for this many threads */
    int (*split)(const int64_t *f, int threads, om_split_t *s);
    /* items [lo, hi) of the split; scr: a worker's scratch (NULL: the instruction's own) */
    void (*range)(const int64_t *f, float **bufs, int mode, long lo, long hi, float *scr);
    /* once before the parts, on the calling thread (NULL: nothing; BMM packs a shared B) */
    void (*prep)(const int64_t *f, float **bufs);
} om_kind;

/* a kernel copy (om_copy.h): its table may leave entries NULL, filled from the copy below */
typedef struct om_copy {
    const char *name;
    int lanes;                      /* float32 lanes of its vectors */
    const om_kind *const *kinds;    /* OM_OPCODE_LIMIT entries, NULL: not provided */
    int (*cpu_runs)(void);          /* this CPU runs it */
    const struct om_copy *below;    /* where its NULL entries come from (NULL: none) */
    int automatic;                  /* may be chosen at import (0: a test copy) */
} om_copy;
#endif
