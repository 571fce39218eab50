/*
 * prog_churn.c - a CUDA program for the follower's tests: it allocates and
 * frees device memory through the runtime (the test doubles), a few blocks
 * live at a time, with a mark every iteration.
 *
 *     prog_churn ITERATIONS [--double-free-at K]... [--sleep-us N] [--wait-file PATH]
 *
 * ITERATIONS 0: until killed.  --double-free-at K (repeatable): at
 * iteration K it frees again the block it freed just before (a double free
 * the doubles accept, as a real runtime may not notice), marks "double
 * free", and goes on.  --wait-file PATH: after the i-th double free it
 * waits until PATH-i exists (i from 1: a test lets it go on once the
 * follower has reported that violation).  --sleep-us N: a pause after each iteration.
 * It prints "done N" at the end.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_api.h"

#define LIVE 16
#define MAX_POINTS 8

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: prog_churn ITERATIONS [--double-free-at K]... [--sleep-us N] [--wait-file PATH]\n");
        return 2;
    }
    long iterations = atol(argv[1]), points[MAX_POINTS], sleep_us = 0;
    int npoints = 0;
    const char *wait_file = NULL;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--double-free-at") && npoints < MAX_POINTS)
            points[npoints++] = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--sleep-us"))
            sleep_us = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--wait-file"))
            wait_file = argv[i + 1];
    }
    void *live[LIVE] = {0}, *last_freed = NULL;
    int freed_twice = 0;
    char go[4096];
    for (long it = 1; !iterations || it <= iterations; it++) {
        int slot = (int)(it % LIVE);
        if (live[slot]) {
            cudaFree(live[slot]);
            last_freed = live[slot];
        }
        cudaMalloc(&live[slot], (size_t)(512 + (it * 7919) % 65536));
        for (int p = 0; p < npoints; p++)
            if (it == points[p] && last_freed) {
                trace_mark("double free");
                cudaFree(last_freed);
                snprintf(go, sizeof go, "%s-%d", wait_file ? wait_file : "", ++freed_twice);
                for (; wait_file && access(go, F_OK) != 0; usleep(1000))
                    ;
            }
        trace_mark("iteration");
        if (sleep_us)
            usleep((useconds_t)sleep_us);
    }
    for (int i = 0; i < LIVE; i++)
        if (live[i])
            cudaFree(live[i]);
    printf("done %ld\n", iterations);
    return 0;
}
