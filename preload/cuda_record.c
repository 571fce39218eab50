/*
 * cuda_record.c - depth counting and the event for a CUDA call.
 */
#include "cuda_record.h"
#include "cuda_versions.h"
#include "dl_hooks.h"
#include "recorder.h"

#include <dlfcn.h>
#include <stdatomic.h>

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
 * takes no lock the call we just made could hold, and it is not traced. */
static int current_device(void)
{
    static ctx_get_device_fn _Atomic get_device;
    ctx_get_device_fn fn = atomic_load_explicit(&get_device, memory_order_acquire);
    if (!fn) {
        void *libcuda = dl_real_dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (!libcuda)
            return -1;
        fn = (ctx_get_device_fn)dl_real_dlsym(libcuda, "cuCtxGetDevice");
        cuda_versions_note_driver(libcuda);
        dl_real_dlclose(libcuda);
        if (!fn)
            return -1;
        atomic_store_explicit(&get_device, fn, memory_order_release);
    }
    int device = -1;
    return fn(&device) == 0 ? device : -1;
}

void cuda_record(const struct cuda_call_record *r)
{
    if (!rec_active())
        return;
    tf_event e = { .kind = r->kind };
    e.u.cuda.api = r->api;
    e.u.cuda.result = r->result;
    e.u.cuda.device = r->device == CUDA_DEVICE_CURRENT
                          ? (r->result == 0 ? current_device() : -1)
                          : r->device;
    e.u.cuda.flags = r->flags;
    e.u.cuda.ptr = r->ptr;
    e.u.cuda.size = r->size;
    e.u.cuda.stream = r->stream;
    rec_event(&e, REC_STACKS);
}
