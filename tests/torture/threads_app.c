/*
 * threads_app.c - 32 threads released together, each doing ROUNDS rounds of
 * a CUDA pair and a pool allocation and free (each inside its operation,
 * with the CUDA call nested in the pool's), plus one mark per thread.  The
 * test compares the log's counts with what this program did and checks the
 * order of every event.
 *
 *   threads_app [ROUNDS]      prints "threads T rounds R"
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace_api.h"

#define THREADS 32

static pthread_barrier_t start_together;
static int pool;
static long rounds = 2000;

/* The pool grows by a cudaMalloc inside its alloc operation and gives the
 * segment back inside its free operation, like a pool without caching. */
static void pool_round(size_t size)
{
    void *p = NULL;
    uint64_t op = trace_pool_op_begin(pool, TRACE_POOL_OP_ALLOC, size);
    if (cudaMalloc(&p, size) != cudaSuccess)
        abort();
    trace_pool_alloc(pool, p, size, size, 0);
    trace_pool_op_end(pool, op);

    op = trace_pool_op_begin(pool, TRACE_POOL_OP_FREE, (uint64_t)(uintptr_t)p);
    trace_pool_free(pool, p, size);
    cudaFree(p);
    trace_pool_op_end(pool, op);
}

static void *worker(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    char text[32];
    snprintf(text, sizeof text, "thread %lu", (unsigned long)id);
    pthread_barrier_wait(&start_together);
    trace_mark(text);
    for (long i = 0; i < rounds; i++)
        pool_round(512 * (1 + (size_t)((id + (uintptr_t)i) % 64)));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atol(argv[1]);
    pool = trace_pool_register("threads");
    pthread_barrier_init(&start_together, NULL, THREADS);
    pthread_t threads[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        if (pthread_create(&threads[i], NULL, worker, (void *)i) != 0)
            return 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    printf("threads %d rounds %ld\n", THREADS, rounds);
    return 0;
}
