/*
 * prog_entrypoint.c - driver functions fetched through the runtime, as
 * PyTorch fetches cuMemCreate/cuMemMap: cudaGetDriverEntryPoint and
 * cudaGetDriverEntryPointByVersion.  Prints "api result ptr".
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

typedef unsigned long long dptr;

int main(void)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult status;
    dptr p = 0;
    unsigned long long handle = 0;

    if (cudaGetDriverEntryPoint("cuMemAlloc", &fn, cudaEnableDefault, &status) != cudaSuccess)
        return 1;
    int r = ((int (*)(dptr *, size_t))fn)(&p, 12345);
    printf("cuMemAlloc_v2 %d %llu\n", r, p);
    if (cudaGetDriverEntryPointByVersion("cuMemFree", &fn, 12000, cudaEnableDefault, &status) !=
        cudaSuccess)
        return 1;
    r = ((int (*)(dptr))fn)(p);
    printf("cuMemFree_v2 %d %llu\n", r, p);
    struct { int type, handle_types, loc_type, loc_id; char rest[32]; } prop = { 1, 0, 1, 3, { 0 } };
    if (cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 12000, cudaEnableDefault, &status) !=
        cudaSuccess)
        return 1;
    r = ((int (*)(unsigned long long *, size_t, const void *, unsigned long long))fn)(
        &handle, 2 << 20, &prop, 0);
    printf("cuMemCreate %d %llu\n", r, handle);
    return 0;
}
