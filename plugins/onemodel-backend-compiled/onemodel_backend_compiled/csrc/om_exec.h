/* The executor and the split driver, compiled once (baseline ISA): they reach the kernels only
 * through the active kind table (om_kind.h) that native.c assembles at import, so a copy's
 * kernels run under that copy's ISA while this loop stays portable. */
#ifndef OM_EXEC_H
#define OM_EXEC_H
#include "om_kind.h"
#include "om_pool.h"
#include "om_program.h"

/* Splitting pays only for enough work. Measured (tools/threads.py handoff, 2 free cores):
 * splitting each of deep100's 64x64x64 GEMMs at batch 64 (5 us each) in two made the run
 * 524 -> 887 us, 3.6 us a split net, mostly the layer's output moving between the cores'
 * caches; a worker asleep (between runs) adds its wake-up, tens of microseconds in this VM. A
 * part gets at least OM_SPLIT_MIN_WORK of work (FLOP-equivalents, the GEMM's 2 M K N; 1e6 is
 * about 9 us of GEMM at the 110 GFLOP/s of one AVX2 core); work below twice that runs on the
 * calling thread. 1e6, 2e6 and 4e6 measured alike on mlp and branches8 at b64 (within the
 * shared machine's noise). */
#define OM_SPLIT_MIN_WORK 1.0e6
static double om_split_min_work = OM_SPLIT_MIN_WORK;  /* _native.split_min_work (tests) */
#define OM_SPLIT_PARTS_PER_THREAD 4  /* spare parts: a thread descheduled for a while is
                                        caught up by the others */

typedef struct {
    const om_kind *k; const int64_t *f; float **bufs; int mode, worker_scratch;
    long items, nparts; om_pool *pool;
} om_job_t;

static void om_job_part(void *ctx, long part, int tid) {
    om_job_t *j = (om_job_t *)ctx;
    long lo = part * j->items / j->nparts, hi = (part + 1) * j->items / j->nparts;
    float *scr = tid > 0 && j->worker_scratch ? om_pool_scratch(j->pool, tid) : 0;
    j->k->range(j->f, j->bufs, j->mode, lo, hi, scr);
}

/* run the instruction on the pool when it splits and its work pays for the hand-offs; 0 when
 * it is left to the kind's one-thread run */
static int om_try_split(const om_kind *k, const int64_t *f, float **bufs, om_pool *pool) {
    om_split_t s = {0, 0.0, 0, 0};
    int threads = pool->threads;
    if (!k->split || !k->range || !k->split(f, threads, &s)) return 0;
    double cap = om_split_min_work > 0 ? s.work / om_split_min_work : 1e18;
    long nparts = (long)threads * OM_SPLIT_PARTS_PER_THREAD;
    if (cap < nparts) nparts = (long)cap;
    if (s.items < nparts) nparts = s.items;
    if (nparts < 2) return 0;
    if (s.scratch > 0 && !om_pool_reserve(pool, s.scratch)) return 0;
    if (!om_pool_start(pool)) return 0;
    if (k->prep) k->prep(f, bufs);
    om_job_t job = {k, f, bufs, s.mode, s.scratch > 0, s.items, nparts, pool};
    om_pool_run(pool, nparts, om_job_part, &job);
    return 1;
}

/* -1, or the index of the instruction that failed: an opcode out of the table or without an
 * entry, a malformed length, or a kind that refused its fields (I_FAIL always does). table:
 * OM_OPCODE_LIMIT entries; pool: the run's intra-op threads (NULL: this thread only) */
static long om_execute(const om_kind *table, const int64_t *prog, long n, float **bufs,
                       om_pool *pool) {
    long pc = 0, idx = 0;
    while (pc < n) {
        const int64_t *I = prog + pc;
        int64_t op = I[0], len = I[1];
        if (len < 2 || pc + len > n) return idx;
        if (op < 0 || op >= OM_OPCODE_LIMIT || !table[op].run) return idx;
        const om_kind *k = &table[op];
        const int64_t *f = I + 2;
        if (!(pool && om_try_split(k, f, bufs, pool)) && !k->run(f, bufs)) return idx;
        pc += len;
        idx++;
    }
    return -1;
}
#endif
