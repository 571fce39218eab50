/*
 * cuda_hook_bench.c - cost of one allocate+free pair seen from a call site
 * 32 frames deep (the stack the tracer has to walk).
 *
 *   cuda_hook_bench cuda N     N x (cudaMalloc + cudaFree)  [runtime double]
 *   cuda_hook_bench malloc N   N x (malloc + free)           [for heaptrack]
 *
 * Prints "ns_per_pair X" for the timed loop only (start-up excluded), in
 * CPU time of the whole process (the tracer's flusher thread included):
 * on a shared, loaded machine wall time mostly measures the neighbours.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEPTH 32

static int use_cuda;
static long pairs;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void loop(void)
{
    for (long i = 0; i < pairs; i++) {
        if (use_cuda) {
            void *p;
            cudaMalloc(&p, 256);
            cudaFree(p);
        } else {
            void *volatile p = malloc(256);
            free(p);
        }
    }
}

/* Not inlined, not a tail call: each level is a real frame. */
__attribute__((noinline)) static double recurse(int depth)
{
    if (depth == 0) {
        double t0 = now();
        loop();
        return now() - t0;
    }
    double t = recurse(depth - 1);
    __asm__ volatile("" ::: "memory");
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "cuda") && strcmp(argv[1], "malloc"))) {
        fprintf(stderr, "usage: %s cuda|malloc N\n", argv[0]);
        return 2;
    }
    use_cuda = !strcmp(argv[1], "cuda");
    pairs = atol(argv[2]);
    if (use_cuda) {            /* load the driver outside the timed loop */
        void *p;
        cudaMalloc(&p, 256);
        cudaFree(p);
    }
    printf("ns_per_pair %.1f\n", recurse(DEPTH - 2) / pairs);
    return 0;
}
