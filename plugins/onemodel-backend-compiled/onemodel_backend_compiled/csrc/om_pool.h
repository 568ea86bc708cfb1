/* A small thread pool for intra-op parallelism in the executor (one per session, see
 * backend.py): threads - 1 workers plus the calling thread, so one run keeps at most `threads`
 * threads busy.
 *
 * A job is `nparts` independent parts, fn(ctx, part, tid) each; the caller publishes it in one
 * 64-bit ticket (generation << 32 | parts not yet claimed) and claims parts like the workers
 * (by compare-and-swap on the ticket, highest part first), then waits for the parts others
 * claimed. A worker reads the job only after it has claimed a part of that generation, so a
 * late worker never sees a half-written next job. Idle workers spin on the ticket for about
 * OM_POOL_SPIN_NS while a run holds the pool (its next split instruction is usually that
 * close), then sleep on a condition variable; the caller signals only when someone sleeps.
 * When the run ends the workers sleep at once: no worker spins between runs, so BLAS in the
 * numpy steps between native segments, or anything else, finds no core taken by a spinner.
 *
 * Only one run uses a pool at a time (om_pool_acquire): a run that finds it busy runs on its
 * own thread. Workers start at the first job, not at creation. After fork() the child has no
 * workers: the pid check in om_pool_acquire resets the pool there (fresh locks, workers started
 * again when needed) and om_pool_free does not join threads of another process.
 * Per-worker scratch (om_pool_reserve/om_pool_scratch) is grown by the caller before a job,
 * never by a worker; tid 0 (the caller) uses the instruction's own scratch. */
#ifndef OM_POOL_H
#define OM_POOL_H
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define OM_POOL_MAX 64
#define OM_POOL_SPIN_NS 50000L

typedef void (*om_part_fn)(void *ctx, long part, int tid);

typedef struct om_pool {
    int threads;                       /* the bound: workers = threads - 1 */
    int started;                       /* workers running (0 until the first job) */
    pid_t pid;                         /* the process the workers belong to */
    int busy;                          /* a run holds the pool (atomic) */
    int stop;                          /* workers exit (atomic) */
    int sleepers;                      /* workers waiting on wake (atomic) */
    uint64_t ticket;                   /* generation << 32 | parts left to claim (atomic) */
    long left;                         /* parts of this job not finished (atomic) */
    int waiting;                       /* the caller sleeps on `fin` (atomic) */
    long jobs;                         /* jobs run in this process (for tests and tools) */
    long parts, worker_parts;          /* their parts, and those the workers ran (atomic) */
    om_part_fn fn;                     /* the job: valid while a part of it is claimed */
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_cond_t fin;                /* the last part of a job finished */
    pthread_t tids[OM_POOL_MAX];
    float *scratch[OM_POOL_MAX];       /* per worker (index = tid), 64-byte aligned */
    long scratch_floats;
} om_pool;

typedef struct { om_pool *pool; int tid; } om_worker_arg;

static inline void om_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline long om_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* claim one part of the current job: its index, or -1 when none is left; *gen gets the
 * generation claimed from */
static inline long om_pool_claim(om_pool *p, uint64_t *gen) {
    uint64_t t = __atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE);
    while ((t & 0xffffffffu) != 0) {
        if (__atomic_compare_exchange_n(&p->ticket, &t, t - 1, 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            *gen = t >> 32;
            return (long)(t & 0xffffffffu) - 1;
        }
    }
    return -1;
}

/* a part finished: the one that finishes the job wakes the caller if it sleeps */
static inline void om_pool_part_done(om_pool *p) {
    if (__atomic_sub_fetch(&p->left, 1, __ATOMIC_SEQ_CST) == 0
        && __atomic_load_n(&p->waiting, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_signal(&p->fin);
        pthread_mutex_unlock(&p->mu);
    }
}

static void *om_pool_worker(void *arg) {
    om_worker_arg *wa = (om_worker_arg *)arg;
    om_pool *p = wa->pool;
    int tid = wa->tid;
    free(wa);
    for (;;) {
        /* spin a short while for work, then sleep */
        long until = om_now_ns() + OM_POOL_SPIN_NS;
        int spins = 0;
        while (!(__atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE) & 0xffffffffu)
               && !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
            om_cpu_relax();
            if (++spins % 64 == 0 && (om_now_ns() > until
                                      || !__atomic_load_n(&p->busy, __ATOMIC_RELAXED))) {
                pthread_mutex_lock(&p->mu);
                __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
                while (!(__atomic_load_n(&p->ticket, __ATOMIC_SEQ_CST) & 0xffffffffu)
                       && !__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST))
                    pthread_cond_wait(&p->wake, &p->mu);
                __atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
                pthread_mutex_unlock(&p->mu);
                until = om_now_ns() + OM_POOL_SPIN_NS;
            }
        }
        if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return NULL;
        uint64_t gen;
        long part;
        while ((part = om_pool_claim(p, &gen)) >= 0) {
            p->fn(p->ctx, part, tid);  /* stable: this generation's job waits for this part */
            __atomic_add_fetch(&p->worker_parts, 1, __ATOMIC_RELAXED);
            om_pool_part_done(p);
        }
    }
}

