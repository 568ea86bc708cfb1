/* onemodel_backend_compiled._native: one call runs a whole lowered program (see program.py).
 *
 * The kernels (om_kernels.h) are compiled for the baseline ISA and, on x86-64, with AVX2+FMA
 * and with AVX-512 enabled for those functions only (and once more, avx2-w16, for the tests);
 * the copy is chosen once at import by the CPU, so the wheel is portable and no compiler is
 * needed at run time. A Pool (om_pool.h) gives a run
 * intra-op threads: the executor splits the heavy instructions over it (om_split.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "om_math.h"
#include "om_pool.h"

#define SFX(name) name##_generic
#include "om_kernels.h"
#undef SFX

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define OM_HAVE_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define SFX(name) name##_avx2
#define OM_VEC_MINMAX 1
#include "om_kernels.h"
#undef OM_VEC_MINMAX
#undef SFX
#pragma GCC pop_options
#elif defined(__x86_64__) && defined(__clang__)
#define OM_HAVE_AVX2 1
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define SFX(name) name##_avx2
#define OM_VEC_MINMAX 1
#include "om_kernels.h"
#undef OM_VEC_MINMAX
#undef SFX
#pragma clang attribute pop
#endif

/* avx2-w16: the AVX-512 copy's 16-lane GEMM (om_wide.h) built for AVX2+FMA (each 64-byte
 * vector as two ymm: slower than avx2, never chosen at import) so that the very same C logic,
 * its tiles, tails and epilogues, is tested on a machine without AVX-512 (use("avx2-w16")) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define OM_HAVE_AVX2W16 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define SFX(name) name##_avx2w16
#define OM_VEC_MINMAX 1
#define OM_LANES16 1
#include "om_kernels.h"
#undef OM_LANES16
#undef OM_VEC_MINMAX
#undef SFX
#pragma GCC pop_options
#elif defined(__x86_64__) && defined(__clang__)
#define OM_HAVE_AVX2W16 1
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define SFX(name) name##_avx2w16
#define OM_VEC_MINMAX 1
#define OM_LANES16 1
#include "om_kernels.h"
#undef OM_LANES16
#undef OM_VEC_MINMAX
#undef SFX
#pragma clang attribute pop
#endif

/* avx512: the 16-lane GEMM in zmm registers, the rest of the library as the avx2 copy (8 lanes,
 * EVEX encodings allowed); chosen at import where the CPU has AVX-512F, VL and DQ */
#define OM_CPU_AVX512() (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") \
                         && __builtin_cpu_supports("avx512dq"))
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define OM_HAVE_AVX512 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx2,fma")
#define SFX(name) name##_avx512
#define OM_VEC_MINMAX 1
#define OM_LANES16 1
#include "om_kernels.h"
#undef OM_LANES16
#undef OM_VEC_MINMAX
#undef SFX
#pragma GCC pop_options
#elif defined(__x86_64__) && defined(__clang__)
#define OM_HAVE_AVX512 1
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma"))), \
                             apply_to = function)
#define SFX(name) name##_avx512
#define OM_VEC_MINMAX 1
#define OM_LANES16 1
#include "om_kernels.h"
#undef OM_LANES16
#undef OM_VEC_MINMAX
#undef SFX
#pragma clang attribute pop
#endif

typedef long (*exec_fn)(const int64_t *, long, float **, om_pool *);
static exec_fn g_exec = execute_generic;
static const char *g_isa = "generic";

#define MAXBUF 64

/* -- Pool: a session's intra-op threads (threads - 1 workers, started at the first split) -- */
typedef struct { PyObject_HEAD om_pool *pool; } PoolObject;

