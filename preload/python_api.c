/*
 * python_api.c - resolving the CPython C API at run time (see python_api.h).
 */
#include "python_api.h"
#include "call_sites.h"

#include "dl_hooks.h"
#include "dl_lookup.h"
#include "dl_object.h"
#include "fork_gate.h"
#include "got_redirect.h"
#include "native_stack.h"
#include "recorder.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

py_api py;

/* The handle of a libpython loaded with RTLD_LOCAL, once found.  Not held
 * open: a reference of ours kept the library loaded after the program's
 * dlclose (its next dlopen of it got the old interpreter's state back, a
 * second version opened after it was never unloaded), where bare it is
 * unmapped.  It is valid while the library stays loaded, which the dlclose
 * hook checks (py_traced_unloaded). */
static void *_Atomic local_scope;

/* Set once the traced libpython was unloaded (py_traced_unloaded): from
 * then on nothing is looked up for tracing, and our exports forward to
 * whatever definition the caller would reach without us. */
static _Atomic int traced_gone;

/* The object that defines the traced interpreter (py.PySys_AddAuditHook),
 * once probed: its load address and path.  Empty for the main program
 * (a python executable, a static interpreter), which is never unloaded. */
static uintptr_t traced_addr;
static const void *traced_map;     /* its link map: the handle dlopen gave for it */
static char traced_path[512];
static _Atomic int traced_known;

int py_unloaded(void)
{
    return atomic_load_explicit(&traced_gone, memory_order_acquire);
}

/* The global scope, as a handle: what dlsym(RTLD_DEFAULT) answers for
 * libtrace.so, without its side effect.  glibc's RTLD_DEFAULT lookup adds
 * the defining object to the caller's dependencies; libtrace.so is never
 * unloaded, so an object dlopened later that answered it (an embedder's
 * libpython opened RTLD_GLOBAL) was made never to be unloaded either: its
 * dlclose left it mapped, a second version opened RTLD_GLOBAL after it
 * bound its calls to the first one's functions and crashed in
 * Py_FinalizeEx.  A lookup through a handle (the main program's, whose
 * scope is the global one) adds no dependency. */
static void *global_handle(void)
{
    static void *_Atomic handle;
    void *h = atomic_load_explicit(&handle, memory_order_acquire);
    if (!h) {
        h = dl_real_dlopen(NULL, RTLD_LAZY);
        void *expected = NULL;
        if (h && !atomic_compare_exchange_strong(&handle, &expected, h)) {
            dl_real_dlclose(h);
            h = expected;
        }
    }
    return h;
}

void *py_global_sym(const char *name)
{
    void *h = global_handle();
    return h ? dl_real_dlsym(h, name) : NULL;
}

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
static uintptr_t own_base(void)
{
    /* dladdr walks every loaded object's symbols (some 30,000 instructions
     * at a process's start); our own base does not change. */
    static _Atomic uintptr_t base;
    uintptr_t b = atomic_load_explicit(&base, memory_order_relaxed);
    Dl_info self;
    if (!b && dladdr((void *)own_base, &self)) {
        b = (uintptr_t)self.dli_fbase;
        atomic_store_explicit(&base, b, memory_order_relaxed);
    }
    return b;
}

