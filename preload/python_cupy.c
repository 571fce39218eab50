/*
 * python_cupy.c - CuPy's memory pool, seen through its own MemoryHook.
 *
 * CuPy calls the hooks registered in a thread-local dict
 * (cupy.cuda.memory_hook.get_memory_hooks()) around every pool request:
 * malloc_preprocess(device_id, size, mem_size), malloc_postprocess(...,
 * mem_ptr, pmem_id), free_preprocess(device_id, mem_size, mem_ptr, pmem_id)
 * and free_postprocess(same).  We register a MemoryHook subclass whose four
 * methods are C functions recording pool_op_begin / pool_alloc / pool_free /
 * pool_op_end; the operation is open between pre and post, so a collection
 * that frees pooled memory during a malloc shows nested in it.
 *
 * When: after the audit "import" event of cupy.cuda.memory_hook, on the next
 * audit event that finds the module ready.  Which threads: the hooks are
 * per thread, so we register on the importing thread, on threads started
 * later through a one-shot threading.setprofile function (it registers, then
 * removes itself: no per-call cost), and on any other thread at its next
 * audit event.  The hook methods read their keyword arguments in place and
 * create no Python object.
 */
#include "python_internal.h"
#include "pool_api.h"
#include "recorder.h"

#include <string.h>

#define HOOK_NAME "LibtraceMemoryHook"
#define MAX_OPEN 64

/* INSTALLING turns away the audit events that installing itself raises
 * (threading.setprofile raises one). */
static enum { CUPY_ABSENT, CUPY_IMPORTING, CUPY_INSTALLING, CUPY_READY, CUPY_FAILED } cupy_state;
static int pool;
static py_object *hook_instance, *hook_name, *module_name;
static py_object *key_size, *key_mem_size, *key_mem_ptr;

/* Per thread: registered yet, and the pool operations open on it (a free
 * can nest in a malloc through a collection). */
static __thread int registered_here __attribute__((tls_model("initial-exec")));
static __thread uint64_t open_ops[MAX_OPEN] __attribute__((tls_model("initial-exec")));
static __thread int n_open __attribute__((tls_model("initial-exec")));

static uint64_t kwarg(py_object *kwargs, py_object *key)
{
    py_object *v = kwargs ? py.PyDict_GetItem(kwargs, key) : NULL;   /* borrowed */
    if (!v)
        return 0;
    uint64_t n = py.PyLong_AsUnsignedLongLongMask(v);
    if (py.PyErr_Occurred())
        py.PyErr_Clear();
    return n;
}

static void op_begin(int op, uint64_t arg)
{
    uint64_t seq = pool_api_op_begin(pool, op, arg);
    if (n_open < MAX_OPEN)
        open_ops[n_open] = seq;
    n_open++;
}

static void op_end(void)
{
    if (n_open == 0)
        return;
    n_open--;
    if (n_open < MAX_OPEN && open_ops[n_open])
        pool_api_op_end(pool, open_ops[n_open]);
}

static py_object *none(void)
{
    py.Py_IncRef(py.none);
    return py.none;
}

static py_object *malloc_pre(py_object *self, py_object *args, py_object *kwargs)
{
    (void)self, (void)args;
    op_begin(TF_POOL_OP_ALLOC, kwarg(kwargs, key_size));
    return none();
}

static py_object *malloc_post(py_object *self, py_object *args, py_object *kwargs)
{
    (void)self, (void)args;
    uint64_t ptr = kwarg(kwargs, key_mem_ptr);
    if (ptr)
        pool_api_alloc(pool, (const void *)(uintptr_t)ptr, kwarg(kwargs, key_size),
                       kwarg(kwargs, key_mem_size), 0);
    op_end();
    return none();
}

/* The pool_free is recorded here, before the pool takes the block back:
 * once it is back, another thread may be handed it, and its pool_alloc must
 * come later in the log (causal order, recorder.h). */