static void Pool_dealloc(PoolObject *self) {
    om_pool *p = self->pool;
    self->pool = NULL;
    if (p) {
        Py_BEGIN_ALLOW_THREADS  /* joining the workers takes microseconds; no GIL needed */
        om_pool_free(p);
        Py_END_ALLOW_THREADS
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Pool_init(PoolObject *self, PyObject *args, PyObject *kw) {
    int threads;
    static char *names[] = {"threads", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "i", names, &threads)) return -1;
    if (threads < 1) {  /* more than OM_POOL_MAX is held to it (a bound, not a promise) */
        PyErr_Format(PyExc_ValueError, "Pool: threads must be at least 1, got %d", threads);
        return -1;
    }
    if (self->pool) return 0;
    self->pool = om_pool_new(threads);
    if (!self->pool) { PyErr_NoMemory(); return -1; }
    return 0;
}

static PyObject *Pool_get_threads(PoolObject *self, void *c) {
    return PyLong_FromLong(self->pool ? self->pool->threads : 0);
}

static PyObject *Pool_get_jobs(PoolObject *self, void *c) {
    om_pool *p = self->pool;
    return PyLong_FromLong(p && p->pid == getpid() ? p->jobs : 0);
}

static PyObject *Pool_get_parts(PoolObject *self, void *c) {
    om_pool *p = self->pool;
    int here = p && p->pid == getpid();
    return Py_BuildValue("(ll)", here ? p->parts : 0L,
                         here ? __atomic_load_n(&p->worker_parts, __ATOMIC_RELAXED) : 0L);
}

static PyObject *Pool_get_workers(PoolObject *self, void *c) {
    om_pool *p = self->pool;  /* workers running in this process (0 until the first split) */
    long n = p && p->started && p->pid == getpid() ? p->started - 1 : 0;
    return PyLong_FromLong(n);
}

static PyGetSetDef Pool_getset[] = {
    {"threads", (getter)Pool_get_threads, NULL, "the most threads one run keeps busy", NULL},
    {"workers", (getter)Pool_get_workers, NULL, "worker threads started in this process", NULL},
    {"parts", (getter)Pool_get_parts, NULL,
     "(parts of those instructions, parts the workers ran) in this process", NULL},
    {"jobs", (getter)Pool_get_jobs, NULL, "instructions split over the threads in this process",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject PoolType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "onemodel_backend_compiled._native.Pool",
    .tp_basicsize = sizeof(PoolObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Pool(threads): intra-op threads for run(); threads - 1 workers and the caller",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Pool_init,
    .tp_dealloc = (destructor)Pool_dealloc,
    .tp_getset = Pool_getset,
};

static PyObject *om_run(PyObject *self, PyObject *args) {
    PyObject *prog, *bufs, *poolobj = Py_None;
    if (!PyArg_ParseTuple(args, "OO!|O", &prog, &PyTuple_Type, &bufs, &poolobj)) return NULL;
    om_pool *pool = NULL;
    if (poolobj != Py_None) {
        if (!PyObject_TypeCheck(poolobj, &PoolType)) {
            PyErr_SetString(PyExc_TypeError, "run: pool must be a Pool or None");
            return NULL;
        }
        pool = ((PoolObject *)poolobj)->pool;
    }
    Py_ssize_t nb = PyTuple_GET_SIZE(bufs);
    if (nb > MAXBUF) { PyErr_SetString(PyExc_ValueError, "too many buffers"); return NULL; }
    Py_buffer pv, views[MAXBUF];
    float *ptrs[MAXBUF];
    if (PyObject_GetBuffer(prog, &pv, PyBUF_SIMPLE) < 0) return NULL;
    Py_ssize_t got = 0;
    for (; got < nb; got++) {
        PyObject *o = PyTuple_GET_ITEM(bufs, got);
        if (o == Py_None) { ptrs[got] = NULL; views[got].obj = NULL; continue; }
        if (PyObject_GetBuffer(o, &views[got], PyBUF_SIMPLE) < 0) break;
        ptrs[got] = (float *)views[got].buf;
    }
    long failed = -2;
    if (got == nb) {
        long n = (long)(pv.len / sizeof(int64_t));
        const int64_t *p = (const int64_t *)pv.buf;
        Py_BEGIN_ALLOW_THREADS
        /* a pool another run holds is not shared: this run keeps to its own thread */
        int held = om_pool_acquire(pool);
        failed = g_exec(p, n, ptrs, held ? pool : NULL);
        if (held) om_pool_release(pool);
        Py_END_ALLOW_THREADS
    }
    for (Py_ssize_t i = 0; i < got; i++)
        if (views[i].obj) PyBuffer_Release(&views[i]);
    PyBuffer_Release(&pv);
    if (failed == -2) return NULL;
    return PyLong_FromLong(failed);
}

static PyObject *om_split_work(PyObject *self, PyObject *args) {
    double w = -1;
    if (!PyArg_ParseTuple(args, "|d", &w)) return NULL;
    double old = om_split_min_work;
    if (w >= 0) om_split_min_work = w;
    return PyFloat_FromDouble(old);
}

static PyObject *om_isa(PyObject *self, PyObject *noargs) { return PyUnicode_FromString(g_isa); }

static PyObject *om_use(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    if (strcmp(name, "generic") == 0) { g_exec = execute_generic; g_isa = "generic"; }
#ifdef OM_HAVE_AVX2
    else if (strcmp(name, "avx2") == 0 && __builtin_cpu_supports("avx2")
             && __builtin_cpu_supports("fma")) { g_exec = execute_avx2; g_isa = "avx2"; }
#endif
#ifdef OM_HAVE_AVX2W16
    else if (strcmp(name, "avx2-w16") == 0 && __builtin_cpu_supports("avx2")
             && __builtin_cpu_supports("fma")) { g_exec = execute_avx2w16; g_isa = "avx2-w16"; }
#endif
#ifdef OM_HAVE_AVX512
    else if (strcmp(name, "avx512") == 0 && OM_CPU_AVX512()) {
        g_exec = execute_avx512; g_isa = "avx512";
    }
#endif
    else { PyErr_Format(PyExc_ValueError, "instruction set %s is not available here", name); return NULL; }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"run", om_run, METH_VARARGS,
     "run(program, buffers, pool=None) -> -1, or the failing instruction"},
    {"split_min_work", om_split_work, METH_VARARGS,
     "split_min_work([work]) -> the least work (FLOP-equivalents) of a part on another thread "
     "before the call; sets it when given (tests and tools: 0 splits everything)"},
    {"isa", om_isa, METH_NOARGS, "the instruction set the kernels use"},
    {"use", om_use, METH_VARARGS,
     "use('generic' | 'avx2' | 'avx2-w16' | 'avx512'): choose the kernel copy (tests); a copy "
     "this CPU cannot run is refused"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
#ifdef OM_HAVE_AVX2
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        g_exec = execute_avx2; g_isa = "avx2";
    }
#endif
#ifdef OM_HAVE_AVX512
    __builtin_cpu_init();
    if (OM_CPU_AVX512()) { g_exec = execute_avx512; g_isa = "avx512"; }
#endif
    if (PyType_Ready(&PoolType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&PoolType);
    if (PyModule_AddObject(m, "Pool", (PyObject *)&PoolType) < 0) {
        Py_DECREF(&PoolType); Py_DECREF(m); return NULL;
    }
    return m;
}
