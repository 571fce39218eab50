/*
 * fulldisk_app.c - a fixed amount of traced work with a result to print, to
 * run with its log on a full disk: the output and the exit code must be the
 * same as without the tracer.  Sizes and marks vary so the log compresses
 * badly and fills the disk quickly.
 *
 *   fulldisk_app ROUNDS [PAUSE]   prints "sum S" and exits 3
 *
 * PAUSE: a 20 ms sleep every PAUSE rounds, so that the flusher writes the
 * log in several frames before the disk fills (the log's last word, INFO
 * not_watched, goes after the last whole frame).
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "trace_api.h"

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 100000;
    long pause = argc > 2 ? atol(argv[2]) : 0;
    uint64_t sum = 0, x = 88172645463325252ull;
    for (long i = 0; i < rounds; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t size = 256 + x % 65536;
        void *p;
        if (cudaMalloc(&p, size) != cudaSuccess)
            return 1;
        sum += size;
        cudaFree(p);
        if (i % 16 == 0) {
            char text[48];
            snprintf(text, sizeof text, "round %ld %llx", i, (unsigned long long)x);
            trace_mark(text);
        }
        if (pause > 0 && i % pause == pause - 1) {
            struct timespec ms20 = { 0, 20000000 };
            nanosleep(&ms20, NULL);
        }
    }
    printf("sum %llu\n", (unsigned long long)sum);
    return 3;
}
