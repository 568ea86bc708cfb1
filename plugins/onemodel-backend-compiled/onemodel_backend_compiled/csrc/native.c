/* onemodel_backend_compiled._native: one call runs a whole lowered program (see program.py).
 *
 * The kernels (om_kernels.h) are compiled twice: for the baseline ISA and, on x86-64, with
 * AVX2+FMA enabled for those functions only; the copy is chosen once at import by the CPU, so
 * the wheel is portable and no compiler is needed at run time. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "om_math.h"

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

typedef long (*exec_fn)(const int64_t *, long, float **);
static exec_fn g_exec = execute_generic;
static const char *g_isa = "generic";

#define MAXBUF 64

static PyObject *om_run(PyObject *self, PyObject *args) {
    PyObject *prog, *bufs;
    if (!PyArg_ParseTuple(args, "OO!", &prog, &PyTuple_Type, &bufs)) return NULL;
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
        failed = g_exec(p, n, ptrs);
        Py_END_ALLOW_THREADS
    }
    for (Py_ssize_t i = 0; i < got; i++)
        if (views[i].obj) PyBuffer_Release(&views[i]);
    PyBuffer_Release(&pv);
    if (failed == -2) return NULL;
    return PyLong_FromLong(failed);
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
    else { PyErr_Format(PyExc_ValueError, "instruction set %s is not available here", name); return NULL; }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"run", om_run, METH_VARARGS, "run(program, buffers) -> -1, or the failing instruction"},
    {"isa", om_isa, METH_NOARGS, "the instruction set the kernels use"},
    {"use", om_use, METH_VARARGS, "use('generic' | 'avx2'): choose the kernel copy (tests)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
#ifdef OM_HAVE_AVX2
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        g_exec = execute_avx2; g_isa = "avx2";
    }
#endif
    return PyModule_Create(&module);
}
