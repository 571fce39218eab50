/*
 * prog_acquire.c - memory this process did not make with a traced call,
 * released with one: a handle retained from a mapped address (after its
 * release, and while it is live), a handle imported from another process,
 * pointers imported from another process's pool through the driver and the
 * runtime.  Prints "api result ptr".
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

static void show(const char *api, int r, unsigned long long p)
{
    printf("%s %d %llu\n", api, r, p);
}

int main(void)
{
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle h = 0, again = 0, more = 0, imported = 0;
    CUdeviceptr va = 0, ip = 0;
    size_t size = 2 << 20;
    int r;
    r = cuMemAddressReserve(&va, size, 0, 0, 0);
    show("cuMemAddressReserve", r, va);
    r = cuMemCreate(&h, size, &prop, 0);
    show("cuMemCreate", r, h);
    r = cuMemMap(va, size, 0, h, 0);
    show("cuMemMap", r, va);
    r = cuMemRelease(h);   /* the mapping keeps the memory */
    show("cuMemRelease", r, h);
    r = cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)va);
    show("cuMemRetainAllocationHandle", r, again);
    r = cuMemRetainAllocationHandle(&more, (void *)(uintptr_t)va);   /* while live: a second reference */
    show("cuMemRetainAllocationHandle", r, more);
    r = cuMemRelease(more);
    show("cuMemRelease", r, more);
    r = cuMemRelease(again);
    show("cuMemRelease", r, again);
    r = cuMemUnmap(va, size);
    show("cuMemUnmap", r, va);
    r = cuMemAddressFree(va, size);
    show("cuMemAddressFree", r, va);
    r = cuMemImportFromShareableHandle(&imported, (void *)(uintptr_t)3, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    show("cuMemImportFromShareableHandle", r, imported);
    r = cuMemRelease(imported);
    show("cuMemRelease", r, imported);
    CUmemPoolPtrExportData data = {0};
    r = cuMemPoolImportPointer(&ip, (CUmemoryPool)0x9, &data);
    show("cuMemPoolImportPointer", r, ip);
    r = cuMemFreeAsync(ip, 0);
    show("cuMemFreeAsync", r, ip);
    void *rp = NULL;
    struct cudaMemPoolPtrExportData rdata = {0};
    r = cudaMemPoolImportPointer(&rp, (cudaMemPool_t)0x9, &rdata);
    show("cudaMemPoolImportPointer", r, (uintptr_t)rp);
    r = cudaFreeAsync(rp, 0);
    show("cudaFreeAsync", r, (uintptr_t)rp);
    return 0;
}
