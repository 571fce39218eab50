/*
 * prog_threads.c - THREADS threads, each doing PAIRS cudaMalloc+cudaFree
 * pairs at once, for the total-order and nothing-lost checks.
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int pairs;

static void *work(void *arg)
{
    (void)arg;
    for (int i = 0; i < pairs; i++) {
        void *p;
        if (cudaMalloc(&p, 256) != cudaSuccess || cudaFree(p) != cudaSuccess)
            abort();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 16;
    pairs = argc > 2 ? atoi(argv[2]) : 50000;
    pthread_t t[256];
    for (int i = 0; i < threads && i < 256; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < threads && i < 256; i++)
        pthread_join(t[i], NULL);
    printf("done %d x %d\n", threads, pairs);
    return 0;
}
