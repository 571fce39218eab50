/*
 * prog_race.c - threads that allocate and free device memory as fast as
 * they can, on the malloc-backed runtime double (addresses come back at
 * once, to any thread).
 *
 *   prog_race THREADS ROUNDS    then print "pairs N noload N" (dlopen
 *                               RTLD_NOLOAD calls the tracer made)
 *   prog_race crash_in_free     one pair, then a cudaFree that crashes
 *                               inside the call
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern unsigned long dlcount_noload;
static int rounds;

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    void *held[4] = { 0 };
    for (int i = 0; i < rounds; i++) {
        int k = (int)(rand_r(&seed) % 4);
        if (held[k]) {
            cudaFree(held[k]);
            held[k] = NULL;
        } else {
            cudaMalloc(&held[k], 16 + rand_r(&seed) % 200);
        }
    }
    for (int k = 0; k < 4; k++)
        if (held[k])
            cudaFree(held[k]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "crash_in_free")) {
        void *p;
        cudaMalloc(&p, 100);
        cudaFree(p);
        printf("freeing\n");
        fflush(stdout);
        cudaFree((void *)(uintptr_t)0xdead0000);
        return 1;
    }
    if (argc != 3)
        return 2;
    int threads = atoi(argv[1]);
    rounds = atoi(argv[2]);
    pthread_t t[64];
    for (int i = 0; i < threads && i < 64; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < threads && i < 64; i++)
        pthread_join(t[i], NULL);
    printf("threads %d rounds %d noload %lu\n", threads, rounds, dlcount_noload);
    return 0;
}
