/*
 * cuda_symbols.c - finding real CUDA functions and handing out wrappers.
 */
#include "cuda_symbols.h"
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

/* Call sites seen per entry, and the real function for each.  Call sites
 * are few (one per line of source that calls cudaMalloc), lookups lock-free.
 *
 * A return address names a call site only while its object stays loaded: a
 * plugin with its own libcudart (its run path) closed, and another loaded
 * at the same address, has the same return addresses, and the first one's
 * runtime is unmapped (the call landed in it: garbage, then SIGSEGV).  So
 * the table holds for the dlclose count it was filled under, and is emptied
 * when that count has moved: the common case stays one more load and
 * compare.  Only dlclose counts: a dlopen unmaps nothing and changes no
 * site's binding, and every Python import would empty the table.  sites_epoch is that count << 1, odd while the table is being
 * emptied; a lookup that saw the epoch change under it (a seqlock) asks the
 * loader instead. */
#define CALL_SITES 64

struct call_site {
    _Atomic uintptr_t ret;   /* published last */
    void *_Atomic real;
};

static struct call_site sites[CUDA_ENTRY_COUNT][CALL_SITES];
static _Atomic int sites_lock;
static _Atomic unsigned long sites_epoch;

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

static void *cached_real(const struct call_site *s, const void *ret, unsigned long epoch)
{
    for (int i = 0; i < CALL_SITES; i++) {
        uintptr_t key = atomic_load_explicit(&s[i].ret, memory_order_acquire);
        if (key == (uintptr_t)ret) {
            void *real = atomic_load_explicit(&s[i].real, memory_order_relaxed);
            /* Not emptied and filled again since the epoch was read. */
            atomic_thread_fence(memory_order_acquire);
            return atomic_load_explicit(&sites_epoch, memory_order_relaxed) == epoch ? real : NULL;
        }
        if (!key)
            break;
    }
    return NULL;
}

/* Under sites_lock: forget every call site (their objects may be gone). */
static void sites_empty(unsigned long epoch)
{
    atomic_store_explicit(&sites_epoch, atomic_load_explicit(&sites_epoch, memory_order_relaxed) | 1,
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (int e = 0; e < CUDA_ENTRY_COUNT; e++)
        for (int i = 0; i < CALL_SITES && atomic_load_explicit(&sites[e][i].ret, memory_order_relaxed); i++)
            atomic_store_explicit(&sites[e][i].ret, 0, memory_order_relaxed);
    atomic_store_explicit(&sites_epoch, epoch, memory_order_release);
}

void *cuda_real_for_caller(enum cuda_entry entry, const void *ret)
{
    struct call_site *s = sites[entry];
    unsigned long now = dl_loader_unloads() << 1;
    unsigned long epoch = atomic_load_explicit(&sites_epoch, memory_order_acquire);
    void *real = epoch == now ? cached_real(s, ret, epoch) : NULL;
    if (real)
        return real;
    real = resolve_for_caller(cuda_entry_name[entry], ret);
    if (!real)
        return NULL;
    note_if_runtime(entry, real);
    /* Remember it; a full table only costs the lookup above next time. */
    int expected = 0;
    if (!atomic_compare_exchange_strong(&sites_lock, &expected, 1))
        return real;
    /* A dlclose while we asked the loader: what it said may be stale. */
    if (dl_loader_unloads() << 1 == now) {
        if (atomic_load_explicit(&sites_epoch, memory_order_relaxed) != now)
            sites_empty(now);
        for (int i = 0; i < CALL_SITES; i++) {
            uintptr_t key = atomic_load_explicit(&s[i].ret, memory_order_relaxed);
            if (key == (uintptr_t)ret)
                break;   /* another thread's, just now */
            if (!key) {
                atomic_store_explicit(&s[i].real, real, memory_order_relaxed);
                atomic_store_explicit(&s[i].ret, (uintptr_t)ret, memory_order_release);
                break;
            }
        }
    }
    atomic_store(&sites_lock, 0);
    return real;
}
