/* onemodel_backend_compiled._native: one call runs a whole lowered program (see program.py).
 *
 * The kernels (om_kernels.h) are compiled once per copy: the portable baseline and, on x86-64,
 * AVX2+FMA and AVX-512, each with only its own functions under its target (om_copy.h), so the
 * wheel is portable and no compiler is needed at run time. Each copy ends with a table of its
 * kinds by opcode (om_kinds.h); at import the active table is assembled per opcode, each entry
 * from the best copy this CPU runs that provides it (MLAS style), and the executor and split
 * driver (om_exec.h), compiled once, run through it. A Pool (om_pool.h) gives a run intra-op
 * threads: the executor splits the heavy instructions over it (om_split.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "om_math.h"
#include "om_pool.h"
#include "om_kind.h"
#include "om_exec.h"

/* -- the kernel copies, each one block: the bottom first (a copy names the one below it) -- */
#define SFX(name) name##_generic
#define OM_COPY_NAME "generic"
#define OM_LANES 4
#define OM_COPY_BELOW 0
#define OM_COPY_CPU 1
#define OM_COPY_AUTO 1
#include "om_copy.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define OM_HAVE_X86_COPIES 1
#define SFX(name) name##_avx2
#define OM_COPY_NAME "avx2"
#define OM_LANES 8
#define OM_COPY_BELOW (&copy_desc_generic)
#define OM_COPY_CPU (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
#define OM_COPY_AUTO 1
#define OM_COPY_TARGET "avx2,fma"
#define OM_VEC_MINMAX 1
#include "om_copy.h"

/* a test copy: the 16-lane kernels (om_wide.h) built for AVX2+FMA, each 64-byte vector as two
 * ymm: slower than avx2 and never chosen at import, but the very same C as the avx512 copy's,
 * so its tiles, tails and epilogues are tested on machines without AVX-512 */
#define SFX(name) name##_avx2w16
#define OM_COPY_NAME "avx2-w16"
#define OM_LANES 16
#define OM_COPY_BELOW (&copy_desc_avx2)
#define OM_COPY_CPU (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
#define OM_COPY_AUTO 0
#define OM_COPY_TARGET "avx2,fma"
#define OM_VEC_MINMAX 1
#define OM_LANES16 1
#include "om_copy.h"

#define SFX(name) name##_avx512
#define OM_COPY_NAME "avx512"
#define OM_LANES 16
#define OM_COPY_BELOW (&copy_desc_avx2)
#define OM_COPY_CPU (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") \
                     && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") \
                     && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
#define OM_COPY_AUTO 1
#define OM_COPY_TARGET "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma"
#define OM_VEC_MINMAX 1
#define OM_LANES16 1  /* the 16-lane kernels, where om_kernels.h has them (om_wide.h) */
#define OM_CL_RMAX 14  /* om_conv_lanes.h: 28 accumulators in 32 registers */
#include "om_copy.h"
#endif

/* every copy, best first */
static const om_copy *const g_copies[] = {
#ifdef OM_HAVE_X86_COPIES
    &copy_desc_avx512, &copy_desc_avx2w16, &copy_desc_avx2,
#endif
    &copy_desc_generic};
#define NCOPIES ((int)(sizeof(g_copies) / sizeof(g_copies[0])))

/* the instruction keys by opcode (om_program.h's OM_KINDS), for kernels() */
#define OM_KIND_NAME(OP, key) [OP] = #key,
static const char *const g_kind_names[OM_OPCODE_LIMIT] = {OM_KINDS(OM_KIND_NAME)};
#undef OM_KIND_NAME

/* -- the active table: per opcode, the entry of the best copy that provides it -- */
static om_kind g_table[OM_OPCODE_LIMIT];
static const om_copy *g_owner[OM_OPCODE_LIMIT];
static const om_copy *g_top = &copy_desc_generic;

static int copy_runs(const om_copy *c) {  /* the copy and every copy below it */
    for (; c; c = c->below)
        if (!c->cpu_runs()) return 0;
    return 1;
}

/* drop: opcodes whose entry the top copy is taken not to provide (tests), or NULL. Not safe
 * while another thread runs a program: use() is for tests and tools */
static void assemble(const om_copy *top, const char *drop) {
    for (int op = 0; op < OM_OPCODE_LIMIT; op++) {
        const om_copy *c = drop && drop[op] ? top->below : top;
        while (c && !c->kinds[op]) c = c->below;
        g_owner[op] = c;
        if (c) g_table[op] = *c->kinds[op];
        else memset(&g_table[op], 0, sizeof(g_table[op]));
    }
    g_top = top;
}

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
        failed = om_execute(g_table, p, n, ptrs, held ? pool : NULL);
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

static PyObject *om_isa(PyObject *self, PyObject *noargs) {
    return PyUnicode_FromString(g_top->name);
}

