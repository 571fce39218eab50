/*
 * prog_runtime.c - every runtime allocation entry point once, linked
 * against the runtime (the double, or the real one with no GPU).  Prints
 * "api result ptr" for each call so the test can match the log.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

#define STREAM ((cudaStream_t)(uintptr_t)0x5eed)
#define POOL ((cudaMemPool_t)(uintptr_t)0xb001)

static void show(const char *api, cudaError_t r, const void *p)
{
    printf("%s %d %llu\n", api, (int)r, (unsigned long long)(uintptr_t)p);
}

int main(void)
{
    void *p = NULL;
    size_t pitch = 0;
    cudaError_t r;

    r = cudaMalloc(&p, 1 << 20);
    show("cudaMalloc", r, p);
    r = cudaFree(p);
    show("cudaFree", r, p);
    p = NULL;
    r = cudaMallocAsync(&p, 4096, STREAM);
    show("cudaMallocAsync", r, p);
    r = cudaFreeAsync(p, STREAM);
    show("cudaFreeAsync", r, p);
    p = NULL;
    r = cudaMallocManaged(&p, 8192, cudaMemAttachGlobal);
    show("cudaMallocManaged", r, p);
    p = NULL;
    r = cudaMallocHost(&p, 512);
    show("cudaMallocHost", r, p);
    r = cudaFreeHost(p);
    show("cudaFreeHost", r, p);
    p = NULL;
    r = cudaHostAlloc(&p, 1024, cudaHostAllocPortable);
    show("cudaHostAlloc", r, p);
    p = NULL;
    r = cudaMallocPitch(&p, &pitch, 1000, 10);
    show("cudaMallocPitch", r, p);
    p = NULL;
    r = cudaMallocFromPoolAsync(&p, 2048, POOL, STREAM);
    show("cudaMallocFromPoolAsync", r, p);
    p = NULL;
    r = cudaMalloc(&p, (size_t)1 << 50);   /* fails: out of memory */
    show("cudaMalloc", r, p);
    return 0;
}
