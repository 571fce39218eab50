/*
 * prog_progress.c - runs until killed: a cudaMalloc/cudaFree pair and a
 * mark every millisecond; after each mark prints "i t_ns" (CLOCK_MONOTONIC)
 * so a test that kills it knows what must have reached the log.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <time.h>

#include "trace_api.h"

int main(void)
{
    for (unsigned long i = 0;; i++) {
        void *p;
        cudaMalloc(&p, 4096);
        cudaFree(p);
        char text[32];
        snprintf(text, sizeof text, "%lu", i);
        trace_mark(text);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        printf("%lu %llu\n", i, (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec);
        fflush(stdout);
        struct timespec nap = { 0, 1000000 };
        nanosleep(&nap, NULL);
    }
}
