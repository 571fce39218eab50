/* cuda_space.c - the address space of each CUDA entry point. */
#include "cuda_space.h"

#include "trace_format.h"

rp_cuda_space rp_cuda_space_of(uint32_t api)
{
    switch (api) {
    case TF_API_cudaMalloc: case TF_API_cudaMallocAsync: case TF_API_cudaMallocManaged:
    case TF_API_cudaMallocPitch: case TF_API_cudaMallocFromPoolAsync: case TF_API_cuMemAlloc_v2:
    case TF_API_cuMemAllocAsync: case TF_API_cuMemAllocFromPoolAsync: case TF_API_cuMemAllocManaged:
    case TF_API_cuMemAllocPitch_v2: case TF_API_cudaFree: case TF_API_cudaFreeAsync:
    case TF_API_cuMemFree_v2: case TF_API_cuMemFreeAsync:
        return RP_CUDA_DEVICE;
    case TF_API_cudaMallocHost: case TF_API_cudaHostAlloc: case TF_API_cuMemAllocHost_v2:
    case TF_API_cuMemHostAlloc: case TF_API_cudaFreeHost: case TF_API_cuMemFreeHost:
        return RP_CUDA_PINNED;
    case TF_API_cuMemCreate: case TF_API_cuMemRelease:
        return RP_CUDA_HANDLE;
    case TF_API_cuMemAddressReserve: case TF_API_cuMemAddressFree:
        return RP_CUDA_VA;
    default:
        return RP_CUDA_UNTRACKED;
    }
}
