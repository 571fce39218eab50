/*
 * python_api.h - the few CPython C API functions the tracer calls, found at run
 * time with dlsym so that one libtrace.so serves every interpreter (3.8 to
 * 3.13, shared libpython or a static executable that exports its symbols).
 *
 * We never include Python.h: a PyObject is opaque here, and the handful of
 * structure fields we read go through per-version offsets (python_layout.h).
 */
#ifndef TRACE_PYTHON_API_H
#define TRACE_PYTHON_API_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct py_object py_object;

/* PyMethodDef, stable since 3.0. */
typedef py_object *(*py_cfunction)(py_object *self, py_object *args);
typedef struct py_method_def {
    const char *name;
    py_cfunction meth;
    int flags;
    const char *doc;
} py_method_def;
#define PY_METH_VARARGS 0x0001
#define PY_METH_KEYWORDS 0x0002
#define PY_METH_FASTCALL 0x0080   /* (self, args array, count): no tuple made (3.7+) */

/* PyMemAllocatorEx and its domains, stable since 3.5. */
typedef struct py_allocator {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr);
} py_allocator;
enum py_alloc_domain { PY_DOMAIN_RAW = 0, PY_DOMAIN_MEM = 1, PY_DOMAIN_OBJ = 2 };

typedef int (*py_audit_hook)(const char *event, py_object *args, void *user);

typedef struct py_api {
    int minor;                 /* 8 .. 13, known once attached */
    int micro;
    /* Present in every CPython 3.8+; resolved before anything else. */
    int (*Py_IsInitialized)(void);
    int (*PySys_AddAuditHook)(py_audit_hook hook, void *user);
    void (*PyMem_GetAllocator)(int domain, py_allocator *a);
    void (*PyMem_SetAllocator)(int domain, py_allocator *a);
    /* "malloc", "pymalloc", a debug variant, or NULL for an allocator set
     * by someone else (private, exported by every 3.8 to 3.13; optional). */
    const char *(*_PyMem_GetCurrentAllocatorName)(void);
    const char *(*Py_GetVersion)(void);
    py_object *(*PyImport_ImportModule)(const char *name);
    py_object *(*PyImport_GetModule)(py_object *name);   /* new reference */
    py_object *(*PyObject_GetAttrString)(py_object *o, const char *name);
    py_object *(*PyObject_CallFunctionObjArgs)(py_object *callable, ...);
    int (*PyList_Append)(py_object *list, py_object *item);
    py_object *(*PyCFunction_NewEx)(py_method_def *def, py_object *self, py_object *module);
    py_object *(*PyUnicode_InternFromString)(const char *s);
    int (*PyUnicode_CompareWithASCIIString)(py_object *u, const char *s);
    py_object *(*PyTuple_GetItem)(py_object *t, ssize_t i);
    py_object *(*PyTuple_Pack)(ssize_t n, ...);
    ssize_t (*PyTuple_Size)(py_object *t);
    py_object *(*PyObject_Type)(py_object *o);          /* new reference */
    unsigned long (*PyType_GetFlags)(py_object *type);
    py_object *(*PyDict_New)(void);
    int (*PyDict_SetItemString)(py_object *d, const char *key, py_object *v);
    int (*PyObject_SetItem)(py_object *o, py_object *key, py_object *v);
    py_object *(*PyStaticMethod_New)(py_object *callable);
    void (*PyEval_SetProfile)(void *func, py_object *arg);
    py_object *(*PyDict_GetItem)(py_object *d, py_object *key);
    ssize_t (*PyLong_AsSsize_t)(py_object *o);
    unsigned long long (*PyLong_AsUnsignedLongLongMask)(py_object *o);
    void *(*PyCapsule_GetPointer)(py_object *capsule, const char *name);
    const char *(*PyCapsule_GetName)(py_object *capsule);
    const char *(*PyUnicode_AsUTF8)(py_object *u);
    void (*Py_IncRef)(py_object *o);
    void (*Py_DecRef)(py_object *o);
    py_object *(*PyErr_Occurred)(void);
    void (*PyErr_Clear)(void);
    void (*PyErr_Fetch)(py_object **t, py_object **v, py_object **tb);
    void (*PyErr_Restore)(py_object *t, py_object *v, py_object *tb);
    int (*PyCode_Addr2Line)(py_object *code, int offset);
    void *(*PyGILState_GetThisThreadState)(void);
    py_object *(*PyModule_GetDict)(py_object *module);                 /* borrowed */
    int (*PyDict_Next)(py_object *d, ssize_t *pos, py_object **key, py_object **value);
    py_object *(*PyObject_GetAttr)(py_object *o, py_object *name);      /* new reference */
    const char *(*PyUnicode_AsUTF8AndSize)(py_object *s, ssize_t *size);
    void *(*current_tstate)(void);   /* PyThreadState_GetUnchecked or _PyThreadState_UncheckedGet */
    void *(*PyInterpreterState_Get)(void);   /* _PyInterpreterState_Get on 3.8 */
    int64_t (*PyInterpreterState_GetID)(void *interp);
    py_object *(*PyLong_FromSsize_t)(ssize_t v);
    void *(*PyInterpreterState_Head)(void);   /* the newest interpreter on 3.8 to 3.11 */
    void *(*PyInterpreterState_Main)(void);
    py_object *none;           /* &_Py_NoneStruct */
    py_object *code_type;      /* &PyCode_Type */
    py_object *type_type;      /* &PyType_Type */
    py_object *bytes_type;     /* &PyBytes_Type; NULL: line tables are not read (python_stack.c) */
    py_object *list_type;      /* &PyList_Type */
    /* sys.modules without importlib (python_threads.c), each borrowed:
     * 3.8 to 3.10's private _PySys_GetObjectId (whose identifier's layout
     * changed in 3.10), 3.11's and later's private _PySys_GetAttr; NULL
     * where not used. */
    py_object *(*_PySys_GetObjectId)(void *id);
    py_object *(*_PySys_GetAttr)(void *tstate, py_object *name);
} py_api;

