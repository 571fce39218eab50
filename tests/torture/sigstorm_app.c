/*
 * sigstorm_app.c - a SIGALRM storm (setitimer, every 50 us) whose handler
 * itself calls cudaMalloc/cudaFree and trace_mark, while two threads loop
 * over pool operations with nested CUDA calls.  The recorder must neither
 * deadlock nor crash; a handler's event may be dropped while its thread is
 * inside the recorder (the log and the exit line say how many).
 *
 *   sigstorm_app [ROUNDS]    prints "rounds R threads 2 ticks N"
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "trace_api.h"

#define THREADS 2

static volatile sig_atomic_t ticks;
static int pool;
static long rounds = 20000;

static void on_alarm(int sig)
{
    (void)sig;
    void *p;
    if (cudaMalloc(&p, 8192) == cudaSuccess)
        cudaFree(p);
    trace_mark("tick");
    ticks++;
}

static void *loop(void *arg)
{
    (void)arg;
    for (long i = 0; i < rounds; i++) {
        void *p = NULL;
        uint64_t op = trace_pool_op_begin(pool, TRACE_POOL_OP_ALLOC, 4096);
        if (cudaMalloc(&p, 4096) != cudaSuccess)
            abort();
        trace_pool_alloc(pool, p, 4096, 4096, 0);
        trace_pool_op_end(pool, op);
        op = trace_pool_op_begin(pool, TRACE_POOL_OP_FREE, (uint64_t)(uintptr_t)p);
        trace_pool_free(pool, p, 4096);
        cudaFree(p);
        trace_pool_op_end(pool, op);
    }
    return NULL;
}

static void storm(long interval_us)
{
    struct itimerval every = { { 0, interval_us }, { 0, interval_us } };
    setitimer(ITIMER_REAL, &every, NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atol(argv[1]);
    pool = trace_pool_register("storm");
    /* The first calls resolve lazily bound symbols; do that outside a handler. */
    on_alarm(0);
    ticks = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    storm(50);
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, loop, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    storm(0);
    printf("rounds %ld threads %d ticks %d\n", rounds, THREADS, (int)ticks);
    return 0;
}
