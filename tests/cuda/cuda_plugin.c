/*
 * cuda_plugin.c - a plugin with its own CUDA runtime: linked against the
 * runtime double, which it finds through its own run path (the program that
 * opens it does not link a runtime).  prog_plugin_reload.c opens it.
 * Prints "api result ptr" for each call, as the programs do.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

int plugin_alloc(void)
{
    void *p = NULL;
    cudaError_t r = cudaMalloc(&p, 4096);
    printf("cudaMalloc %d %llu\n", (int)r, (unsigned long long)(uintptr_t)p);
    if (r != cudaSuccess)
        return (int)r;
    r = cudaFree(p);
    printf("cudaFree %d %llu\n", (int)r, (unsigned long long)(uintptr_t)p);
    fflush(stdout);
    return (int)r;
}
