/*
 * cuda_api_table.h - the table itself (cuda_api.h says what its columns
 * mean).  Macros only: preload/libtrace.map.in includes it through the C
 * preprocessor to list the symbols libtrace.so exports.
 */
#ifndef TF_CUDA_API_TABLE_H
#define TF_CUDA_API_TABLE_H

/* name, event, space, layer, ptsz: one row per entry point, numbered from 1
 * in this order (append only). */
#define TF_CUDA_APIS(X)                                          \
    X(cudaMalloc,              ALLOC, DEVICE,  RUNTIME, 0)       \
    X(cudaFree,                FREE,  DEVICE,  RUNTIME, 0)       \
    X(cudaMallocAsync,         ALLOC, DEVICE,  RUNTIME, 1)       \
    X(cudaFreeAsync,           FREE,  DEVICE,  RUNTIME, 1)       \
    X(cudaMallocManaged,       ALLOC, DEVICE,  RUNTIME, 0)       \
    X(cudaMallocHost,          ALLOC, PINNED,  RUNTIME, 0)       \
    X(cudaHostAlloc,           ALLOC, PINNED,  RUNTIME, 0)       \
    X(cudaFreeHost,            FREE,  PINNED,  RUNTIME, 0)       \
    X(cudaMallocPitch,         ALLOC, DEVICE,  RUNTIME, 0)       \
    X(cudaMallocFromPoolAsync, ALLOC, DEVICE,  RUNTIME, 1)       \
    X(cuMemAlloc_v2,           ALLOC, DEVICE,  DRIVER,  0)       \
    X(cuMemFree_v2,            FREE,  DEVICE,  DRIVER,  0)       \
    X(cuMemAllocAsync,         ALLOC, DEVICE,  DRIVER,  1)       \
    X(cuMemFreeAsync,          FREE,  DEVICE,  DRIVER,  1)       \
    X(cuMemAllocFromPoolAsync, ALLOC, DEVICE,  DRIVER,  1)       \
    X(cuMemAllocManaged,       ALLOC, DEVICE,  DRIVER,  0)       \
    X(cuMemAllocPitch_v2,      ALLOC, DEVICE,  DRIVER,  0)       \
    X(cuMemAllocHost_v2,       ALLOC, PINNED,  DRIVER,  0)       \
    X(cuMemHostAlloc,          ALLOC, PINNED,  DRIVER,  0)       \
    X(cuMemFreeHost,           FREE,  PINNED,  DRIVER,  0)       \
    X(cuMemCreate,             ALLOC, HANDLE,  DRIVER,  0)       \
    X(cuMemRelease,            FREE,  HANDLE,  DRIVER,  0)       \
    X(cuMemMap,                ALLOC, MAPPING, DRIVER,  0)       \
    X(cuMemUnmap,              FREE,  MAPPING, DRIVER,  0)       \
    X(cuMemAddressReserve,     ALLOC, VA,      DRIVER,  0)       \
    X(cuMemAddressFree,        FREE,  VA,      DRIVER,  0)       \
    X(cuMemRetainAllocationHandle,    ALLOC, HANDLE, DRIVER,  0) \
    X(cuMemImportFromShareableHandle, ALLOC, HANDLE, DRIVER,  0) \
    X(cuMemPoolImportPointer,  ALLOC, DEVICE,  DRIVER,  0)       \
    X(cudaMemPoolImportPointer, ALLOC, DEVICE, RUNTIME, 0)       \
    X(cudaDeviceReset,         FREE,  CONTEXT, RUNTIME, 0)       \
    X(cudaThreadExit,          FREE,  CONTEXT, RUNTIME, 0)       \
    X(cuDevicePrimaryCtxReset, FREE,  CONTEXT, DRIVER,  0)       \
    X(cuDevicePrimaryCtxReset_v2, FREE, CONTEXT, DRIVER, 0)      \
    X(cuDevicePrimaryCtxRelease, FREE, CONTEXT, DRIVER, 0)       \
    X(cuDevicePrimaryCtxRelease_v2, FREE, CONTEXT, DRIVER, 0)    \
    X(cuCtxDestroy,            FREE,  CONTEXT, DRIVER,  0)       \
    X(cuCtxDestroy_v2,         FREE,  CONTEXT, DRIVER,  0)

#endif
