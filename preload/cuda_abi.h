/*
 * cuda_abi.h - the slice of the CUDA runtime and driver ABI we interpose.
 *
 * Declared here rather than taken from cuda.h / cuda_runtime_api.h: those
 * headers rename functions with macros (cuMemAlloc -> cuMemAlloc_v2,
 * cuGetProcAddress -> cuGetProcAddress_v2, per-thread-stream variants), and
 * we must define exactly the exported names.  Both results (cudaError_t,
 * CUresult) are C enums, i.e. int; handles are pointers or 64-bit integers.
 */
#ifndef TRACE_CUDA_ABI_H
#define TRACE_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef unsigned long long cu_deviceptr;      /* CUdeviceptr */
typedef unsigned long long cu_mem_handle;     /* CUmemGenericAllocationHandle */
typedef void *cu_stream;                      /* CUstream, cudaStream_t */
typedef void *cu_mempool;                     /* CUmemoryPool, cudaMemPool_t */
typedef void *cu_context;                     /* CUcontext */

/* The head of CUmemAllocationProp: we only read the device. */
typedef struct cu_mem_alloc_prop {
    int type;
    int requested_handle_types;
    struct { int type; int id; } location;
} cu_mem_alloc_prop;

/* Returned by a wrapper whose real function could not be found (the
 * "unknown error" of both APIs). */
#define CUDA_NO_REAL 999

/* Every entry point we interpose: X(name, hook, parameters, arguments);
 * cuda_hook_<hook> does the work.  The per-thread-default-stream (_ptsz)
 * variants share their base's hook.
 * The teardowns (device and primary context resets, a primary context's
 * last release, context destruction) free a context's memory wholesale.
 * The last six hand out function pointers rather than memory.  An entry
 * point without parameters has params (). */
