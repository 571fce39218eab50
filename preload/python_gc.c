/*
 * python_gc.c - a gc_start/gc_stop pair for every cyclic-GC collection.
 *
 * A C-implemented callable appended to gc.callbacks receives ("start", info)
 * and ("stop", info) on every version from 3.8.  It runs inside the collector,
 * so it must not allocate a Python object (that could start the very thing we
 * are recording, or disturb the collection): the phase is compared in place,
 * the info dict is read with keys interned at attach time, and it returns the
 * None singleton.  gc_start opens an operation, so whatever is recorded while
 * the collection runs (finalizers freeing pooled GPU memory, large buffers
 * released) is nested under it.
 *
 * gc.callbacks is per interpreter, and so are collections: every interpreter
 * (the main one, and each subinterpreter once its import system runs) gets a
 * callable of its own whose `self` is its slot here, which holds that
 * interpreter's open collection and counters.  Interpreters with a GIL of
 * their own (3.12+) collect concurrently on different threads, so nothing is
 * shared between slots, not even the dict keys (the info dict is walked with
 * PyDict_Next and its keys compared in place).  gc_start carries the
 * interpreter's id.
 *
 * A thread-local depth says when a collection runs on this thread, for
 * python_alloc.c's py_free events.  Not every free in that window is the
 * collection's: the objects the interpreter built to call the callbacks
 * (the info dict, its key strings and keys table, the arguments tuple and
 * the phase string) are freed as our "start" returns.  on_start notes their
 * blocks, and the first free of each is passed over.
 *
 * gc_start also carries, per generation, the GC-tracked allocations since
 * that generation was last collected.  We read the interpreter's own young
 * count (generations[0].count: GC objects allocated minus those freed since
 * the previous collection, the number that triggers collections) at each
 * gc_start and sum it up per generation, so nothing runs per allocation.
 */
#include "python_internal.h"
#include "python_layout.h"
#include "recorder.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#define MAX_INTERPRETERS 64

/* Collections are serialised within an interpreter (one at a time, under its
 * GIL), so one open collection per interpreter is all there is to remember. */
typedef struct gc_slot {
    _Atomic int64_t interp;            /* interpreter id + 1; 0: free */
    uint64_t open_seq;
    uint64_t start_ns;
    uint64_t since_collected[3];       /* net GC allocations since gen g was collected */
} gc_slot;

static gc_slot slots[MAX_INTERPRETERS];
/* Collections running on this thread: one, or more when a callback of an
 * interpreter's collection ends up collecting another one's. */
#define TLS static __thread __attribute__((tls_model("initial-exec")))
__thread int python_gc_collecting __attribute__((tls_model("initial-exec")));
#define PREAMBLE_MAX 8
TLS const void *preamble[PREAMBLE_MAX];   /* blocks of the callback's arguments */

/* The OBJ-domain block of a GC object (the GC header before it; tuples and
 * dicts have nothing else before it on 3.8-3.13), or of another object. */
#define GC_HEAD_SIZE 16
static const void *gc_block(const void *obj)
{
    return (const char *)obj - GC_HEAD_SIZE;
}

/* PyDictObject's ma_keys (public ABI, the same offset on 3.8-3.13): the
 * keys table, an OBJ-domain block of its own. */
#define DICT_MA_KEYS 32

static void note_preamble(py_object *args, py_object *phase, py_object *info)
{
    int n = 0;
    preamble[n++] = gc_block(args);
    preamble[n++] = phase;
    preamble[n++] = gc_block(info);
    preamble[n++] = *(void *const *)((const char *)info + DICT_MA_KEYS);
    ssize_t pos = 0;
    py_object *key, *value;
    while (n < PREAMBLE_MAX && py.PyDict_Next(info, &pos, &key, &value))
        preamble[n++] = key;
    while (n < PREAMBLE_MAX)
        preamble[n++] = NULL;
}

