/*
 * cuda_versions.c - see cuda_versions.h.  Both version calls are plain
 * getters: they need no context and take no lock a traced call could hold.
 */
#include "cuda_versions.h"
#include "hook_stack.h"
#include "dl_lookup.h"
#include "recorder.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define RUNTIMES_NOTED 8

typedef int (*get_version_fn)(int *);

/* The object's own definition, not the loader's dlsym: this runs at a
 * traced call, where the program may have a dlerror() still to read
 * (dl_lookup.h). */
static int call_version(const void *in_object, const char *name, int *version)
{
    get_version_fn fn;
    *(void **)&fn = dl_lookup_in_object_at(in_object, name);
    return fn && fn(version) == 0;
}

void cuda_versions_note_driver(const void *fn)
{
    static _Atomic int noted;
    int version;
    if (atomic_load(&noted) || !call_version(fn, "cuDriverGetVersion", &version) ||
        atomic_exchange(&noted, 1))
        return;
    char text[16];
    snprintf(text, sizeof text, "%d", version);
    rec_info("cuda_driver_version", text);
}

/* Claims a place for this object; 0 if it was noted before (or no room). */
static int first_time(const void *base)
{
    static const void *_Atomic noted[RUNTIMES_NOTED];
    for (int i = 0; i < RUNTIMES_NOTED; i++) {
        const void *seen = atomic_load(&noted[i]);
        if (seen == base)
            return 0;
        if (!seen && atomic_compare_exchange_strong(&noted[i], &seen, base))
            return 1;
        if (seen == base)
            return 0;
    }
    return 0;
}

static __attribute__((noinline)) void note_runtime(void *fn)
{
    Dl_info info;
    if (!dladdr(fn, &info) || !info.dli_fname || !first_time(info.dli_fbase))
        return;
    int version;
    /* As long as the name needs (at most PATH_MAX): a buffer for the
     * longest took 4.2 KiB of the program's stack at its first CUDA call. */
    size_t len = strnlen(info.dli_fname, 4096);
    char text[len + sizeof " version=-2147483648"];
    if (call_version(fn, "cudaRuntimeGetVersion", &version))
        snprintf(text, sizeof text, "%s version=%d", info.dli_fname, version);
    else
        snprintf(text, sizeof text, "%s", info.dli_fname);
    rec_info("cuda_runtime", text);
}

/* The text and the lookup take 5 KiB and more: on a stack of ours where the
 * thread's has too little left (hook_stack.h). */
void cuda_versions_note_runtime(const void *fn)
{
    if (!rec_active())
        return;
    if (hook_stack_roomy())
        note_runtime((void *)fn);
    else
        hook_stack_run(note_runtime, (void *)fn);
}
