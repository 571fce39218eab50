/*
 * malloc_bench.c - the cost of small malloc+free pairs, as a shared library
 * that bench/malloc_bench.py loads with ctypes: the same loop runs bare,
 * under libtrace.so, memray and heaptrack (each tool sees the calls a C
 * extension makes).
 *
 *   double pairs_ns(long pairs, int large_live)
 *
 * Times `pairs` malloc+free pairs of 16 to 1024 bytes (sizes cycle, eight
 * blocks in flight, so the allocator's fast bins are used as in real code)
 * and returns nanoseconds per pair.  large_live blocks of 2 MiB stay live
 * during the loop: with none the tracer's free() can answer from one global
 * count; with some it must look at each block.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double pairs_ns(long pairs, int large_live)
{
    void *large[16] = { 0 };
    for (int i = 0; i < large_live && i < 16; i++)
        large[i] = malloc(2u << 20);
    void *slot[8] = { 0 };
    double start = now_ns();
    for (long i = 0; i < pairs; i++) {
        size_t size = 16u + ((size_t)i * 40u) % 1009u;
        unsigned k = (unsigned)i & 7u;
        free(slot[k]);
        slot[k] = malloc(size);
        __asm__ volatile("" : : "r"(slot[k]) : "memory");
    }
    double elapsed = now_ns() - start;
    for (int k = 0; k < 8; k++)
        free(slot[k]);
    for (int i = 0; i < 16; i++)
        free(large[i]);
    return elapsed / (double)pairs;
}