static const om_copy *find_copy(const char *name) {
    for (int i = 0; i < NCOPIES; i++)
        if (strcmp(g_copies[i]->name, name) == 0) return g_copies[i];
    return NULL;
}

/* use(name, drop=()): the named copy on top, the copies below it filling its NULL entries */
static PyObject *om_use(PyObject *self, PyObject *args, PyObject *kw) {
    const char *name;
    PyObject *dropped = NULL;
    static char *names[] = {"name", "drop", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|O", names, &name, &dropped)) return NULL;
    const om_copy *c = find_copy(name);
    if (!c || !copy_runs(c)) {
        PyErr_Format(PyExc_ValueError, "kernel copy %s is not %s", name,
                     c ? "runnable on this CPU" : "built into this extension");
        return NULL;
    }
    char drop[OM_OPCODE_LIMIT] = {0};
    if (dropped) {
        PyObject *seq = PySequence_Fast(dropped, "use: drop must be a sequence of keys");
        if (!seq) return NULL;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            const char *key = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
            int op = 0;
            if (key)
                for (op = 0; op < OM_OPCODE_LIMIT; op++)
                    if (g_kind_names[op] && strcmp(g_kind_names[op], key) == 0) break;
            if (!key || op == OM_OPCODE_LIMIT) {
                if (key) PyErr_Format(PyExc_ValueError, "use: no instruction %s", key);
                Py_DECREF(seq);
                return NULL;
            }
            drop[op] = 1;
        }
        Py_DECREF(seq);
    }
    assemble(c, drop);
    Py_RETURN_NONE;
}

static PyObject *om_copies(PyObject *self, PyObject *noargs) {
    PyObject *out = PyList_New(0);
    for (int i = 0; out && i < NCOPIES; i++) {
        if (!copy_runs(g_copies[i])) continue;
        PyObject *item = Py_BuildValue("(si)", g_copies[i]->name, g_copies[i]->lanes);
        if (!item || PyList_Append(out, item) < 0) { Py_XDECREF(item); Py_CLEAR(out); break; }
        Py_DECREF(item);
    }
    return out;
}

/* below(name) -> the copy that fills the entries the named one leaves NULL (None: the bottom) */
static PyObject *om_below(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    const om_copy *c = find_copy(name);
    if (!c) return PyErr_Format(PyExc_ValueError, "kernel copy %s is not built into this "
                                "extension", name);
    if (!c->below) Py_RETURN_NONE;
    return PyUnicode_FromString(c->below->name);
}

static PyObject *om_kernels(PyObject *self, PyObject *noargs) {
    PyObject *out = PyDict_New();
    for (int op = 0; out && op < OM_OPCODE_LIMIT; op++) {
        if (!g_kind_names[op] || !g_owner[op]) continue;
        PyObject *v = PyUnicode_FromString(g_owner[op]->name);
        if (!v || PyDict_SetItemString(out, g_kind_names[op], v) < 0) Py_CLEAR(out);
        Py_XDECREF(v);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"run", om_run, METH_VARARGS,
     "run(program, buffers, pool=None) -> -1, or the failing instruction"},
    {"split_min_work", om_split_work, METH_VARARGS,
     "split_min_work([work]) -> the least work (FLOP-equivalents) of a part on another thread "
     "before the call; sets it when given (tests and tools: 0 splits everything)"},
    {"isa", om_isa, METH_NOARGS, "the top kernel copy in use"},
    {"use", (PyCFunction)(void (*)(void))om_use, METH_VARARGS | METH_KEYWORDS,
     "use(name, drop=()): put that copy on top (tests, tools, $ONEMODEL_COMPILED_ISA); the "
     "copies below fill the entries it lacks, and those of the instruction keys in drop"},
    {"copies", om_copies, METH_NOARGS,
     "copies() -> [(name, lanes)]: the kernel copies this CPU runs, best first"},
    {"below", om_below, METH_VARARGS,
     "below(name) -> the copy filling the entries that copy leaves out (None: the bottom one)"},
    {"kernels", om_kernels, METH_NOARGS,
     "kernels() -> {instruction key: copy}: where each entry of the active table comes from"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
#ifdef OM_HAVE_X86_COPIES
    __builtin_cpu_init();
#endif
    int i = 0;  /* the best copy this CPU runs that may be chosen automatically */
    while (i < NCOPIES - 1 && !(g_copies[i]->automatic && copy_runs(g_copies[i]))) i++;
    assemble(g_copies[i], NULL);
    if (PyType_Ready(&PoolType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&PoolType);
    if (PyModule_AddObject(m, "Pool", (PyObject *)&PoolType) < 0) {
        Py_DECREF(&PoolType); Py_DECREF(m); return NULL;
    }
    if (PyModule_AddIntConstant(m, "OPCODE_LIMIT", OM_OPCODE_LIMIT) < 0) {
        Py_DECREF(m); return NULL;
    }
    return m;
}