static void *find_local_scope(void)
{
    struct candidates c = { .n = 0 };
    c.self = own_base();
    if (!c.self)
        return NULL;
    dl_iterate_phdr(collect, &c);
    for (int i = 0; i < c.n; i++) {
        void *h = dl_real_dlopen(c.name[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        void *f = dl_real_dlsym(h, "PySys_AddAuditHook");
        Dl_info where;
        /* Our reference goes back at once: the program's keeps it loaded. */
        dl_real_dlclose(h);
        if (f && dladdr(f, &where) && (uintptr_t)where.dli_fbase != c.self) {
            void *expected = NULL;
            py_note_traced(f);
            if (atomic_compare_exchange_strong(&local_scope, &expected, h))
                return h;
            return expected;           /* another thread found it first */
        }
    }
    return NULL;
}

/* Whether any object but ours defines Py_GetVersion (every CPython does,
 * down to those without audit hooks: say_if_old_python), from the
 * objects' symbol tables.  Without it the loader is not asked: a process
 * without Python asked it at start and at each dlopen, and each failed
 * lookup put its message in the thread's dlerror state through the
 * program's malloc (dl_lookup.h).  Once seen, it is not looked for again. */
static int python_loaded(void)
{
    static _Atomic int seen;
    if (atomic_load_explicit(&seen, memory_order_relaxed))
        return 1;
    if (!dl_lookup_any("Py_GetVersion"))
        return 0;
    atomic_store_explicit(&seen, 1, memory_order_relaxed);
    return 1;
}

void *py_sym(const char *name)
{
    if (py_unloaded() || !python_loaded())
        return NULL;
    void *h = atomic_load(&local_scope);
    if (h)
        return dl_real_dlsym(h, name);
    void *f = py_global_sym(name);
    if (f || py_global_sym("PySys_AddAuditHook"))
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
    if (f || py_unloaded())
        return f;
    void *h = atomic_load(&local_scope);
    if (!h && !py_global_sym("PySys_AddAuditHook"))
        h = find_local_scope();
    return h ? dl_real_dlsym(h, name) : NULL;
}

/* ------------------------------------- a caller's own libpython (python_api.h) */

static const char *const export_name[PY_EXPORT_COUNT] = {
    [PY_EXPORT_INITIALIZE] = "Py_Initialize",
    [PY_EXPORT_INITIALIZE_EX] = "Py_InitializeEx",
    [PY_EXPORT_INITIALIZE_FROM_CONFIG] = "Py_InitializeFromConfig",
    [PY_EXPORT_OBJECT_INIT] = "PyObject_Init",
    [PY_EXPORT_OBJECT_INIT_VAR] = "PyObject_InitVar",
    [PY_EXPORT_ALLOCATOR_NAME] = "_PyMem_GetCurrentAllocatorName",
    [PY_EXPORT_DEBUG_MALLOC_STATS] = "_PyObject_DebugMallocStats",
    [PY_EXPORT_GET_ALLOCATOR] = "PyMem_GetAllocator",
};

/* Call sites seen per export and the answer for each (call_sites.h), as
 * cuda_symbols.c keeps them for CUDA's entry points: few sites (3.8's
 * libpython calls PyObject_Init through its PLT from 7 places, later ones
 * from none).  A caller with no definition of its own is kept too, as
 * NO_OWN: the double-initialisation check calls PyObject_Init through here
 * for every object an extension module initialises. */
static const char no_own_mark;
#define NO_OWN ((void *)&no_own_mark)

static call_site site_slots[PY_EXPORT_COUNT][32];
static call_sites sites = CALL_SITES_INIT(site_slots);

/* Whether the dynamic linker binds every object's calls of name to ours
 * and, without us, would have found no definition in the global scope: each
 * object's calls would then go to the first in its own scope (a libpython
 * opened RTLD_LOCAL reaches its own).  Where a global one exists (the
 * program's, a libpython linked or opened RTLD_GLOBAL), every caller would
 * have reached that one, and py_next (or a static interpreter's own) is it. */
static int only_ours_global(const char *name)
{
    void *winner = py_global_sym(name);
    return winner && native_stack_is_ours((uintptr_t)winner) && !dl_real_dlsym(RTLD_NEXT, name);
}

/* name's definition in the scope of the caller's object, where that is
 * where its call would have gone without us (only_ours_global); else NULL.
 * The main program's scope is the global one: its answer is py_next's. */
static void *own_lookup(const char *name, const void *ret)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (!only_ours_global(name))
        return NULL;
    if (!dladdr1(ret, &info, (void **)&map, RTLD_DL_LINKMAP) || !map || !map->l_name[0])
        return NULL;
    void *handle = dl_real_dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle)
        return NULL;
    void *own = dl_real_dlsym(handle, name);
    dl_real_dlclose(handle);
    return own && !native_stack_is_ours((uintptr_t)own) ? own : NULL;
}

