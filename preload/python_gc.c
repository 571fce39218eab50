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
#include <time.h>

/* Collections are serialised by the interpreter (one at a time, GIL held), so
 * one open collection at a time is all there is to remember. */
static uint64_t open_seq;
static uint64_t start_ns;
static py_object *key_generation, *key_collected, *key_uncollectable;
static const py_layout *layout;
static const char *runtime;            /* &_PyRuntime, for 3.8 */
static uint64_t since_collected[3];    /* net GC allocations since gen g was collected */

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int64_t info_field(py_object *info, py_object *key)
{
    py_object *v = py.PyDict_GetItem(info, key);   /* borrowed */
    if (!v)
        return -1;
    ssize_t n = py.PyLong_AsSsize_t(v);
    if (n == -1 && py.PyErr_Occurred())
        py.PyErr_Clear();
    return n;
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

static void allocation_counts(int generation, uint64_t allocs[3])
{
    if (!layout)
        return;
    uint64_t young = young_count();
    for (int g = 0; g < 3; g++) {
        since_collected[g] += young;
        allocs[g] = since_collected[g];
    }
    for (int g = 0; g <= generation && g < 3; g++)
        since_collected[g] = 0;
}

static void on_start(py_object *info)
{
    tf_event e = { .kind = TF_EV_GC_START };
    e.u.gc.generation = (int32_t)info_field(info, key_generation);
    allocation_counts(e.u.gc.generation, e.u.gc.allocs);
    start_ns = monotonic_ns();
    open_seq = rec_event(&e, REC_STACKS | REC_OPEN);
}

static void on_stop(py_object *info)
{
    tf_event e = { .kind = TF_EV_GC_STOP };
    e.u.gc.generation = (int32_t)info_field(info, key_generation);
    int64_t collected = info_field(info, key_collected);
    int64_t uncollectable = info_field(info, key_uncollectable);
    e.u.gc.collected = collected > 0 ? (uint64_t)collected : 0;
    e.u.gc.uncollectable = uncollectable > 0 ? (uint64_t)uncollectable : 0;
    e.u.gc.duration_ns = start_ns ? monotonic_ns() - start_ns : 0;
    if (open_seq)
        rec_close(open_seq);
    open_seq = 0;
    start_ns = 0;
    rec_event(&e, 0);
}

static py_object *gc_callback(py_object *self, py_object *args)
{
    (void)self;
    py_object *phase = py.PyTuple_GetItem(args, 0);
    py_object *info = py.PyTuple_GetItem(args, 1);
    if (phase && info) {
        if (py.PyUnicode_CompareWithASCIIString(phase, "start") == 0)
            on_start(info);
        else if (py.PyUnicode_CompareWithASCIIString(phase, "stop") == 0)
            on_stop(info);
    } else {
        py.PyErr_Clear();
    }
    py.Py_IncRef(py.none);
    return py.none;
}

static py_method_def gc_callback_def = {
    "libtrace_gc_callback", gc_callback, PY_METH_VARARGS,
    "Records gc_start/gc_stop events (libtrace)."
};

int python_gc_install(void)
{
    layout = py_layout_get();
    runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (layout && layout->gc_in_runtime && !runtime)
        layout = NULL;
    key_generation = py.PyUnicode_InternFromString("generation");
    key_collected = py.PyUnicode_InternFromString("collected");
    key_uncollectable = py.PyUnicode_InternFromString("uncollectable");
    py_object *callback = py.PyCFunction_NewEx(&gc_callback_def, NULL, NULL);
    py_object *gc = py.PyImport_ImportModule("gc");
    py_object *callbacks = gc ? py.PyObject_GetAttrString(gc, "callbacks") : NULL;
    int ok = key_generation && key_collected && key_uncollectable && callback &&
             callbacks && py.PyList_Append(callbacks, callback) == 0;
    /* The list keeps the callable alive; gc stays in sys.modules. */
    if (callbacks)
        py.Py_DecRef(callbacks);
    if (gc)
        py.Py_DecRef(gc);
    if (callback)
        py.Py_DecRef(callback);
    return ok;
}
