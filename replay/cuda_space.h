/*
 * cuda_space.h - which address space a CUDA entry point allocates in or
 * frees from.
 *
 * The model-free checks keep one bookkeeping per space, and the report
 * charges device memory to the program's allocation sites: both ask here, so
 * a new entry point is classified once.
 */
#ifndef RP_CUDA_SPACE_H
#define RP_CUDA_SPACE_H

#include <stdint.h>

typedef enum rp_cuda_space {
    RP_CUDA_UNTRACKED = -1,    /* not an allocation (cuMemMap/Unmap map into a reservation) */
    RP_CUDA_DEVICE,            /* device memory, managed memory included */
    RP_CUDA_PINNED,            /* page-locked host memory */
    RP_CUDA_HANDLE,            /* VMM physical allocations (cuMemCreate) */
    RP_CUDA_VA,                /* VMM address reservations */
    RP_CUDA_SPACES
} rp_cuda_space;

/* The space of api (enum tf_api), allocation or free alike. */
rp_cuda_space rp_cuda_space_of(uint32_t api);

#endif
