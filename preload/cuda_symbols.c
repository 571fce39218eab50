/*
 * cuda_symbols.c - finding real CUDA functions and handing out wrappers.
 */
#include "cuda_symbols.h"
#include "call_sites.h"
#include "cuda_versions.h"
#include "dl_hooks.h"
#include "dl_lookup.h"
#include "fork_gate.h"
#include "native_stack.h"
#include "warn.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

/* ---------------------------------------------------------------- slots */

/* Runtime entry points ("cuda...") name the runtime they live in. */
static void note_if_runtime(enum cuda_entry entry, const void *real)
{
    if (cuda_entry_name[entry][2] == 'd')
        cuda_versions_note_runtime(real);
}

static void *slot_for(enum cuda_entry entry, void *real)
{
    if (native_stack_is_ours((uintptr_t)real))
        return real;                    /* already one of ours */
    note_if_runtime(entry, real);
    for (int i = 0; i < CUDA_SLOTS; i++) {
        void *bound = atomic_load(&cuda_slot_real[entry][i]);
        if (!bound && atomic_compare_exchange_strong(&cuda_slot_real[entry][i], &bound, real))
            return cuda_slot_wrapper[entry][i];
        if (bound == real)
            return cuda_slot_wrapper[entry][i];
    }
    static _Atomic int warned;
    if (!atomic_exchange(&warned, 1))
        trace_warn_log("more than %d versions of %s in one process; the rest are not traced",
                   CUDA_SLOTS, cuda_entry_name[entry]);
    return real;
}

void *cuda_symbol_wrap(const char *name, void *real)
{
    if (name[0] != 'c' || name[1] != 'u')
        return real;
    for (int e = 0; e < CUDA_ENTRY_COUNT; e++)
        if (!strcmp(name, cuda_entry_name[e]))
            return slot_for((enum cuda_entry)e, real);
    return real;
}

/* cuGetProcAddress takes base names and returns the newest version the
 * caller's CUDA version allows (or the _ptsz variant, asked by flag: same
 * signature, so the same wrapper fits).  Versions below min_version get an
 * older signature we do not trace. */
static const struct {
    const char *name;
    enum cuda_entry entry;
    int min_version;
} driver_names[] = {
    { "cuMemAlloc", CUDA_cuMemAlloc_v2, 3020 },
    { "cuMemFree", CUDA_cuMemFree_v2, 3020 },
    { "cuMemAllocPitch", CUDA_cuMemAllocPitch_v2, 3020 },
    { "cuMemAllocHost", CUDA_cuMemAllocHost_v2, 3020 },
    { "cuMemHostAlloc", CUDA_cuMemHostAlloc, 0 },
    { "cuMemFreeHost", CUDA_cuMemFreeHost, 0 },
    { "cuMemAllocManaged", CUDA_cuMemAllocManaged, 0 },
    { "cuMemAllocAsync", CUDA_cuMemAllocAsync, 0 },
    { "cuMemFreeAsync", CUDA_cuMemFreeAsync, 0 },
    { "cuMemAllocFromPoolAsync", CUDA_cuMemAllocFromPoolAsync, 0 },
    { "cuMemCreate", CUDA_cuMemCreate, 0 },
    { "cuMemRelease", CUDA_cuMemRelease, 0 },
    { "cuMemMap", CUDA_cuMemMap, 0 },
    { "cuMemUnmap", CUDA_cuMemUnmap, 0 },
    { "cuMemAddressReserve", CUDA_cuMemAddressReserve, 0 },
    { "cuMemAddressFree", CUDA_cuMemAddressFree, 0 },
    { "cuMemRetainAllocationHandle", CUDA_cuMemRetainAllocationHandle, 0 },
    { "cuMemImportFromShareableHandle", CUDA_cuMemImportFromShareableHandle, 0 },
    { "cuMemPoolImportPointer", CUDA_cuMemPoolImportPointer, 0 },
    { "cuDevicePrimaryCtxReset", CUDA_cuDevicePrimaryCtxReset_v2, 11000 },
    { "cuDevicePrimaryCtxReset", CUDA_cuDevicePrimaryCtxReset, 0 },
    { "cuDevicePrimaryCtxRelease", CUDA_cuDevicePrimaryCtxRelease_v2, 11000 },
    { "cuDevicePrimaryCtxRelease", CUDA_cuDevicePrimaryCtxRelease, 0 },
    { "cuCtxDestroy", CUDA_cuCtxDestroy_v2, 4000 },
    { "cuCtxDestroy", CUDA_cuCtxDestroy, 0 },
    /* Asked for itself: from 12.0 on the answer has the 5-argument form. */
    { "cuGetProcAddress", CUDA_cuGetProcAddress_v2, 12000 },
    { "cuGetProcAddress", CUDA_cuGetProcAddress, 0 },
};

void *cuda_driver_symbol_wrap(const char *name, void *real, int version)
{
    if (!real || name[0] != 'c' || name[1] != 'u')
        return real;
    for (size_t i = 0; i < sizeof driver_names / sizeof *driver_names; i++)
        if (version >= driver_names[i].min_version && !strcmp(name, driver_names[i].name))
            return slot_for(driver_names[i].entry, real);
    return real;
}

/* ------------------------------------------------- exported symbols' reals */

/* Call sites seen per entry, and the real function for each (call_sites.h:
 * one per line of source that calls cudaMalloc; the table forgotten when a
 * plugin with its own libcudart is closed and another may load at its
 * addresses). */
static call_site site_slots[CUDA_ENTRY_COUNT][64];
static call_sites sites = CALL_SITES_INIT(site_slots);

/* The definition the caller's object binds to: first its own scope (its
 * dependencies, where RTLD_LOCAL libraries live), then the global scope
 * after libtrace.so (the main program and its libraries), and last any
 * loaded object that defines it (a caller holding a pointer to our export
 * that it took from a library it opened RTLD_LOCAL).  This runs at the
 * program's call, so the objects' own symbol tables answer, not the
 * loader's dlopen and dlsym, which would replace a failure the program has
 * not read from dlerror() yet (dl_lookup.h; dladdr leaves it alone). */
static void *resolve_for_caller(const char *name, const void *ret)
{
    Dl_info info;
    struct link_map *map = NULL;
    void *real = NULL;
    if (dladdr1(ret, &info, (void **)&map, RTLD_DL_LINKMAP) && map && map->l_name[0])
        real = dl_lookup_in_scope(map, name);
    if (real && native_stack_is_ours((uintptr_t)real))
        real = NULL;
    if (!real)
        real = dl_lookup_next(name);
    if (!real)
        real = dl_lookup_any(name);
    return real;
}

void *cuda_real_for_caller(enum cuda_entry entry, const void *ret)
{
    unsigned long now = call_sites_now();
    void *real = call_sites_find(&sites, entry, ret, now);
    if (real)
        return real;
    real = resolve_for_caller(cuda_entry_name[entry], ret);
    if (!real)
        return NULL;
    note_if_runtime(entry, real);
    /* Remember it; a full table only costs the lookup above next time. */
    call_sites_keep(&sites, entry, ret, real, now);
    return real;
}