/* Set once a libpython other than the traced one has been seen loaded
 * (py_other_libpythons_own_calls, at each dlopen): until then a caller's own
 * definition can only be the traced one's, and the answer is NULL at the
 * cost of one load. */
static _Atomic int others_seen;

void *py_own_for_caller(enum py_export e, const void *ret)
{
    if (!atomic_load_explicit(&others_seen, memory_order_acquire))
        return NULL;
    unsigned long now = call_sites_now();
    void *own = call_sites_find(&sites, e, ret, now);
    if (own)
        return own == NO_OWN ? NULL : own;
    own = own_lookup(export_name[e], ret);
    if (!own)
        own = NO_OWN;
    /* Remember it; a full table only costs the lookup above next time. */
    call_sites_keep(&sites, e, ret, own, now);
    return own == NO_OWN ? NULL : own;
}

void py_note_other_libpython(const void *own)
{
    static _Atomic int said;
    if (atomic_exchange(&said, 1))
        return;
    Dl_info other, traced;
    const char *traced_name = "none";
    if (py_traced_path())
        traced_name = py_traced_path();
    else if (py.PySys_AddAuditHook && dladdr(*(void **)&py.PySys_AddAuditHook, &traced) &&
             traced.dli_fname)
        traced_name = traced.dli_fname;
    char msg[1400];
    snprintf(msg, sizeof msg, "Python of %s: a second libpython in the process, not traced (only the "
             "first one found is, %s%s); its calls of the functions we stand in front of go to its own",
             dladdr(own, &other) && other.dli_fname ? other.dli_fname : "?", traced_name,
             py_unloaded() ? ", unloaded before it" : "");
    rec_info("not_watched", msg);
}

/* ------------------------------------------ a second libpython's own calls */

struct libpythons {
    int n;
    struct { const char *name; uintptr_t base; const void *phdr; } lib[MAX_CANDIDATES];
};

static int collect_libpythons(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct libpythons *c = arg;
    const char *name = info->dlpi_name;
    if (!name || !name[0] || c->n == MAX_CANDIDATES)
        return 0;
    const char *base = strrchr(name, '/');
    if (!strncmp(base ? base + 1 : name, "libpython", 9)) {
        c->lib[c->n].name = name;
        c->lib[c->n].base = info->dlpi_addr;
        c->lib[c->n].phdr = info->dlpi_phdr;
        c->n++;
    }
    return 0;
}

/* The load address of the object defining f, or 0.  Asked after every
 * dlopen once a libpython is loaded: not dladdr (dl_object.h). */
static uintptr_t object_of(const void *f)
{
    return dl_object_start(f);
}

/* Libraries already done (load address and program headers), for the
 * dlclose count they were done under. */
static pthread_mutex_t others_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uintptr_t base; const void *phdr; } others_done[MAX_CANDIDATES];
static int n_others_done;
static unsigned long others_unloads;

static int other_done(uintptr_t base, const void *phdr)
{
    for (int i = 0; i < n_others_done; i++)
        if (others_done[i].base == base && others_done[i].phdr == phdr)
            return 1;
    if (n_others_done < MAX_CANDIDATES) {
        others_done[n_others_done].base = base;
        others_done[n_others_done].phdr = phdr;
        n_others_done++;
    }
    return 0;
}

/* Whether the library loaded as path at base defines PySys_AddAuditHook
 * itself: a libpython, not a library linked to one. */
static int defines_audit_hook(const char *path, uintptr_t base)
{
    void *h = dl_real_dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    int defines = object_of(dl_real_dlsym(h, "PySys_AddAuditHook")) == base;
    dl_real_dlclose(h);
    return defines;
}

