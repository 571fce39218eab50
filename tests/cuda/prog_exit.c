/*
 * prog_exit.c - output and an exit status the tracer must not change.
 * With an argument, changes to that directory before its first event.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    void *p;
    printf("before\n");
    fflush(stdout);
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    cudaMalloc(&p, 100);
    cudaFree(p);
    printf("after %d\n", 42);
    return 3;
}
