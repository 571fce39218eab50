/*
 * prog_teardown.c - memory freed by a context's teardown, with no free
 * call: after each teardown (cudaDeviceReset, cudaThreadExit,
 * cuDevicePrimaryCtxReset, the last cuDevicePrimaryCtxRelease,
 * cuCtxDestroy) a block was live, and the next allocation gets its address
 * again (the driver double, like the real driver, reuses it).  A pinned
 * block the first reset took is then freed by the program; a device block
 * the last teardown took is never freed (no leak: the teardown freed it).  With the
 * argument "double-free", that pinned block is freed a second time at the
 * end: a real double free.  With "at-exit", a block is allocated and the
 * primary context's last release is made by an exit handler, as the CUDA
 * runtime's own are: not recorded, the block is still live at the end.
 * Prints "api result ptr" for each traced call.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deprecated, and gone from CUDA 13's headers; runtimes before 13 export it. */
cudaError_t cudaThreadExit(void);

static void show(const char *api, int r, unsigned long long p)
{
    printf("%s %d %llu\n", api, r, p);
}

static void release_at_exit(void)
{
    printf("at exit: release %d\n", cuDevicePrimaryCtxRelease(0));
}

int main(int argc, char **argv)
{
    int double_free = argc > 1 && !strcmp(argv[1], "double-free");
    size_t size = 4096;
    void *a = NULL, *h = NULL;
    CUdeviceptr d = 0, kept = 0;
    CUcontext ctx = NULL, primary = NULL;
    int r;
    if (argc > 1 && !strcmp(argv[1], "at-exit")) {
        atexit(release_at_exit);   /* before the first allocation, as the runtime's */
        cuDevicePrimaryCtxRetain(&primary, 0);
        r = cuMemAlloc(&d, size);
        show("cuMemAlloc_v2", r, d);
        return 0;
    }
    r = cudaMalloc(&a, size);
    show("cudaMalloc", r, (uintptr_t)a);
    r = cudaMallocHost(&h, size);
    show("cudaMallocHost", r, (uintptr_t)h);
    r = cudaDeviceReset();   /* takes both */
    show("cudaDeviceReset", r, 0);
    r = cudaMalloc(&a, size);
    show("cudaMalloc", r, (uintptr_t)a);
    r = cudaFreeHost(h);     /* the program's first free of it */
    show("cudaFreeHost", r, (uintptr_t)h);
    r = cudaThreadExit();
    show("cudaThreadExit", r, 0);
    r = cuMemAlloc(&d, size);
    show("cuMemAlloc_v2", r, d);
    r = cuDevicePrimaryCtxReset(0);
    show("cuDevicePrimaryCtxReset_v2", r, 0);
    r = cuMemAlloc(&d, size);
    show("cuMemAlloc_v2", r, d);
    /* Two retains, two releases: only the last one destroys the context. */
    cuDevicePrimaryCtxRetain(&primary, 0);
    cuDevicePrimaryCtxRetain(&primary, 0);
    r = cuDevicePrimaryCtxRelease(0);
    printf("not last: release %d\n", r);
    r = cuDevicePrimaryCtxRelease(0);
    show("cuDevicePrimaryCtxRelease_v2", r, 0);
    r = cuMemAlloc(&d, size);
    show("cuMemAlloc_v2", r, d);
    r = cuMemAlloc(&kept, size);   /* never freed: the teardown below takes it */
    show("cuMemAlloc_v2", r, kept);
    r = cuCtxCreate(&ctx, NULL, 0, 0);
    printf("context made: %d\n", r);
    r = cuCtxDestroy(ctx);
    show("cuCtxDestroy_v2", r, 0);
    printf("ctx %llu\n", (unsigned long long)(uintptr_t)ctx);
    r = cuMemAlloc(&d, size);
    show("cuMemAlloc_v2", r, d);
    /* Through cuGetProcAddress, as the static runtime reaches the driver:
     * the base name at 13.0 is the _v2 entry point.  It takes d, which the
     * program then frees (accepted once). */
    void *reset = NULL;
    CUdriverProcAddressQueryResult found;
    if (cuGetProcAddress("cuDevicePrimaryCtxReset", &reset, 13000, 0, &found) != 0 || !reset)
        printf("missing cuDevicePrimaryCtxReset\n");
    r = reset ? (int)((CUresult(*)(CUdevice))reset)(0) : -1;
    show("cuDevicePrimaryCtxReset_v2", r, 0);
    r = cuMemFree(d);
    show("cuMemFree_v2", r, d);
    if (double_free) {
        r = cudaFreeHost(h);
        show("cudaFreeHost", r, (uintptr_t)h);
    }
    return 0;
}
