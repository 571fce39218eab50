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
 *
 * The stream: CuPy keeps one arena per stream, and the hooks are not told
 * which.  The pool takes the calling thread's current stream
 * (cupy.cuda.stream.get_current_stream_ptr, a C function Cython exports in
 * the module's __pyx_capi__), so malloc_postprocess asks the same function:
 * after _malloc ran on this thread it reads thread-local state and creates
 * nothing.  The per-thread default stream (cudaStreamPerThread, CuPy 8+)
 * has an arena per thread: it is recorded as minus the thread id, as CuPy
 * keys it by an identity of its own per thread.  CuPy's version goes into
 * an INFO record (cupy_version): which pool model follows the log depends
 * on it.
 */
#include "python_internal.h"
#include "pool_api.h"
#include "recorder.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HOOK_NAME "LibtraceMemoryHook"
#define CUDA_STREAM_PER_THREAD 2   /* cudaStreamPerThread */
/* Audit events to wait for cupy.cuda.stream and cupy.__version__ before
 * giving up (importing CuPy raises hundreds). */
#define MAX_LOOKUPS 20000
#define MAX_OPEN 64

/* INSTALLING turns away the audit events that installing itself raises
 * (threading.setprofile raises one). */
static enum { CUPY_ABSENT, CUPY_IMPORTING, CUPY_INSTALLING, CUPY_READY, CUPY_FAILED } cupy_state;
static int pool;                    /* device 0's, and a device we keep no pool for */
/* CuPy keeps a pool per device: each device's requests go to a pool of
 * their own in the log ("cupy device N"), made at its first request.  One
 * pool for all of them mixed the devices' arenas, and every model diverged
 * on most answers (a multi-GPU run was always INCONCLUSIVE). */
#define MAX_DEVICES 64
static int device_pools[MAX_DEVICES];
static py_object *hook_instance, *hook_name, *module_name;
static py_object *key_size, *key_mem_size, *key_mem_ptr, *key_device_id;
static py_object *stream_module_name, *cupy_module_name;

/* cupy.cuda.stream's get_current_stream_ptr: size_t (5.x) or intptr_t. */
typedef uint64_t (*stream_fn)(void);
static stream_fn current_stream;
static int version_noted, lookups;
static py_object *sys_modules;   /* sys.modules, held: no import machinery needed to look */

/* Per thread: registered yet, and the pool operations open on it (a free
 * can nest in a malloc through a collection).  The open ones are kept in a
 * block of the heap made at the thread's first operation (the hooks run
 * with the GIL, never in a signal handler) and freed at its exit, not in
 * static TLS: under LD_AUDIT (and for a late dlopen) a library's static TLS
 * comes out of glibc's small surplus, about 1.8 KiB in all, and the 768
 * bytes these took made libtrace.so's 2.1 KiB too many: the program did not
 * start ("cannot allocate memory in static TLS block", exit 127). */
typedef struct open_stack {
    uint64_t ops[MAX_OPEN];
    int pools[MAX_OPEN];
} open_stack;
static __thread int registered_here __attribute__((tls_model("initial-exec")));
static __thread open_stack *open_here __attribute__((tls_model("initial-exec")));
static __thread int n_open __attribute__((tls_model("initial-exec")));
static pthread_once_t open_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t open_key;
static int open_key_ok;
static __thread uint64_t thread_id __attribute__((tls_model("initial-exec")));

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

/* The pool of the device a hook call names (with the GIL: no race). */
static int pool_of(py_object *kwargs)
{
    uint64_t device = key_device_id ? kwarg(kwargs, key_device_id) : 0;
    if (device == 0 || device >= MAX_DEVICES)
        return pool;
    if (!device_pools[device]) {
        char name[32];
        snprintf(name, sizeof name, "cupy device %u", (unsigned)device);
        device_pools[device] = pool_api_register(name);
    }
    return device_pools[device] ? device_pools[device] : pool;
}

static void free_open_stack(void *p)
{
    open_here = NULL;   /* on the thread that ends: a later operation makes another */
    free(p);
}

static void make_open_key(void)
{
    open_key_ok = pthread_key_create(&open_key, free_open_stack) == 0;
}

/* This thread's open operations (NULL where no block could be had: then
 * they are counted and not closed, as past MAX_OPEN). */
static open_stack *open_stack_here(void)
{
    if (!open_here) {
        pthread_once(&open_key_once, make_open_key);
        open_stack *s = calloc(1, sizeof *s);
        if (s && open_key_ok && pthread_setspecific(open_key, s) != 0) {
            free(s);
            s = NULL;
        }
        open_here = s;
    }
    return open_here;
}

static void op_begin(int in_pool, int op, uint64_t arg)
{
    uint64_t seq = pool_api_op_begin(in_pool, op, arg);
    open_stack *s = open_stack_here();
    if (s && n_open < MAX_OPEN) {
        s->ops[n_open] = seq;
        s->pools[n_open] = in_pool;
    }
    n_open++;
}

static void op_end(void)
{
    if (n_open == 0)
        return;
    n_open--;
    open_stack *s = open_here;
    if (s && n_open < MAX_OPEN && s->ops[n_open])
        pool_api_op_end(s->pools[n_open], s->ops[n_open]);
}

static py_object *none(void)
{
    py.Py_IncRef(py.none);
    return py.none;
}

static py_object *malloc_pre(py_object *self, py_object *args, py_object *kwargs)
{
    (void)self, (void)args;
    op_begin(pool_of(kwargs), TF_POOL_OP_ALLOC, kwarg(kwargs, key_size));
    return none();
}

/* The stream the pool served this thread's request on, as its arena key. */
static uint64_t pool_stream(void)
{
    if (!current_stream)
        return 0;
    py_object *type, *value, *traceback;
    py.PyErr_Fetch(&type, &value, &traceback);
    uint64_t s = current_stream();
    if (py.PyErr_Occurred()) {
        py.PyErr_Clear();
        s = 0;
    }
    py.PyErr_Restore(type, value, traceback);
    if (s == CUDA_STREAM_PER_THREAD) {
        if (!thread_id)
            thread_id = (uint64_t)syscall(SYS_gettid);
        s = (uint64_t)-(int64_t)thread_id;
    }
    return s;
}

static py_object *malloc_post(py_object *self, py_object *args, py_object *kwargs)
{
    (void)self, (void)args;
    uint64_t ptr = kwarg(kwargs, key_mem_ptr);
    if (ptr)
        pool_api_alloc(pool_of(kwargs), (const void *)(uintptr_t)ptr, kwarg(kwargs, key_size),
                       kwarg(kwargs, key_mem_size), pool_stream());
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
    int in_pool = pool_of(kwargs);
    op_begin(in_pool, TF_POOL_OP_FREE, ptr);
    pool_api_free(in_pool, (const void *)(uintptr_t)ptr, kwarg(kwargs, key_mem_size));
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

/* get_memory_hooks()[HOOK_NAME] = hook, on the calling thread.  The module
 * from sys.modules as it is (held since install): this runs at a thread's
 * first collection, which may fall inside importlib's own lock code, and
 * PyImport_GetModule would wait there for a module still being imported
 * through importlib's _lock_unlock_module, undoing the import lock's
 * bookkeeping of the import it interrupted (python_threads.c says how). */
static void register_on_this_thread(void)
{
    registered_here = 1;
    py_object *m = sys_modules ? py.PyDict_GetItem(sys_modules, module_name) : NULL;   /* borrowed */
    if (m)
        py.Py_IncRef(m);
    else if (!sys_modules)
        m = py.PyImport_GetModule(module_name);
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

/* A global of a loaded module, from its __dict__ (a module's __getattr__,
 * which CuPy has, never runs): a new reference, or NULL. */
static py_object *module_global(py_object *module_name, const char *name)
{
    py_object *m = py.PyDict_GetItem(sys_modules, module_name);   /* borrowed */
    py_object *dict = m ? py.PyObject_GetAttrString(m, "__dict__") : NULL;
    py_object *key = dict ? py.PyUnicode_InternFromString(name) : NULL;
    py_object *v = key ? py.PyDict_GetItem(dict, key) : NULL;     /* borrowed */
    if (v)
        py.Py_IncRef(v);
    py.PyErr_Clear();
    if (key)
        py.Py_DecRef(key);
    if (dict)
        py.Py_DecRef(dict);
    return v;
}

/* get_current_stream_ptr from the capsule Cython exports it in. */
static void find_stream_function(void)
{
    py_object *capi = module_global(stream_module_name, "__pyx_capi__");
    py_object *key = capi ? py.PyUnicode_InternFromString("get_current_stream_ptr") : NULL;
    py_object *capsule = key ? py.PyDict_GetItem(capi, key) : NULL;   /* borrowed */
    const char *name = capsule ? py.PyCapsule_GetName(capsule) : NULL;
    void *fn = name ? py.PyCapsule_GetPointer(capsule, name) : NULL;
    if (fn)
        current_stream = (stream_fn)fn;
    py.PyErr_Clear();
    if (key)
        py.Py_DecRef(key);
    if (capi)
        py.Py_DecRef(capi);
}

static void note_version(void)
{
    py_object *v = module_global(cupy_module_name, "__version__");
    const char *text = v ? py.PyUnicode_AsUTF8(v) : NULL;
    if (text) {
        rec_info("cupy_version", text);
        version_noted = 1;
    }
    py.PyErr_Clear();
    if (v)
        py.Py_DecRef(v);
}

/* Until both are found, on the audit events after the hook is in.  Through
 * sys.modules held since then: at the events of a finalizing interpreter
 * the import machinery is gone. */
static void look_up_stream_and_version(void)
{
    if ((current_stream && version_noted) || lookups > MAX_LOOKUPS || !sys_modules)
        return;
    lookups++;
    py_object *type, *value, *traceback;
    py.PyErr_Fetch(&type, &value, &traceback);
    if (!current_stream)
        find_stream_function();
    if (!version_noted)
        note_version();
    py.PyErr_Restore(type, value, traceback);
}

/* CuPy's hooks are per thread: a thread already running when cupy was
 * imported gets ours at its next audit event or collection, and its pool
 * requests until then are not recorded.  A block it frees unseen and the
 * pool hands out again looks like an overlap, one it allocates unseen and
 * another thread frees like a free of an unknown block: readers must not
 * take those for the pool's (INFO pool_unwatched; trace-replay's verdict is
 * then INCONCLUSIVE for a pool finding).  Counted by the thread states
 * running Python (sys._current_frames), raw threads included. */
static void note_threads_before(void)
{
    py_object *sys = py.PyImport_ImportModule("sys");
    py_object *fn = sys ? py.PyObject_GetAttrString(sys, "_current_frames") : NULL;
    py_object *frames = fn ? py.PyObject_CallFunctionObjArgs(fn, NULL) : NULL;
    ssize_t others = -1;
    if (frames) {
        py_object *items = py.PyObject_GetAttrString(frames, "__len__");
        py_object *n = items ? py.PyObject_CallFunctionObjArgs(items, NULL) : NULL;
        others = n ? py.PyLong_AsSsize_t(n) - 1 : -1;
        py_object *tmp[] = { items, n };
        for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++)
            if (tmp[i])
                py.Py_DecRef(tmp[i]);
    }
    py_object *all[] = { sys, fn, frames };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            py.Py_DecRef(all[i]);
    py.PyErr_Clear();
    if (others > 0) {
        char text[200];
        snprintf(text, sizeof text, "cupy: %zd other thread(s) ran when cupy was imported; each one's pool "
                 "requests are not recorded until it registers the hook (its next audit event or collection)",
                 others);
        rec_info("pool_unwatched", text);
    }
}

static void install(void)
{
    py_object *m = ready_memory_hook_module();
    if (!m)
        return;
    key_size = py.PyUnicode_InternFromString("size");
    key_mem_size = py.PyUnicode_InternFromString("mem_size");
    key_mem_ptr = py.PyUnicode_InternFromString("mem_ptr");
    key_device_id = py.PyUnicode_InternFromString("device_id");
    hook_instance = key_size && key_mem_size && key_mem_ptr ? make_hook(m) : NULL;
    py.Py_DecRef(m);
    if (!hook_instance) {
        py.PyErr_Clear();
        cupy_state = CUPY_FAILED;
        rec_info("cupy", "off: could not create the MemoryHook");
        return;
    }
    py_object *sys = py.PyImport_ImportModule("sys");
    sys_modules = sys ? py.PyObject_GetAttrString(sys, "modules") : NULL;
    if (sys)
        py.Py_DecRef(sys);
    py.PyErr_Clear();
    pool = pool_api_register("cupy");
    rec_info("cupy", "on: MemoryHook registered per thread");
    register_on_this_thread();
    follow_new_threads();
    note_threads_before();
    cupy_state = CUPY_READY;
    look_up_stream_and_version();
}

static int is_memory_hook_import(const char *event, py_object *args)
{
    if (event[0] != 'i' || strcmp(event, "import") != 0)
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
        look_up_stream_and_version();
        return;
    case CUPY_INSTALLING:
    case CUPY_FAILED:
        return;
    }
}

void python_cupy_on_collection(void)
{
    if (cupy_state != CUPY_READY || registered_here)
        return;
    py_object *type, *value, *traceback;
    py.PyErr_Fetch(&type, &value, &traceback);
    register_on_this_thread();
    py.PyErr_Restore(type, value, traceback);
}

/* A round's end (an embedding program's Py_FinalizeEx): the references we
 * hold let go, while the interpreter can still take them (on 3.8 to 3.11
 * interned strings are mortal, and ours kept 4 to 7 of them alive per
 * round), and CuPy looked for again in the next round: the hook lived in
 * this one's interpreter. */
void python_cupy_forget(void)
{
    py_object **held[] = { &hook_instance, &hook_name, &module_name, &key_size, &key_mem_size,
                           &key_mem_ptr, &key_device_id, &stream_module_name, &cupy_module_name, &sys_modules };
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) {
        if (*held[i])
            py.Py_DecRef(*held[i]);
        *held[i] = NULL;
    }
    cupy_state = CUPY_ABSENT;
    registered_here = 0;
    memset(device_pools, 0, sizeof device_pools);
}

void python_cupy_prepare(void)
{
    hook_name = py.PyUnicode_InternFromString(HOOK_NAME);
    module_name = py.PyUnicode_InternFromString("cupy.cuda.memory_hook");
    stream_module_name = py.PyUnicode_InternFromString("cupy.cuda.stream");
    cupy_module_name = py.PyUnicode_InternFromString("cupy");
    if (!hook_name || !module_name || !stream_module_name || !cupy_module_name) {
        py.PyErr_Clear();
        cupy_state = CUPY_FAILED;
    }
}
