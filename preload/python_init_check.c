/*
 * python_init_check.c - py_double_init: an object initialised twice.
 *
 * The story (seed 001): tp_alloc (PyType_GenericAlloc) already initialised the
 * object, then the extension called PyObject_Init on it again; every
 * construction leaks one count from the interpreter's reference total.
 *
 * We export PyObject_Init and PyObject_InitVar from libtrace.so.  Extension
 * modules call them through a shared libpython's dynamic symbols, so the
 * preloaded definitions win and we forward to the real ones (RTLD_NEXT).
 * In a static interpreter the executable's own definitions win the lookup
 * and ours are never called: the check is then off, and an INFO record says
 * why.  (The reference tracer of 3.13.3+ would be another way; 3.13.0 misses
 * DESTROY events and is not used.)
 *
 * "Already initialised" means: the refcount is exactly 1 and ob_type is
 * already the type being set - the state tp_alloc leaves.  Memory fresh from
 * an allocator never looks like that: a freed block's first word holds the
 * allocator's free-list link (pymalloc, glibc) or is zero (calloc), never 1.
 */
#include "python_internal.h"
#include "recorder.h"

#include <dlfcn.h>
#include <stdint.h>

#define EXPORTED __attribute__((visibility("default")))
#define TP_NAME 24              /* offsetof(PyTypeObject, tp_name), all versions */

typedef py_object *(*init_fn)(py_object *op, py_object *type);
typedef py_object *(*init_var_fn)(py_object *op, py_object *type, ssize_t size);

static int checking;            /* set once attached and the interposition works */
/* 3.8's PyObject_InitVar calls PyObject_Init through the PLT: that inner call
 * is the same initialisation, not a second one. */
static __thread int in_real_init __attribute__((tls_model("initial-exec")));

static int already_initialised(const py_object *op, const py_object *type)
{
    const intptr_t *head = (const intptr_t *)op;
    return head[0] == 1 && head[1] == (intptr_t)type;
}

static void record_double_init(py_object *op, py_object *type)
{
    tf_event e = { .kind = TF_EV_PY_DOUBLE_INIT };
    e.u.double_init.obj = (uint64_t)(uintptr_t)op;
    const char *name = *(const char **)((const char *)type + TP_NAME);
    e.u.double_init.type_name = rec_string(name ? name : "?");
    rec_event(&e, REC_STACKS);
}

/* The exported names are aliases of these local functions, so that
 * comparing with them tells our definition from one that won the lookup. */
static py_object *checked_init(py_object *op, py_object *type)
{
    static init_fn real;
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "PyObject_Init");
    if (checking && op && !in_real_init && already_initialised(op, type))
        record_double_init(op, type);
    return real ? real(op, type) : op;
}

static py_object *checked_init_var(py_object *op, py_object *type, ssize_t size)
{
    static init_var_fn real;
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "PyObject_InitVar");
    if (checking && op && !in_real_init && already_initialised(op, type))
        record_double_init(op, type);
    if (!real)
        return op;
    in_real_init = 1;
    py_object *result = real(op, type, size);
    in_real_init = 0;
    return result;
}

EXPORTED py_object *PyObject_Init(py_object *op, py_object *type)
    __attribute__((alias("checked_init")));
EXPORTED py_object *PyObject_InitVar(py_object *op, py_object *type, ssize_t size)
    __attribute__((alias("checked_init_var")));

void python_init_check_install(void)
{
    void *bound = dlsym(RTLD_DEFAULT, "PyObject_Init");
    if (bound == (void *)checked_init) {
        checking = 1;
        rec_info("py_double_init", "on: extension modules' PyObject_Init/PyObject_InitVar "
                 "are interposed");
    } else {
        rec_info("py_double_init", "off: the interpreter's own PyObject_Init wins the "
                 "symbol lookup (static interpreter), so extension modules' calls cannot "
                 "be interposed; the reference tracer would need 3.13.3+");
    }
}