int python_gc_frees_collected_slow(const void *block)
{
    for (int i = 0; i < PREAMBLE_MAX; i++) {
        if (preamble[i] == block) {
            preamble[i] = NULL;   /* the address may hold a collected object later */
            return 0;
        }
    }
    return 1;
}
static const py_layout *layout;
static const char *runtime;            /* &_PyRuntime, for 3.8 */

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* info[name], walked in place: no key object is made or shared. */
static int64_t info_field(py_object *info, const char *name)
{
    ssize_t pos = 0;
    py_object *key, *value;
    while (py.PyDict_Next(info, &pos, &key, &value)) {
        if (py.PyUnicode_CompareWithASCIIString(key, name) != 0)
            continue;
        ssize_t n = py.PyLong_AsSsize_t(value);
        if (n == -1 && py.PyErr_Occurred())
            py.PyErr_Clear();
        return n;
    }
    return -1;
}

static uint64_t young_count(void)
{
    const char *base = runtime;
    if (!layout->gc_in_runtime) {
        const char *tstate = py.current_tstate();   /* ours: the collector holds the GIL */
        base = tstate ? *(const char *const *)(tstate + layout->tstate_interp) : NULL;
    }
    int count = base ? *(const int *)(base + layout->gc_young_count) : 0;   /* an int */
    return count > 0 ? (uint64_t)count : 0;
}

static void allocation_counts(gc_slot *s, int generation, uint64_t allocs[3])
{
    if (!layout)
        return;
    uint64_t young = young_count();
    for (int g = 0; g < 3; g++) {
        s->since_collected[g] += young;
        allocs[g] = s->since_collected[g];
    }
    for (int g = 0; g <= generation && g < 3; g++)
        s->since_collected[g] = 0;
}

static void on_start(gc_slot *s, py_object *args, py_object *phase, py_object *info)
{
    tf_event e = { .kind = TF_EV_GC_START };
    e.u.gc.generation = (int32_t)info_field(info, "generation");
    e.u.gc.interp = (uint64_t)(atomic_load(&s->interp) - 1);
    allocation_counts(s, e.u.gc.generation, e.u.gc.allocs);
    s->start_ns = monotonic_ns();
    s->open_seq = rec_event(&e, REC_STACKS | REC_OPEN);
    note_preamble(args, phase, info);
    python_gc_collecting++;
}

static void on_stop(gc_slot *s, py_object *info)
{
    tf_event e = { .kind = TF_EV_GC_STOP };
    e.u.gc.generation = (int32_t)info_field(info, "generation");
    e.u.gc.interp = (uint64_t)(atomic_load(&s->interp) - 1);
    int64_t collected = info_field(info, "collected");
    int64_t uncollectable = info_field(info, "uncollectable");
    e.u.gc.collected = collected > 0 ? (uint64_t)collected : 0;
    e.u.gc.uncollectable = uncollectable > 0 ? (uint64_t)uncollectable : 0;
    e.u.gc.duration_ns = s->start_ns ? monotonic_ns() - s->start_ns : 0;
    if (python_gc_collecting > 0)
        python_gc_collecting--;
    if (s->open_seq)
        rec_close(s->open_seq);
    s->open_seq = 0;
    s->start_ns = 0;
    rec_event(&e, 0);
}

static py_object *gc_callback(py_object *self, py_object *args)
{
    ssize_t i = self ? py.PyLong_AsSsize_t(self) : -1;
    py_object *phase = py.PyTuple_GetItem(args, 0);
    py_object *info = py.PyTuple_GetItem(args, 1);
    if (phase && info && i >= 0 && i < MAX_INTERPRETERS && atomic_load(&slots[i].interp)) {
        if (py.PyUnicode_CompareWithASCIIString(phase, "start") == 0)
            on_start(&slots[i], args, phase, info);
        else if (py.PyUnicode_CompareWithASCIIString(phase, "stop") == 0) {
            on_stop(&slots[i], info);
            /* A thread CuPy's hook is not registered on yet (one started
             * before CuPy was imported, raising no audit event since). */
            python_cupy_on_collection();
        }
    }
    if (py.PyErr_Occurred())
        py.PyErr_Clear();
    py.Py_IncRef(py.none);
    return py.none;
}

