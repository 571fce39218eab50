/*
 * cuda_runtime_double.c - a test double of libcudart.so.13.  Like the real
 * runtime it opens libcuda.so.1 itself and reaches every driver function
 * through cuGetProcAddress_v2, so a traced cudaMalloc calls a traced
 * cuMemAlloc_v2 underneath (which must not be recorded a second time).
 */
#include "cuda_abi.h"

#include <dlfcn.h>
#include <pthread.h>

#define cudaErrorInitializationError 3
#define RUNTIME_VERSION 13000

typedef int (*get_proc_fn)(const char *, void **, int, uint64_t, int *);

static struct {
    get_proc_fn get_proc;
    int (*mem_alloc)(cu_deviceptr *, size_t);
    int (*mem_free)(cu_deviceptr);
    int (*alloc_async)(cu_deviceptr *, size_t, cu_stream);
    int (*free_async)(cu_deviceptr, cu_stream);
    int (*alloc_pool)(cu_deviceptr *, size_t, cu_mempool, cu_stream);
    int (*alloc_managed)(cu_deviceptr *, size_t, unsigned);
    int (*alloc_pitch)(cu_deviceptr *, size_t *, size_t, size_t, unsigned);
    int (*alloc_host)(void **, size_t);
    int (*host_alloc)(void **, size_t, unsigned);
    int (*free_host)(void *);
    int (*pool_import)(cu_deviceptr *, cu_mempool, void *);
    int (*primary_reset)(int);
} driver;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void proc(const char *name, void *slot)
{
    driver.get_proc(name, (void **)slot, RUNTIME_VERSION, 0, NULL);
}

static void load_driver(void)
{
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!libcuda)
        return;
    driver.get_proc = (get_proc_fn)dlsym(libcuda, "cuGetProcAddress_v2");
    if (!driver.get_proc)
        return;
    proc("cuMemAlloc", &driver.mem_alloc);
    proc("cuMemFree", &driver.mem_free);
    proc("cuMemAllocAsync", &driver.alloc_async);
    proc("cuMemFreeAsync", &driver.free_async);
    proc("cuMemAllocFromPoolAsync", &driver.alloc_pool);
    proc("cuMemAllocManaged", &driver.alloc_managed);
    proc("cuMemAllocPitch", &driver.alloc_pitch);
    proc("cuMemAllocHost", &driver.alloc_host);
    proc("cuMemHostAlloc", &driver.host_alloc);
    proc("cuMemFreeHost", &driver.free_host);
    proc("cuMemPoolImportPointer", &driver.pool_import);
    proc("cuDevicePrimaryCtxReset", &driver.primary_reset);
}

static int ready(void)
{
    pthread_once(&once, load_driver);
    return driver.get_proc != NULL;
}

#define NEED_DRIVER() \
    do { \
        if (!ready()) \
            return cudaErrorInitializationError; \
    } while (0)

int cudaGetDevice(int *device)
{
    *device = 0;
    return 0;
}

int cudaRuntimeGetVersion(int *v)
{
    *v = RUNTIME_VERSION;
    return 0;
}

int cudaMalloc(void **p, size_t size)
{
    NEED_DRIVER();
    return driver.mem_alloc((cu_deviceptr *)p, size);
}

int cudaFree(void *p)
{
    NEED_DRIVER();
    return p ? driver.mem_free((cu_deviceptr)(uintptr_t)p) : 0;
}

int cudaMallocAsync(void **p, size_t size, cu_stream s)
{
    NEED_DRIVER();
    return driver.alloc_async((cu_deviceptr *)p, size, s);
}

int cudaFreeAsync(void *p, cu_stream s)
{
    NEED_DRIVER();
    return driver.free_async((cu_deviceptr)(uintptr_t)p, s);
}

int cudaMallocFromPoolAsync(void **p, size_t size, cu_mempool pool, cu_stream s)
{
    NEED_DRIVER();
    return driver.alloc_pool((cu_deviceptr *)p, size, pool, s);
}

int cudaMallocManaged(void **p, size_t size, unsigned flags)
{
    NEED_DRIVER();
    return driver.alloc_managed((cu_deviceptr *)p, size, flags);
}

int cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    NEED_DRIVER();
    return driver.alloc_pitch((cu_deviceptr *)p, pitch, width, height, 4);
}

int cudaMallocHost(void **p, size_t size)
{
    NEED_DRIVER();
    return driver.alloc_host(p, size);
}

int cudaHostAlloc(void **p, size_t size, unsigned flags)
{
    NEED_DRIVER();
    return driver.host_alloc(p, size, flags);
}

int cudaFreeHost(void *p)
{
    NEED_DRIVER();
    return driver.free_host(p);
}

int cudaGetDriverEntryPointByVersion(const char *sym, void **pfn, unsigned version,
                                     unsigned long long flags, int *status)
{
    NEED_DRIVER();
    return driver.get_proc(sym, pfn, (int)version, flags, status);
}

int cudaGetDriverEntryPoint(const char *sym, void **pfn, unsigned long long flags, int *status)
{
    return cudaGetDriverEntryPointByVersion(sym, pfn, RUNTIME_VERSION, flags, status);
}

int cudaMemPoolImportPointer(void **p, cu_mempool pool, void *data)
{
    NEED_DRIVER();
    return driver.pool_import((cu_deviceptr *)p, pool, data);
}

/* The current device's primary context, reset (cudaThreadExit is the old
 * name of the same call). */
int cudaDeviceReset(void)
{
    NEED_DRIVER();
    return driver.primary_reset(0);
}

int cudaThreadExit(void)
{
    return cudaDeviceReset();
}
