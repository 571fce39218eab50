/*
 * busy_app.c - a traced program that never rests, for kill -9 at random
 * moments.  Two threads allocate and free through the CUDA runtime and a
 * pool as fast as they can; the main thread also records a mark
 * "progress K" every 2 ms and then prints "K T" (T: CLOCK_MONOTONIC ns, taken
 * after the mark returned), so the test knows which marks the log must hold.
 * It stops by itself after 10 s in case nobody kills it.
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "trace_api.h"

#define MARK_EVERY_NS 2000000ull
#define GIVE_UP_NS 10000000000ull

static int pool;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One round of everything the recorder is busy with: a CUDA pair and a pool
 * allocation and free, each inside its operation. */
static void one_round(size_t size)
{
    void *p = NULL;
    uint64_t op = trace_pool_op_begin(pool, TRACE_POOL_OP_ALLOC, size);
    if (cudaMalloc(&p, size) == cudaSuccess)
        trace_pool_alloc(pool, p, size, size, 0);
    trace_pool_op_end(pool, op);
    if (!p)
        return;
    op = trace_pool_op_begin(pool, TRACE_POOL_OP_FREE, (uint64_t)(uintptr_t)p);
    trace_pool_free(pool, p, size);
    cudaFree(p);
    trace_pool_op_end(pool, op);
}

static void *worker(void *arg)
{
    size_t size = (size_t)(uintptr_t)arg;
    for (;;)
        one_round(size);
    return NULL;
}

int main(void)
{
    pool = trace_pool_register("busy");
    pthread_t threads[2];
    for (uintptr_t i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, worker, (void *)(4096 * (i + 2)));
    uint64_t start = now_ns(), next_mark = start;
    for (unsigned long k = 1; now_ns() - start < GIVE_UP_NS;) {
        one_round(4096);
        if (now_ns() < next_mark)
            continue;
        char text[32];
        snprintf(text, sizeof text, "progress %lu", k);
        trace_mark(text);
        printf("%lu %llu\n", k++, (unsigned long long)now_ns());
        fflush(stdout);
        next_mark += MARK_EVERY_NS;
    }
    return 0;
}
