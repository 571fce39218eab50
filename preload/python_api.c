/*
 * python_api.c - resolving the CPython C API at run time (see python_api.h).
 */
#include "python_api.h"

#include "dl_hooks.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

py_api py;

/* The handle of a libpython loaded with RTLD_LOCAL, once found; kept open,
 * as the tracer holds pointers into it from then on (py, the audit hook). */
static void *_Atomic local_scope;

#define MAX_CANDIDATES 64
struct candidates {
    uintptr_t self;            /* libtrace.so's load address */
    int n;
    const char *name[MAX_CANDIDATES];
};

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct candidates *c = arg;
    const char *name = info->dlpi_name;
    if (!name || !name[0] || info->dlpi_addr == c->self || c->n == MAX_CANDIDATES)
        return 0;
    const char *base = strrchr(name, '/');
    if (strstr(base ? base + 1 : name, "python"))
        c->name[c->n++] = name;
    return 0;
}

/* The libraries are opened again (RTLD_NOLOAD: only if loaded) after the
 * walk, not inside it: dl_iterate_phdr holds a loader lock of its own. */
static void *find_local_scope(void)
{
    struct candidates c = { .n = 0 };
    Dl_info self;
    if (!dladdr((void *)find_local_scope, &self))
        return NULL;
    c.self = (uintptr_t)self.dli_fbase;
    dl_iterate_phdr(collect, &c);
    for (int i = 0; i < c.n; i++) {
        void *h = dl_real_dlopen(c.name[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        void *f = dl_real_dlsym(h, "PySys_AddAuditHook");
        Dl_info where;
        if (f && dladdr(f, &where) && where.dli_fbase != self.dli_fbase) {
            void *expected = NULL;
            if (atomic_compare_exchange_strong(&local_scope, &expected, h))
                return h;
            dl_real_dlclose(h);
            return expected;           /* another thread found it first */
        }
        dl_real_dlclose(h);
    }
    return NULL;
}

void *py_sym(const char *name)
{
    void *h = atomic_load(&local_scope);
    if (h)
        return dl_real_dlsym(h, name);
    void *f = dl_real_dlsym(RTLD_DEFAULT, name);
    if (f || dl_real_dlsym(RTLD_DEFAULT, "PySys_AddAuditHook"))
        return f;
    h = find_local_scope();
    return h ? dl_real_dlsym(h, name) : NULL;
}

void *py_local_libpython(void)
{
    return atomic_load(&local_scope);
}

void *py_next(const char *name)
{
    void *f = dl_real_dlsym(RTLD_NEXT, name);
    if (f)
        return f;
    void *h = atomic_load(&local_scope);
    if (!h && !dl_real_dlsym(RTLD_DEFAULT, "PySys_AddAuditHook"))
        h = find_local_scope();
    return h ? dl_real_dlsym(h, name) : NULL;
}

/* dlsym returns void *; a function pointer is filled through memcpy-free
 * assignment of the same size, which POSIX guarantees to work. */
#define RESOLVE(field, name) (*(void **)&py.field = py_sym(name))

int py_api_probe(void)
{
    RESOLVE(PySys_AddAuditHook, "PySys_AddAuditHook");
    RESOLVE(Py_IsInitialized, "Py_IsInitialized");
    RESOLVE(PyMem_GetAllocator, "PyMem_GetAllocator");
    RESOLVE(PyMem_SetAllocator, "PyMem_SetAllocator");
    return py.PySys_AddAuditHook && py.Py_IsInitialized && py.PyMem_GetAllocator &&
           py.PyMem_SetAllocator;
}

static int parse_version(void)
{
    const char *v = py.Py_GetVersion();
    char *end;
    if (strtol(v, &end, 10) != 3 || *end != '.')
        return 0;
    py.minor = (int)strtol(end + 1, &end, 10);
    py.micro = *end == '.' ? (int)strtol(end + 1, NULL, 10) : 0;
    return py.minor >= 8 && py.minor <= 13;
}

static void resolve_current_tstate(void)
{
    /* 3.13 renamed the accessor; the old name is gone from some builds. */
    RESOLVE(current_tstate, "PyThreadState_GetUnchecked");
    if (!py.current_tstate)
        RESOLVE(current_tstate, "_PyThreadState_UncheckedGet");
}

int py_api_resolve(const char **why)
{
    RESOLVE(Py_GetVersion, "Py_GetVersion");
    if (!py.Py_GetVersion || !parse_version()) {
        *why = "unsupported Python version (3.8 to 3.13 are supported)";
        return 0;
    }
    /* CPython's, not ours (python_alloc.c): the next definition after
     * libtrace.so, or a static interpreter's own, which comes before it. */
    *(void **)&py._PyMem_GetCurrentAllocatorName = py_next("_PyMem_GetCurrentAllocatorName");
    if (!py._PyMem_GetCurrentAllocatorName)
        RESOLVE(_PyMem_GetCurrentAllocatorName, "_PyMem_GetCurrentAllocatorName");
    RESOLVE(PyImport_ImportModule, "PyImport_ImportModule");
    RESOLVE(PyImport_GetModule, "PyImport_GetModule");
    RESOLVE(PyObject_GetAttrString, "PyObject_GetAttrString");
    RESOLVE(PyObject_CallFunctionObjArgs, "PyObject_CallFunctionObjArgs");
    RESOLVE(PyList_Append, "PyList_Append");
    RESOLVE(PyCFunction_NewEx, "PyCFunction_NewEx");
    RESOLVE(PyUnicode_InternFromString, "PyUnicode_InternFromString");
    RESOLVE(PyUnicode_CompareWithASCIIString, "PyUnicode_CompareWithASCIIString");
    RESOLVE(PyTuple_GetItem, "PyTuple_GetItem");
    RESOLVE(PyTuple_Pack, "PyTuple_Pack");
    RESOLVE(PyTuple_Size, "PyTuple_Size");
    RESOLVE(PyObject_Type, "PyObject_Type");
    RESOLVE(PyType_GetFlags, "PyType_GetFlags");
    RESOLVE(PyDict_New, "PyDict_New");
    RESOLVE(PyDict_SetItemString, "PyDict_SetItemString");
    RESOLVE(PyObject_SetItem, "PyObject_SetItem");
    RESOLVE(PyStaticMethod_New, "PyStaticMethod_New");
    RESOLVE(PyEval_SetProfile, "PyEval_SetProfile");
    RESOLVE(PyDict_GetItem, "PyDict_GetItem");
    RESOLVE(PyLong_AsSsize_t, "PyLong_AsSsize_t");
    RESOLVE(PyLong_AsUnsignedLongLongMask, "PyLong_AsUnsignedLongLongMask");
    RESOLVE(PyCapsule_GetPointer, "PyCapsule_GetPointer");
    RESOLVE(PyCapsule_GetName, "PyCapsule_GetName");
    RESOLVE(PyUnicode_AsUTF8, "PyUnicode_AsUTF8");
    RESOLVE(Py_IncRef, "Py_IncRef");
    RESOLVE(Py_DecRef, "Py_DecRef");
    RESOLVE(PyErr_Occurred, "PyErr_Occurred");
    RESOLVE(PyErr_Clear, "PyErr_Clear");
    RESOLVE(PyErr_Fetch, "PyErr_Fetch");
    RESOLVE(PyErr_Restore, "PyErr_Restore");
    RESOLVE(PyCode_Addr2Line, "PyCode_Addr2Line");
    RESOLVE(PyGILState_GetThisThreadState, "PyGILState_GetThisThreadState");
    RESOLVE(PyModule_GetDict, "PyModule_GetDict");
    RESOLVE(PyDict_Next, "PyDict_Next");
    RESOLVE(PyObject_GetAttr, "PyObject_GetAttr");
    RESOLVE(PyUnicode_AsUTF8AndSize, "PyUnicode_AsUTF8AndSize");
    py.none = py_sym("_Py_NoneStruct");
    py.code_type = py_sym("PyCode_Type");
    py.type_type = py_sym("PyType_Type");
    py.bytes_type = py_sym("PyBytes_Type");
    py.list_type = py_sym("PyList_Type");
    resolve_current_tstate();
    RESOLVE(PyInterpreterState_Get, "PyInterpreterState_Get");
    if (!py.PyInterpreterState_Get)
        RESOLVE(PyInterpreterState_Get, "_PyInterpreterState_Get");
    RESOLVE(PyInterpreterState_GetID, "PyInterpreterState_GetID");
    RESOLVE(PyLong_FromSsize_t, "PyLong_FromSsize_t");
    RESOLVE(PySys_GetObject, "PySys_GetObject");

    void **first = (void **)&py.Py_IsInitialized;
    void **last = (void **)&py.type_type;
    for (void **f = first; f <= last; f++) {
        if (!*f) {
            *why = "a CPython C API function is missing";
            return 0;
        }
    }
    return 1;
}