#define CUDA_ENTRIES(X) \
    X(cudaMalloc, cudaMalloc, (void **p, size_t size), (p, size)) \
    X(cudaFree, cudaFree, (void *p), (p)) \
    X(cudaMallocAsync, cudaMallocAsync, (void **p, size_t size, cu_stream s), (p, size, s)) \
    X(cudaMallocAsync_ptsz, cudaMallocAsync, (void **p, size_t size, cu_stream s), (p, size, s)) \
    X(cudaFreeAsync, cudaFreeAsync, (void *p, cu_stream s), (p, s)) \
    X(cudaFreeAsync_ptsz, cudaFreeAsync, (void *p, cu_stream s), (p, s)) \
    X(cudaMallocManaged, cudaMallocManaged, (void **p, size_t size, unsigned flags), (p, size, flags)) \
    X(cudaMallocHost, cudaMallocHost, (void **p, size_t size), (p, size)) \
    X(cudaHostAlloc, cudaHostAlloc, (void **p, size_t size, unsigned flags), (p, size, flags)) \
    X(cudaFreeHost, cudaFreeHost, (void *p), (p)) \
    X(cudaMallocPitch, cudaMallocPitch, (void **p, size_t *pitch, size_t width, size_t height), \
      (p, pitch, width, height)) \
    X(cudaMallocFromPoolAsync, cudaMallocFromPoolAsync, (void **p, size_t size, cu_mempool pool, cu_stream s), \
      (p, size, pool, s)) \
    X(cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync, (void **p, size_t size, cu_mempool pool, cu_stream s), \
      (p, size, pool, s)) \
    X(cuMemAlloc_v2, cuMemAlloc_v2, (cu_deviceptr *p, size_t size), (p, size)) \
    X(cuMemFree_v2, cuMemFree_v2, (cu_deviceptr p), (p)) \
    X(cuMemAllocAsync, cuMemAllocAsync, (cu_deviceptr *p, size_t size, cu_stream s), (p, size, s)) \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync, (cu_deviceptr *p, size_t size, cu_stream s), (p, size, s)) \
    X(cuMemFreeAsync, cuMemFreeAsync, (cu_deviceptr p, cu_stream s), (p, s)) \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync, (cu_deviceptr p, cu_stream s), (p, s)) \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, (cu_deviceptr *p, size_t size, cu_mempool pool, cu_stream s), \
      (p, size, pool, s)) \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, \
      (cu_deviceptr *p, size_t size, cu_mempool pool, cu_stream s), (p, size, pool, s)) \
    X(cuMemAllocManaged, cuMemAllocManaged, (cu_deviceptr *p, size_t size, unsigned flags), (p, size, flags)) \
    X(cuMemAllocPitch_v2, cuMemAllocPitch_v2, \
      (cu_deviceptr *p, size_t *pitch, size_t width, size_t height, unsigned elem), \
      (p, pitch, width, height, elem)) \
    X(cuMemAllocHost_v2, cuMemAllocHost_v2, (void **p, size_t size), (p, size)) \
    X(cuMemHostAlloc, cuMemHostAlloc, (void **p, size_t size, unsigned flags), (p, size, flags)) \
    X(cuMemFreeHost, cuMemFreeHost, (void *p), (p)) \
    X(cuMemCreate, cuMemCreate, \
      (cu_mem_handle *h, size_t size, const cu_mem_alloc_prop *prop, unsigned long long flags), \
      (h, size, prop, flags)) \
    X(cuMemRelease, cuMemRelease, (cu_mem_handle h), (h)) \
    X(cuMemMap, cuMemMap, \
      (cu_deviceptr p, size_t size, size_t offset, cu_mem_handle h, unsigned long long flags), \
      (p, size, offset, h, flags)) \
    X(cuMemUnmap, cuMemUnmap, (cu_deviceptr p, size_t size), (p, size)) \
    X(cuMemAddressReserve, cuMemAddressReserve, \
      (cu_deviceptr *p, size_t size, size_t align, cu_deviceptr addr, unsigned long long flags), \
      (p, size, align, addr, flags)) \
    X(cuMemAddressFree, cuMemAddressFree, (cu_deviceptr p, size_t size), (p, size)) \
    X(cuMemRetainAllocationHandle, cuMemRetainAllocationHandle, (cu_mem_handle *h, void *addr), (h, addr)) \
    X(cuMemImportFromShareableHandle, cuMemImportFromShareableHandle, \
      (cu_mem_handle *h, void *os_handle, int type), (h, os_handle, type)) \
    X(cuMemPoolImportPointer, cuMemPoolImportPointer, (cu_deviceptr *p, cu_mempool pool, void *data), \
      (p, pool, data)) \
    X(cudaMemPoolImportPointer, cudaMemPoolImportPointer, (void **p, cu_mempool pool, void *data), \
      (p, pool, data)) \
    X(cudaDeviceReset, cudaDeviceReset, (), ()) \
    X(cudaThreadExit, cudaThreadExit, (), ()) \
    X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, (int dev), (dev)) \
    X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset_v2, (int dev), (dev)) \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, (int dev), (dev)) \
    X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease_v2, (int dev), (dev)) \
    X(cuCtxDestroy, cuCtxDestroy, (cu_context ctx), (ctx)) \
    X(cuCtxDestroy_v2, cuCtxDestroy_v2, (cu_context ctx), (ctx)) \
    X(cuGetProcAddress, cuGetProcAddress, (const char *sym, void **pfn, int version, uint64_t flags), \
      (sym, pfn, version, flags)) \
    X(cuGetProcAddress_v2, cuGetProcAddress_v2, \
      (const char *sym, void **pfn, int version, uint64_t flags, int *status), \
      (sym, pfn, version, flags, status)) \
    X(cudaGetDriverEntryPoint, cudaGetDriverEntryPoint, \
      (const char *sym, void **pfn, unsigned long long flags, int *status), \
      (sym, pfn, flags, status)) \
    X(cudaGetDriverEntryPoint_ptsz, cudaGetDriverEntryPoint, \
      (const char *sym, void **pfn, unsigned long long flags, int *status), \
      (sym, pfn, flags, status)) \
    X(cudaGetDriverEntryPointByVersion, cudaGetDriverEntryPointByVersion, \
      (const char *sym, void **pfn, unsigned version, unsigned long long flags, int *status), \
      (sym, pfn, version, flags, status)) \
    X(cudaGetDriverEntryPointByVersion_ptsz, cudaGetDriverEntryPointByVersion, \
      (const char *sym, void **pfn, unsigned version, unsigned long long flags, int *status), \
      (sym, pfn, version, flags, status))

/* Index of each entry in tables. */
enum cuda_entry {
#define CUDA_ENTRY_INDEX(name, hook, params, args) CUDA_##name,
    CUDA_ENTRIES(CUDA_ENTRY_INDEX)
#undef CUDA_ENTRY_INDEX
    CUDA_ENTRY_COUNT
};

/* (a, b) -> a, b */
#define CUDA_UNPAREN(...) __VA_ARGS__

/* first, then a parenthesised list's items: (first, (a, b)) -> first, a, b;
 * (first, ()) -> first (the entry points without parameters). */
#define CUDA_PREPEND(first, list) CUDA_PREPEND_(first, CUDA_UNPAREN list)
#define CUDA_PREPEND_(first, ...) first __VA_OPT__(,) __VA_ARGS__

#endif