/* In one libpython not traced, loaded as path at base: its slots for our
 * exports point at its own definitions. */
static void own_calls_in(const char *path, uintptr_t base)
{
    void *h = dl_real_dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return;
    got_target targets[PY_EXPORT_COUNT];
    unsigned n = 0;
    if (object_of(dl_real_dlsym(h, "PySys_AddAuditHook")) == base) {
        atomic_store_explicit(&others_seen, 1, memory_order_release);
        for (int e = 0; e < PY_EXPORT_COUNT; e++) {
            void *own = dl_real_dlsym(h, export_name[e]);
            if (own && object_of(own) == base && only_ours_global(export_name[e]))
                targets[n++] = (got_target){ .name = export_name[e],
                                             .from = py_global_sym(export_name[e]),
                                             .to = own };
        }
        py_note_other_libpython(dl_real_dlsym(h, "PySys_AddAuditHook"));
    }
    if (n)
        got_redirect_object(base, targets, n);
    dl_real_dlclose(h);
}

/* Inside the fork gate (fork_gate.h): the walk holds the loader's lock, and
 * a child must not inherit others_lock held. */
void py_other_libpythons_own_calls(void)
{
    struct libpythons c = { .n = 0 };
    fork_gate_enter();
    dl_iterate_phdr(collect_libpythons, &c);
    if (!c.n) {
        fork_gate_leave();
        return;
    }
    /* The traced one: the interpreter py holds, else the one it will hold
     * (the global scope's, else the first library loaded). */
    int gone = py_unloaded();
    uintptr_t traced = gone ? 0 : object_of(*(void **)&py.PySys_AddAuditHook);
    if (!traced && !gone)
        traced = object_of(py_global_sym("PySys_AddAuditHook"));
    pthread_mutex_lock(&others_lock);
    if (others_unloads != dl_loader_unloads()) {
        others_unloads = dl_loader_unloads();
        n_others_done = 0;
    }
    /* Once the traced one was unloaded, every libpython is another. */
    for (int i = 0; i < c.n && !traced && !gone; i++)
        if (defines_audit_hook(c.lib[i].name, c.lib[i].base))
            traced = c.lib[i].base;   /* nothing traced yet: the first loaded will be */
    for (int i = 0; i < c.n; i++)
        if (c.lib[i].base != traced && !other_done(c.lib[i].base, c.lib[i].phdr))
            own_calls_in(c.lib[i].name, c.lib[i].base);
    pthread_mutex_unlock(&others_lock);
    fork_gate_leave();
}

/* ------------------------------------------ the traced libpython's unload */


/* The first interpreter whose functions we keep (f is one of them): the
 * probe's, else the first our exports forward to (with TRACE_PYTHON=0 too). */
void py_note_traced(const void *f)
{
    static _Atomic int busy;
    if (!f || atomic_load(&traced_known) || atomic_exchange(&busy, 1))
        return;
    Dl_info info;
    struct link_map *map = NULL;
    if (!atomic_load(&traced_known) && dladdr1(f, &info, (void **)&map, RTLD_DL_LINKMAP) && map) {
        if (map->l_name && map->l_name[0] && strlen(map->l_name) < sizeof traced_path) {
            traced_addr = map->l_addr;
            traced_map = map;
            strcpy(traced_path, map->l_name);
        }
        atomic_store(&traced_known, 1);
    }
    atomic_store(&busy, 0);
}

const char *py_traced_path(void)
{
    return atomic_load(&traced_known) && traced_path[0] ? traced_path : NULL;
}

int py_handle_is_traced(const void *handle)
{
    return handle && atomic_load(&traced_known) && traced_path[0] && !py_unloaded() &&
           handle == traced_map;
}

static int is_traced(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    return info->dlpi_addr == traced_addr && info->dlpi_name && !strcmp(info->dlpi_name, traced_path);
}