static om_pool *om_pool_new(int threads) {
    if (threads < 1) threads = 1;
    if (threads > OM_POOL_MAX) threads = OM_POOL_MAX;
    om_pool *p = (om_pool *)calloc(1, sizeof *p);
    if (!p) return NULL;
    p->threads = threads;
    p->pid = getpid();
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->fin, NULL);
    return p;
}

static void om_pool_join(om_pool *p) {
    if (!p->started) return;
    __atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->started; i++) pthread_join(p->tids[i], NULL);
    p->started = 0;
    __atomic_store_n(&p->stop, 0, __ATOMIC_SEQ_CST);
}

static void om_pool_free(om_pool *p) {
    if (!p) return;
    if (p->pid == getpid()) {  /* in a forked child the workers are the parent's */
        om_pool_join(p);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->fin);
    }
    for (int i = 0; i < OM_POOL_MAX; i++) free(p->scratch[i]);
    free(p);
}

/* 1 if this run may use the pool's workers (then om_pool_release after), 0 if another run
 * holds it or it has no workers to offer */
static int om_pool_acquire(om_pool *p) {
    if (!p || p->threads < 2) return 0;
    pid_t me = getpid();
    if (p->pid != me) {  /* a forked child: the workers and the locks' state are the parent's */
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->wake, NULL);
        pthread_cond_init(&p->fin, NULL);
        p->started = 0;
        p->jobs = p->parts = p->worker_parts = 0;
        p->pid = me;
        __atomic_store_n(&p->busy, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&p->ticket, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&p->sleepers, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&p->stop, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&p->waiting, 0, __ATOMIC_SEQ_CST);
    }
    int zero = 0;
    return __atomic_compare_exchange_n(&p->busy, &zero, 1, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

static void om_pool_release(om_pool *p) { __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE); }

/* start the workers (by the run holding the pool); 0 if none could be started */
static int om_pool_start(om_pool *p) {
    if (p->started) return 1;
    int n = 1;
    for (; n < p->threads; n++) {
        om_worker_arg *wa = (om_worker_arg *)malloc(sizeof *wa);
        if (!wa) break;
        wa->pool = p;
        wa->tid = n;
        if (pthread_create(&p->tids[n], NULL, om_pool_worker, wa) != 0) { free(wa); break; }
    }
    p->started = n;  /* 1: only the caller */
    if (n == 1) { p->started = 0; return 0; }
    return 1;
}

/* every worker's scratch at least `floats` long (by the run holding the pool); 0 on failure */
static int om_pool_reserve(om_pool *p, long floats) {
    if (floats <= p->scratch_floats) return 1;
    long n = (floats + 15) / 16 * 16;
    for (int i = 1; i < p->threads; i++) {
        float *s = (float *)aligned_alloc(64, (size_t)n * sizeof(float));
        if (!s) return 0;
        free(p->scratch[i]);
        p->scratch[i] = s;
    }
    p->scratch_floats = n;
    return 1;
}

static inline float *om_pool_scratch(om_pool *p, int tid) { return p->scratch[tid]; }

/* run fn(ctx, part, tid) for every part in [0, nparts) on the caller (tid 0) and the workers;
 * returns when all are done (by the run holding the pool, after om_pool_start) */
static void om_pool_run(om_pool *p, long nparts, om_part_fn fn, void *ctx) {
    p->fn = fn;
    p->ctx = ctx;
    p->jobs++;
    p->parts += nparts;
    __atomic_store_n(&p->left, nparts, __ATOMIC_RELAXED);
    uint64_t gen = (__atomic_load_n(&p->ticket, __ATOMIC_RELAXED) >> 32) + 1;
    __atomic_store_n(&p->ticket, (gen << 32) | (uint64_t)nparts, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    uint64_t g;
    long part;
    while ((part = om_pool_claim(p, &g)) >= 0) { fn(ctx, part, 0); om_pool_part_done(p); }
    /* the parts others claimed are running: spin a short while, then sleep until the last
     * one ends (a worker descheduled mid-part by another process can then run on this core) */
    long until = om_now_ns() + OM_POOL_SPIN_NS;
    int spins = 0;
    while (__atomic_load_n(&p->left, __ATOMIC_ACQUIRE) > 0) {
        om_cpu_relax();
        if (++spins % 64 == 0 && om_now_ns() > until) {
            pthread_mutex_lock(&p->mu);
            __atomic_store_n(&p->waiting, 1, __ATOMIC_SEQ_CST);
            while (__atomic_load_n(&p->left, __ATOMIC_SEQ_CST) > 0)
                pthread_cond_wait(&p->fin, &p->mu);
            __atomic_store_n(&p->waiting, 0, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

#endif