static py_object *free_pre(py_object *self, py_object *args, py_object *kwargs)
{
    (void)self, (void)args;
    uint64_t ptr = kwarg(kwargs, key_mem_ptr);
    op_begin(TF_POOL_OP_FREE, ptr);
    pool_api_free(pool, (const void *)(uintptr_t)ptr, kwarg(kwargs, key_mem_size));
    return none();
}

static py_object *free_post(py_object *self, py_object *args, py_object *kwargs)
{
    (void)self, (void)args, (void)kwargs;
    op_end();
    return none();
}

/* PyMethodDef calls METH_KEYWORDS functions with (self, args, kwargs). */
typedef py_object *(*keywords_fn)(py_object *, py_object *, py_object *);
static py_method_def hook_methods[] = {
    { "malloc_preprocess", (py_cfunction)(void (*)(void))(keywords_fn)malloc_pre,
      PY_METH_VARARGS | PY_METH_KEYWORDS, NULL },
    { "malloc_postprocess", (py_cfunction)(void (*)(void))(keywords_fn)malloc_post,
      PY_METH_VARARGS | PY_METH_KEYWORDS, NULL },
    { "free_preprocess", (py_cfunction)(void (*)(void))(keywords_fn)free_pre,
      PY_METH_VARARGS | PY_METH_KEYWORDS, NULL },
    { "free_postprocess", (py_cfunction)(void (*)(void))(keywords_fn)free_post,
      PY_METH_VARARGS | PY_METH_KEYWORDS, NULL },
};

/* class LibtraceMemoryHook(MemoryHook) with the four methods as
 * staticmethods (builtin functions do not bind to instances). */
static py_object *make_hook(py_object *memory_hook_module)
{
    py_object *base = py.PyObject_GetAttrString(memory_hook_module, "MemoryHook");
    py_object *ns = py.PyDict_New();
    py_object *bases = base ? py.PyTuple_Pack(1, base) : NULL;
    int ok = base && ns && bases && py.PyDict_SetItemString(ns, "name", hook_name) == 0;
    for (size_t i = 0; ok && i < sizeof hook_methods / sizeof hook_methods[0]; i++) {
        py_object *fn = py.PyCFunction_NewEx(&hook_methods[i], NULL, NULL);
        py_object *method = fn ? py.PyStaticMethod_New(fn) : NULL;
        ok = method && py.PyDict_SetItemString(ns, hook_methods[i].name, method) == 0;
        if (fn)
            py.Py_DecRef(fn);
        if (method)
            py.Py_DecRef(method);
    }
    py_object *cls = ok ? py.PyObject_CallFunctionObjArgs(py.type_type, hook_name, bases, ns, NULL) : NULL;
    py_object *instance = cls ? py.PyObject_CallFunctionObjArgs(cls, NULL) : NULL;
    py_object *all[] = { base, ns, bases, cls };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            py.Py_DecRef(all[i]);
    return instance;
}

/* get_memory_hooks()[HOOK_NAME] = hook, on the calling thread. */
static void register_on_this_thread(void)
{
    registered_here = 1;
    py_object *m = py.PyImport_GetModule(module_name);
    py_object *get = m ? py.PyObject_GetAttrString(m, "get_memory_hooks") : NULL;
    py_object *hooks = get ? py.PyObject_CallFunctionObjArgs(get, NULL) : NULL;
    if (!hooks || py.PyObject_SetItem(hooks, hook_name, hook_instance) != 0)
        py.PyErr_Clear();
    py_object *all[] = { m, get, hooks };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            py.Py_DecRef(all[i]);
}

/* threading.setprofile target: runs once at the start of each new thread. */
static py_object *register_new_thread(py_object *self, py_object *args)
{
    (void)self, (void)args;
    py.PyEval_SetProfile(NULL, NULL);
    if (!registered_here)
        register_on_this_thread();
    return none();
}

