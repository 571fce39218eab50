/*
 * cuda_driver_double.c - a test double of libcuda.so.1 for machines without
 * a GPU.  Memory comes from one big reservation at a fixed hint address,
 * handed out by a bump pointer and never reused (until a context's teardown,
 * below), so addresses are the same on every run.  Functions are reachable by name and through
 * cuGetProcAddress(_v2), like the real driver's.
 */
#include "cuda_abi.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_FOUND 500

#define ARENA_HINT ((void *)0x200000000000ull)
#define ARENA_SIZE (64ull << 30)
#define ALIGN 256u
#define MAX_ALLOCATION (16ull << 30)  /* larger requests fail: the OOM path */

static char *arena;
static _Atomic uint64_t arena_used;
static _Atomic uint64_t next_handle = 0x1000;
static const int export_table_marker = 42;

__attribute__((constructor)) static void reserve_arena(void)
{
    void *p = mmap(ARENA_HINT, ARENA_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    arena = p == MAP_FAILED ? NULL : p;
}

static int bump(size_t size, cu_deviceptr *out)
{
    if (!arena || size == 0 || size > MAX_ALLOCATION)
        return size == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t rounded = (size + ALIGN - 1) / ALIGN * ALIGN;
    uint64_t offset = atomic_fetch_add(&arena_used, rounded);
    if (offset + rounded > ARENA_SIZE)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = (uint64_t)(uintptr_t)(arena + offset);
    return CUDA_SUCCESS;
}

int cuInit(unsigned flags) { (void)flags; return CUDA_SUCCESS; }
int cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
int cuCtxGetDevice(int *device) { *device = 0; return CUDA_SUCCESS; }

/* Contexts, on the one device 0: the primary one (current unless another
 * was made current) and those cuCtxCreate makes.  A teardown frees what the
 * contexts hold, as the real driver does, and the next allocations get the
 * same addresses again: the bump pointer goes back to the start (tests do
 * not keep VMM reservations or pool memory across a teardown). */
#define CUDA_ERROR_INVALID_CONTEXT 201
static char primary_ctx, made_ctx;
static void *_Atomic current_ctx = &primary_ctx;
static _Atomic int primary_retains;

static void teardown(void) { atomic_store(&arena_used, 0); }

int cuCtxGetCurrent(cu_context *ctx)
{
    *ctx = atomic_load(&current_ctx);
    return CUDA_SUCCESS;
}

int cuCtxCreate_v4(cu_context *ctx, void *params, unsigned flags, int dev)
{
    (void)params, (void)flags;
    if (dev != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *ctx = &made_ctx;
    atomic_store(&current_ctx, (void *)&made_ctx);
    return CUDA_SUCCESS;
}

int cuCtxDestroy_v2(cu_context ctx)
{
    if (ctx != &made_ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    teardown();
    void *was = &made_ctx;
    atomic_compare_exchange_strong(&current_ctx, &was, (void *)&primary_ctx);
    return CUDA_SUCCESS;
}

int cuCtxDestroy(cu_context ctx) { return cuCtxDestroy_v2(ctx); }

int cuDevicePrimaryCtxRetain(cu_context *ctx, int dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_VALUE;
    atomic_fetch_add(&primary_retains, 1);
    *ctx = &primary_ctx;
    return CUDA_SUCCESS;
}

int cuDevicePrimaryCtxRelease_v2(int dev)
{
    if (dev != 0 || atomic_load(&primary_retains) == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (atomic_fetch_sub(&primary_retains, 1) == 1)
        teardown();   /* the last release */
    return CUDA_SUCCESS;
}

int cuDevicePrimaryCtxRelease(int dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

int cuDevicePrimaryCtxGetState(int dev, unsigned *flags, int *active)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = 0;
    *active = atomic_load(&primary_retains) > 0;
    return CUDA_SUCCESS;
}

int cuDevicePrimaryCtxReset_v2(int dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_VALUE;
    teardown();   /* the context stays retained */
    return CUDA_SUCCESS;
}

int cuDevicePrimaryCtxReset(int dev) { return cuDevicePrimaryCtxReset_v2(dev); }

int cuGetExportTable(const void **table, const void *id)
{
    (void)id;
    *table = &export_table_marker;
    return CUDA_SUCCESS;
}

int cuMemAlloc_v2(cu_deviceptr *p, size_t size) { return bump(size, p); }
int cuMemFree_v2(cu_deviceptr p) { (void)p; return CUDA_SUCCESS; }

int cuMemAllocAsync(cu_deviceptr *p, size_t size, cu_stream s)
{
    (void)s;
    return bump(size, p);
}

int cuMemFreeAsync(cu_deviceptr p, cu_stream s)
{
    (void)p, (void)s;
    return CUDA_SUCCESS;
}

int cuMemAllocFromPoolAsync(cu_deviceptr *p, size_t size, cu_mempool pool, cu_stream s)
{
    (void)pool, (void)s;
    return bump(size, p);
}

int cuMemAllocManaged(cu_deviceptr *p, size_t size, unsigned flags)
{
    (void)flags;
    return bump(size, p);
}

int cuMemAllocPitch_v2(cu_deviceptr *p, size_t *pitch, size_t width, size_t height, unsigned elem)
{
    (void)elem;
    *pitch = (width + 511) / 512 * 512;
    return bump(*pitch * height, p);
}

int cuMemAllocHost_v2(void **p, size_t size)
{
    return bump(size, (cu_deviceptr *)p);
}

int cuMemHostAlloc(void **p, size_t size, unsigned flags)
{
    (void)flags;
    return bump(size, (cu_deviceptr *)p);
}

int cuMemFreeHost(void *p) { (void)p; return CUDA_SUCCESS; }

int cuMemCreate(cu_mem_handle *h, size_t size, const cu_mem_alloc_prop *prop,
                unsigned long long flags)
{
    (void)prop, (void)flags;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    *h = atomic_fetch_add(&next_handle, 1);
    return CUDA_SUCCESS;
}

int cuMemRelease(cu_mem_handle h) { (void)h; return CUDA_SUCCESS; }

/* The last mapping, for cuMemRetainAllocationHandle. */
static _Atomic cu_deviceptr last_map_va;
static _Atomic cu_mem_handle last_map_handle;

int cuMemMap(cu_deviceptr p, size_t size, size_t offset, cu_mem_handle h, unsigned long long flags)
{
    (void)size, (void)offset, (void)flags;
    atomic_store(&last_map_handle, h);
    atomic_store(&last_map_va, p);
    return CUDA_SUCCESS;
}

int cuMemUnmap(cu_deviceptr p, size_t size) { (void)p, (void)size; return CUDA_SUCCESS; }

int cuMemAddressReserve(cu_deviceptr *p, size_t size, size_t align, cu_deviceptr addr,
                        unsigned long long flags)
{
    (void)align, (void)addr, (void)flags;
    return bump(size, p);
}

int cuMemAddressFree(cu_deviceptr p, size_t size) { (void)p, (void)size; return CUDA_SUCCESS; }

/* Memory made elsewhere: the handle last mapped at an address (as the
 * driver answers a retain), a new handle per import, a new pointer per
 * pool import (the exporter's block, mapped here). */

int cuMemRetainAllocationHandle(cu_mem_handle *h, void *addr)
{
    if ((cu_deviceptr)(uintptr_t)addr != atomic_load(&last_map_va))
        return CUDA_ERROR_INVALID_VALUE;
    *h = atomic_load(&last_map_handle);
    return CUDA_SUCCESS;
}

int cuMemImportFromShareableHandle(cu_mem_handle *h, void *os_handle, int type)
{
    (void)os_handle, (void)type;
    *h = atomic_fetch_add(&next_handle, 1);
    return CUDA_SUCCESS;
}

int cuMemPoolImportPointer(cu_deviceptr *p, cu_mempool pool, void *data)
{
    (void)pool, (void)data;
    return bump(4096, p);
}

int cuGetProcAddress_v2(const char *sym, void **pfn, int version, uint64_t flags, int *status);

/* Base names, as the real driver takes them; the newest version is handed
 * out (every caller here is 12.0 or later). */
static const struct { const char *name; void *fn; } procs[] = {
    { "cuInit", (void *)cuInit },
    { "cuDriverGetVersion", (void *)cuDriverGetVersion },
    { "cuCtxGetDevice", (void *)cuCtxGetDevice },
    { "cuGetExportTable", (void *)cuGetExportTable },
    { "cuGetProcAddress", (void *)cuGetProcAddress_v2 },
    { "cuMemAlloc", (void *)cuMemAlloc_v2 },
    { "cuMemFree", (void *)cuMemFree_v2 },
    { "cuMemAllocAsync", (void *)cuMemAllocAsync },
    { "cuMemFreeAsync", (void *)cuMemFreeAsync },
    { "cuMemAllocFromPoolAsync", (void *)cuMemAllocFromPoolAsync },
    { "cuMemAllocManaged", (void *)cuMemAllocManaged },
    { "cuMemAllocPitch", (void *)cuMemAllocPitch_v2 },
    { "cuMemAllocHost", (void *)cuMemAllocHost_v2 },
    { "cuMemHostAlloc", (void *)cuMemHostAlloc },
    { "cuMemFreeHost", (void *)cuMemFreeHost },
    { "cuMemCreate", (void *)cuMemCreate },
    { "cuMemRelease", (void *)cuMemRelease },
    { "cuMemMap", (void *)cuMemMap },
    { "cuMemUnmap", (void *)cuMemUnmap },
    { "cuMemAddressReserve", (void *)cuMemAddressReserve },
    { "cuMemAddressFree", (void *)cuMemAddressFree },
    { "cuMemRetainAllocationHandle", (void *)cuMemRetainAllocationHandle },
    { "cuMemImportFromShareableHandle", (void *)cuMemImportFromShareableHandle },
    { "cuMemPoolImportPointer", (void *)cuMemPoolImportPointer },
    { "cuCtxGetCurrent", (void *)cuCtxGetCurrent },
    { "cuCtxCreate", (void *)cuCtxCreate_v4 },
    { "cuCtxDestroy", (void *)cuCtxDestroy_v2 },
    { "cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain },
    { "cuDevicePrimaryCtxRelease", (void *)cuDevicePrimaryCtxRelease_v2 },
    { "cuDevicePrimaryCtxReset", (void *)cuDevicePrimaryCtxReset_v2 },
    { "cuDevicePrimaryCtxGetState", (void *)cuDevicePrimaryCtxGetState },
};

int cuGetProcAddress_v2(const char *sym, void **pfn, int version, uint64_t flags, int *status)
{
    (void)version, (void)flags;
    for (size_t i = 0; i < sizeof procs / sizeof *procs; i++) {
        if (!strcmp(sym, procs[i].name)) {
            *pfn = procs[i].fn;
            if (status)
                *status = 0;
            return CUDA_SUCCESS;
        }
    }
    *pfn = NULL;
    if (status)
        *status = 1;
    return CUDA_ERROR_NOT_FOUND;
}

int cuGetProcAddress(const char *sym, void **pfn, int version, uint64_t flags)
{
    return cuGetProcAddress_v2(sym, pfn, version, flags, NULL);
}
