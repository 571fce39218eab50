/*
 * prog_names.c - threads named before their first event, renamed after it
 * (prctl by itself, pthread_setname_np by another thread).  Each event is
 * a cudaMalloc of a size that says which step it is:
 *   1000 + i  thread i, named "worker_<i>" before its first event
 *   2000 + i  after it renamed itself "self_<i>" (prctl PR_SET_NAME)
 *   3000 + i  after main renamed it "other_<i>" (pthread_setname_np)
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>

#define THREADS 3

static pthread_barrier_t step;

static void alloc(size_t size)
{
    void *p;
    if (cudaMalloc(&p, size) == cudaSuccess)
        cudaFree(p);
}

static void *worker(void *arg)
{
    int i = (int)(long)arg;
    char name[16];
    snprintf(name, sizeof name, "worker_%d", i);
    pthread_setname_np(pthread_self(), name);
    alloc(1000 + (size_t)i);
    snprintf(name, sizeof name, "self_%d", i);
    prctl(PR_SET_NAME, name, 0, 0, 0);
    alloc(2000 + (size_t)i);
    pthread_barrier_wait(&step);   /* main renames us */
    pthread_barrier_wait(&step);
    alloc(3000 + (size_t)i);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    pthread_barrier_init(&step, NULL, THREADS + 1);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    pthread_barrier_wait(&step);
    for (int i = 0; i < THREADS; i++) {
        char name[16];
        snprintf(name, sizeof name, "other_%d", i);
        pthread_setname_np(t[i], name);
    }
    pthread_barrier_wait(&step);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    alloc(4000);
    printf("done\n");
    return 0;
}