extern py_api py;

/* A symbol of the interpreter: looked up in the global scope, where a python
 * executable, a program linked to libpython and a libpython dlopened with
 * RTLD_GLOBAL have it, else in a libpython the program dlopened with
 * RTLD_LOCAL, which no global lookup reaches (an embedder that keeps two
 * versions apart, a plugin host).  Only libraries whose file name holds
 * "python" are looked at for the second: the look runs at each dlopen of a
 * process that has no Python yet. */
void *py_sym(const char *name);

/* The libpython the program dlopened with RTLD_LOCAL, once py_sym or
 * py_next found it (a handle for dlsym), else NULL.  Never looks. */
void *py_local_libpython(void);

/* The definition our own exported one stands in front of (Py_InitializeEx,
 * PyObject_Init, ...): the next after libtrace.so in the global scope, else
 * the RTLD_LOCAL libpython's.  NULL if there is none.  This is the traced
 * interpreter's; a caller with a libpython of its own gets py_own_for_caller's
 * answer first. */
void *py_next(const char *name);

/* Our exports that stand in front of a libpython's functions. */
enum py_export {
    PY_EXPORT_INITIALIZE,
    PY_EXPORT_INITIALIZE_EX,
    PY_EXPORT_INITIALIZE_FROM_CONFIG,
    PY_EXPORT_OBJECT_INIT,
    PY_EXPORT_OBJECT_INIT_VAR,
    PY_EXPORT_ALLOCATOR_NAME,
    PY_EXPORT_DEBUG_MALLOC_STATS,
    PY_EXPORT_GET_ALLOCATOR,
    PY_EXPORT_COUNT
};

/* For our export e called from return address ret: the definition the
 * caller's own object binds to when that object reaches one through its own
 * scope (a libpython calling its own exported function through its PLT, as
 * pyenv's Py_Initialize calls Py_InitializeEx, or a library linked to a
 * libpython), unless it is ours; else NULL, and the caller's default
 * (py_next, or a static interpreter's own) is right.  With two libpythons in
 * one process (a plugin host opening each RTLD_LOCAL) each one's calls go to
 * its own definitions, where py_next knows only the first.  Answers are kept
 * per call site until a dlclose succeeds (it may have unmapped the caller).
 * Until a second libpython has been seen loaded, NULL for one load: with one
 * libpython the answer could only be the traced one's. */
void *py_own_for_caller(enum py_export e, const void *ret);

/* After a dlopen: in each libpython other than the traced one, the slots for
 * our exports (its own calls of them through its PLT) are pointed at its own
 * definitions (got_redirect.h).  Its Py_Initialize tail-jumps to its
 * Py_InitializeEx, so ours cannot tell by the return address whose call it
 * is: without this the traced library's ran in its place. */
void py_other_libpythons_own_calls(void);

/* Once per process: the log says a libpython other than the traced one (its
 * function own, just found by py_own_for_caller) runs, untraced. */
void py_note_other_libpython(const void *own);

/* name in the global scope, as dlsym(RTLD_DEFAULT) finds it, without
 * making the object that defines it unloadable (python_api.c): every
 * lookup of the interpreter's symbols goes through this. */
void *py_global_sym(const char *name);

/* After a dlclose that succeeded: nonzero once the libpython the tracer
 * found (py's) is no longer loaded, from then on; python.c then stops
 * using it.  py_unloaded() only reads the answer: when nonzero, py's
 * pointers lead nowhere, nothing more is looked up for tracing (py_sym,
 * py_api_probe answer NULL and 0), and a later libpython is not traced. */
int py_traced_unloaded(void);
int py_unloaded(void);

/* Notes the object that defines f, one of the interpreter's functions we
 * keep a pointer to, as the traced libpython (the first one noted is). */
void py_note_traced(const void *f);

/* Whether a dlopen handle is the traced libpython's (compared, never read:
 * glibc's handles are link maps). */
int py_handle_is_traced(const void *handle);

/* The traced libpython's path, once probed; NULL for a python executable
 * or a static interpreter (never unloaded) and before. */
const char *py_traced_path(void);

/* For our export e called from ret once the traced libpython is gone: the
 * definition the call reaches without us (the caller's own scope's, else
 * the next global one), or NULL. */
void *py_next_after_unload(enum py_export e, const void *ret);

/* Nonzero when this process has a CPython interpreter (PySys_AddAuditHook is
 * reachable); fills the functions that need no interpreter. */
int py_api_probe(void);

/* Once the interpreter is initialised: the rest of the table and the version.
 * Returns 0 when something we rely on is missing (message in why). */
int py_api_resolve(const char **why);

#endif