static py_method_def gc_callback_def = {
    "libtrace_gc_callback", gc_callback, PY_METH_VARARGS,
    "Records gc_start/gc_stop events (libtrace)."
};

static int64_t current_interpreter(void)
{
    void *interp = py.PyInterpreterState_Get();
    return interp ? py.PyInterpreterState_GetID(interp) : -1;
}

static gc_slot *slot_of(int64_t id)
{
    for (int i = 0; i < MAX_INTERPRETERS; i++)
        if (atomic_load(&slots[i].interp) == id + 1)
            return &slots[i];
    return NULL;
}

static ssize_t claim_slot(int64_t id)
{
    for (int i = 0; i < MAX_INTERPRETERS; i++) {
        int64_t expected = 0;
        if (atomic_compare_exchange_strong(&slots[i].interp, &expected, id + 1)) {
            slots[i].open_seq = slots[i].start_ns = 0;
            memset(slots[i].since_collected, 0, sizeof slots[i].since_collected);
            return i;
        }
    }
    return -1;
}

/* Append a callable to the current interpreter's gc.callbacks.  0 on
 * failure (the exception is cleared). */
static int append_callback(ssize_t slot)
{
    py_object *self = py.PyLong_FromSsize_t(slot);
    py_object *callback = self ? py.PyCFunction_NewEx(&gc_callback_def, self, NULL) : NULL;
    py_object *gc = callback ? py.PyImport_ImportModule("gc") : NULL;
    py_object *callbacks = gc ? py.PyObject_GetAttrString(gc, "callbacks") : NULL;
    int ok = callbacks && py.PyList_Append(callbacks, callback) == 0;
    /* The list keeps the callable alive; gc stays in sys.modules. */
    if (callbacks)
        py.Py_DecRef(callbacks);
    if (gc)
        py.Py_DecRef(gc);
    if (callback)
        py.Py_DecRef(callback);
    if (self)
        py.Py_DecRef(self);
    if (!ok)
        py.PyErr_Clear();
    return ok;
}

int python_gc_install(void)
{
    layout = py_layout_get();
    runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (layout && layout->gc_in_runtime && !runtime)
        layout = NULL;
    return python_gc_attach_current();
}

int python_gc_attach_current(void)
{
    int64_t id = current_interpreter();
    if (id < 0) {
        py.PyErr_Clear();
        return 0;
    }
    if (slot_of(id))
        return 1;
    ssize_t slot = claim_slot(id);
    if (slot < 0) {
        rec_info("not_watched", "collections of some subinterpreters: more than 64 at once");
        return 0;
    }
    if (!append_callback(slot)) {
        atomic_store(&slots[slot].interp, 0);
        return 0;
    }
    return 1;
}

void python_gc_on_audit_event(const char *event)
{
    /* A subinterpreter's first import: its import system works, so gc can
     * be imported there.  Py_EndInterpreter clears it: its slot is free. */
    if (!strcmp(event, "import")) {
        int64_t id = current_interpreter();
        if (id > 0 && !slot_of(id) && !python_gc_attach_current())
            rec_info("not_watched", "collections of a subinterpreter: could not append to its "
                                    "gc.callbacks");
    } else if (!strcmp(event, "cpython.PyInterpreterState_Clear")) {
        int64_t id = current_interpreter();
        gc_slot *s = id >= 0 ? slot_of(id) : NULL;
        if (s)
            atomic_store(&s->interp, 0);
    }
    if (py.PyErr_Occurred())
        py.PyErr_Clear();
}

void python_gc_forget_all(void)
{
    for (int i = 0; i < MAX_INTERPRETERS; i++)
        atomic_store(&slots[i].interp, 0);
}