static py_method_def register_new_thread_def = {
    "libtrace_cupy_thread_start", register_new_thread, PY_METH_VARARGS, NULL
};

static void follow_new_threads(void)
{
    py_object *threading = py.PyImport_ImportModule("threading");
    py_object *current = threading ? py.PyObject_GetAttrString(threading, "_profile_hook") : NULL;
    py_object *fn = current == py.none ? py.PyCFunction_NewEx(&register_new_thread_def, NULL, NULL) : NULL;
    py_object *setprofile = fn ? py.PyObject_GetAttrString(threading, "setprofile") : NULL;
    py_object *r = setprofile ? py.PyObject_CallFunctionObjArgs(setprofile, fn, NULL) : NULL;
    if (!r)
        py.PyErr_Clear();    /* the app has its own profile hook: threads register lazily */
    py_object *all[] = { threading, current, fn, setprofile, r };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            py.Py_DecRef(all[i]);
}

/* The module is ready once its MemoryHook class exists. */
static py_object *ready_memory_hook_module(void)
{
    py_object *m = py.PyImport_GetModule(module_name);
    py_object *base = m ? py.PyObject_GetAttrString(m, "MemoryHook") : NULL;
    if (!base) {
        py.PyErr_Clear();
        if (m)
            py.Py_DecRef(m);
        return NULL;
    }
    py.Py_DecRef(base);
    return m;
}

static void install(void)
{
    py_object *m = ready_memory_hook_module();
    if (!m)
        return;
    key_size = py.PyUnicode_InternFromString("size");
    key_mem_size = py.PyUnicode_InternFromString("mem_size");
    key_mem_ptr = py.PyUnicode_InternFromString("mem_ptr");
    hook_instance = key_size && key_mem_size && key_mem_ptr ? make_hook(m) : NULL;
    py.Py_DecRef(m);
    if (!hook_instance) {
        py.PyErr_Clear();
        cupy_state = CUPY_FAILED;
        rec_info("cupy", "off: could not create the MemoryHook");
        return;
    }
    pool = pool_api_register("cupy");
    rec_info("cupy", "on: MemoryHook registered per thread");
    register_on_this_thread();
    follow_new_threads();
    cupy_state = CUPY_READY;
}

static int is_memory_hook_import(const char *event, py_object *args)
{
    if (strcmp(event, "import") != 0)
        return 0;
    py_object *name = py.PyTuple_GetItem(args, 0);
    if (!name) {
        py.PyErr_Clear();
        return 0;
    }
    return py.PyUnicode_CompareWithASCIIString(name, "cupy.cuda.memory_hook") == 0;
}

void python_cupy_on_audit_event(const char *event, py_object *args)
{
    switch (cupy_state) {
    case CUPY_ABSENT:
        if (is_memory_hook_import(event, args))
            cupy_state = CUPY_IMPORTING;
        return;
    case CUPY_IMPORTING: {
        py_object *type, *value, *traceback;
        py.PyErr_Fetch(&type, &value, &traceback);
        cupy_state = CUPY_INSTALLING;
        install();
        if (cupy_state == CUPY_INSTALLING)
            cupy_state = CUPY_IMPORTING;        /* not ready yet: next event */
        py.PyErr_Restore(type, value, traceback);
        return;
    }
    case CUPY_READY:
        if (!registered_here) {
            py_object *type, *value, *traceback;
            py.PyErr_Fetch(&type, &value, &traceback);
            register_on_this_thread();
            py.PyErr_Restore(type, value, traceback);
        }
        return;
    case CUPY_INSTALLING:
    case CUPY_FAILED:
        return;
    }
}

void python_cupy_prepare(void)
{
    hook_name = py.PyUnicode_InternFromString(HOOK_NAME);
    module_name = py.PyUnicode_InternFromString("cupy.cuda.memory_hook");
    if (!hook_name || !module_name) {
        py.PyErr_Clear();
        cupy_state = CUPY_FAILED;
    }
}
