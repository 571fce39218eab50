/*
 * cuda_record.c - depth counting and the event for a CUDA call.
 */
#include "cuda_record.h"
#include "alloc_env.h"
#include "cuda_versions.h"
#include "dl_hooks.h"
#include "dl_lookup.h"
#include "recorder.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>

static __thread __attribute__((tls_model("initial-exec"))) int depth;

int cuda_call_begin(void)
{
    return depth++ == 0;
}

void cuda_call_end(void)
{
    depth--;
}

typedef int (*ctx_get_device_fn)(int *device);

/* cuCtxGetDevice of the process's one libcuda.so.1, once it is loaded.  It
 * takes no lock the call we just made could hold, and it is not traced.
 * Not found (no libcuda.so.1 loaded: a runtime double, a static runtime
 * that has not loaded it yet; or a driver without it) is remembered until
 * the next dlopen or dlclose: the search walks the loaded objects, and this
 * runs on every traced call.  Found in libcuda's own symbol table, not by
 * the loader's dlopen and dlsym: those would replace a failure the program
 * has not read from dlerror() yet (dl_lookup.h). */
static int current_device(void)
{
    static ctx_get_device_fn _Atomic get_device;
    static _Atomic unsigned long missing_since;   /* dl_loader_changes() + 1 */
    ctx_get_device_fn fn = atomic_load_explicit(&get_device, memory_order_acquire);
    if (!fn) {
        unsigned long changes = dl_loader_changes();
        if (atomic_load_explicit(&missing_since, memory_order_relaxed) == changes + 1)
            return -1;
        *(void **)&fn = dl_lookup_in_loaded("libcuda.so.1", "cuCtxGetDevice");
        if (fn)
            cuda_versions_note_driver((const void *)fn);
        if (!fn) {
            atomic_store_explicit(&missing_since, changes + 1, memory_order_relaxed);
            return -1;
        }
        atomic_store_explicit(&get_device, fn, memory_order_release);
    }
    int device = -1;
    return fn(&device) == 0 ? device : -1;
}

/* Whether exit() has begun: a CUDA runtime's exit handlers may release its
 * primary contexts, and taken for teardowns, those releases would make
 * every block still live at the end no leak.  Set by an exit handler
 * registered at the first allocation recorded, so after the runtime's
 * (registered by its first call, which the allocation was or came after):
 * handlers run last registered first, and libraries' destructors after
 * them all. */
static _Atomic int exit_begun, exit_watched;

static void note_exit(void)
{
    atomic_store_explicit(&exit_begun, 1, memory_order_relaxed);
}

int cuda_exit_begun(void)
{
    return atomic_load_explicit(&exit_begun, memory_order_relaxed);
}

int cuda_current_device(void)
{
    return current_device();
}

/* A function of the loaded libcuda.so.1 (NULL: none loaded, or it lacks
 * it), from its symbol table as above.  For the teardowns only: they are
 * rare, so it is looked up each time. */
static void *driver_function(const char *name)
{
    return dl_lookup_in_loaded("libcuda.so.1", name);
}

int cuda_context_device(void *ctx)
{
    int (*get_current)(void **) = (int (*)(void **))driver_function("cuCtxGetCurrent");
    void *current = NULL;
    if (!ctx || !get_current || get_current(&current) != 0 || current != ctx)
        return -1;
    return current_device();
}

int cuda_primary_active(int dev)
{
    int (*get_state)(int, unsigned *, int *) =
        (int (*)(int, unsigned *, int *))driver_function("cuDevicePrimaryCtxGetState");
    unsigned flags = 0;
    int active = 0;
    if (!get_state || get_state(dev, &flags, &active) != 0)
        return -1;
    return active != 0;
}

uint64_t cuda_record(const struct cuda_call_record *r)
{
    if (!rec_active())
        return 0;
    if (r->kind == TF_EV_CUDA_ALLOC) {
        alloc_env_note();   /* the pools' settings, as the allocator starting now reads them */
        if (!atomic_load_explicit(&exit_watched, memory_order_relaxed) && !atomic_exchange(&exit_watched, 1))
            atexit(note_exit);
    }
    tf_event e;
    tf_event_init(&e, r->kind);
    e.u.cuda.api = r->api;
    e.u.cuda.result = r->result;
    e.u.cuda.device = r->device == CUDA_DEVICE_CURRENT
                          ? (r->result == 0 ? current_device() : -1)
                          : r->device;
    e.u.cuda.flags = r->flags;
    e.u.cuda.ptr = r->ptr;
    e.u.cuda.size = r->size;
    e.u.cuda.stream = r->stream;
    return rec_event(&e, REC_STACKS);
}

void cuda_record_release_failed(uint64_t release_seq, int result)
{
    if (!release_seq)
        return;
    tf_event e = { .kind = TF_EV_RELEASE_FAILED };
    e.u.release_failed.release = release_seq;
    e.u.release_failed.result = result;
    rec_event(&e, 0);
}