int py_traced_unloaded(void)
{
    if (py_unloaded())
        return 1;
    if (!atomic_load(&traced_known) || !traced_path[0])
        return 0;
    /* Called after a dlclose, which loads nothing: an object at the same
     * address under the same name is the traced one still. */
    if (dl_iterate_phdr(is_traced, NULL))
        return 0;
    atomic_store(&local_scope, NULL);
    atomic_store_explicit(&traced_gone, 1, memory_order_release);
    return 1;
}

/* Our exports' answer once the traced libpython is gone: the definition
 * the caller reaches without us (its own scope's, else the next global
 * one), looked up again after any dlopen or dlclose. */
void *py_next_after_unload(enum py_export e, const void *ret)
{
    void *own = py_own_for_caller(e, ret);
    if (own)
        return own;
    static struct { void *_Atomic fn; _Atomic unsigned long stamp; } cache[PY_EXPORT_COUNT];
    static _Atomic int cache_lock;
    unsigned long now = (dl_loader_changes() << 1) | 1;
    if (atomic_load_explicit(&cache[e].stamp, memory_order_acquire) == now) {
        void *fn = atomic_load_explicit(&cache[e].fn, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&cache[e].stamp, memory_order_relaxed) == now)
            return fn;
    }
    void *fn = dl_real_dlsym(RTLD_NEXT, export_name[e]);
    int expected = 0;
    if (atomic_compare_exchange_strong(&cache_lock, &expected, 1)) {
        if (((dl_loader_changes() << 1) | 1) == now) {
            atomic_store_explicit(&cache[e].stamp, 0, memory_order_relaxed);
            atomic_thread_fence(memory_order_release);
            atomic_store_explicit(&cache[e].fn, fn, memory_order_relaxed);
            atomic_store_explicit(&cache[e].stamp, now, memory_order_release);
        }
        atomic_store(&cache_lock, 0);
    }
    return fn;
}

/* dlsym returns void *; a function pointer is filled through memcpy-free
 * assignment of the same size, which POSIX guarantees to work. */
#define RESOLVE(field, name) (*(void **)&py.field = py_sym(name))

/* Stops at the first name missing: in a process without Python (a shell
 * or a compiler that inherited the preload), each missing name costs two
 * failed lookups and a walk of the loaded objects, at its start and at each
 * dlopen. */
/* CPython's, not ours (python_alloc.c), as for the allocator's name below. */
static int resolve_get_allocator(void)
{
    *(void **)&py.PyMem_GetAllocator = py_next("PyMem_GetAllocator");
    return py.PyMem_GetAllocator || RESOLVE(PyMem_GetAllocator, "PyMem_GetAllocator");
}

int py_api_probe(void)
{
    if (py_unloaded())
        return 0;
    int found = RESOLVE(PySys_AddAuditHook, "PySys_AddAuditHook") &&
                RESOLVE(Py_IsInitialized, "Py_IsInitialized") &&
                resolve_get_allocator() &&
                RESOLVE(PyMem_SetAllocator, "PyMem_SetAllocator");
    if (found)
        py_note_traced(*(void **)&py.PySys_AddAuditHook);
    return found;
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
    if (py.minor <= 10)
        RESOLVE(_PySys_GetObjectId, "_PySys_GetObjectId");
    else
        RESOLVE(_PySys_GetAttr, "_PySys_GetAttr");
    resolve_current_tstate();
    RESOLVE(PyInterpreterState_Get, "PyInterpreterState_Get");
    if (!py.PyInterpreterState_Get)
        RESOLVE(PyInterpreterState_Get, "_PyInterpreterState_Get");
    RESOLVE(PyInterpreterState_GetID, "PyInterpreterState_GetID");
    RESOLVE(PyLong_FromSsize_t, "PyLong_FromSsize_t");
    RESOLVE(PyInterpreterState_Head, "PyInterpreterState_Head");
    RESOLVE(PyInterpreterState_Main, "PyInterpreterState_Main");

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
