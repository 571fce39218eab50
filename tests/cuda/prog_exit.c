/*
 * prog_exit.c - output and an exit status the tracer must not change.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    void *p;
    printf("before\n");
    fflush(stdout);
    cudaMalloc(&p, 100);
    cudaFree(p);
    printf("after %d\n", 42);
    return 3;
}
