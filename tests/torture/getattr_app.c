/*
 * getattr_app.c - a signal whose handler calls cudaMalloc, delivered while a
 * fresh thread is inside pthread_getattr_np, and that handler's events are
 * the thread's first.  glibc holds the thread's own lock there while it
 * calls realloc (for the affinity set), and ASan's thread start, JVMs and
 * other runtimes make that call.  This program defines realloc itself (an
 * executable's definition comes first in the symbol lookup, for libc's own
 * calls too), raises the signal from it at that very moment, once per
 * thread, then goes on to the next realloc.  A recorder that asked
 * pthread_getattr_np for the thread's stack bounds from the handler waited
 * for that lock, held by its own thread, forever.
 *
 *   getattr_app        prints "threads T raised R handled H"
 *
 * R: signals raised from inside pthread_getattr_np (T unless this realloc
 * was not the one glibc called); H: handlers that returned.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_api.h"

#define THREADS 4

/* Set by a thread around its pthread_getattr_np call only.  volatile: the
 * header declares that function a leaf (it calls back into nothing of
 * ours), and the compiler would drop the store. */
static __thread volatile int armed;
static volatile sig_atomic_t raised, handled;

static void *next_realloc(void *p, size_t size)
{
    /* The next definition: glibc's, or the sanitizer's (its blocks go back
     * to its free).  Found on the first call, long before a thread arms
     * itself (main makes one). */
    static void *(*next)(void *, size_t);
    if (!next)
        next = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    return next(p, size);
}

void *realloc(void *p, size_t size)
{
    if (armed) {
        armed = 0;
        raised++;
        raise(SIGUSR1);   /* handled on this thread before raise returns */
    }
    return next_realloc(p, size);
}

static void on_usr1(int sig)
{
    (void)sig;
    void *p;
    if (cudaMalloc(&p, 12345) == cudaSuccess)
        cudaFree(p);
    trace_mark("in-getattr");
    handled++;
}

static void *thread_main(void *arg)
{
    (void)arg;
    pthread_attr_t attr;
    armed = 1;
    int rc = pthread_getattr_np(pthread_self(), &attr);
    armed = 0;
    if (rc != 0) {
        fprintf(stderr, "pthread_getattr_np: %s\n", strerror(rc));
        exit(2);
    }
    pthread_attr_destroy(&attr);
    trace_mark("after-getattr");
    return NULL;
}

int main(void)
{
    /* Outside any window: the first realloc's lookup, and the first CUDA
     * calls' lazy binding. */
    free(realloc(NULL, 16));
    void *p;
    if (cudaMalloc(&p, 4096) != cudaSuccess)
        return 2;
    cudaFree(p);
    trace_mark("start");
    struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    /* One after another: each thread's first event is its handler's. */
    for (int i = 0; i < THREADS; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
            return 2;
    }
    printf("threads %d raised %d handled %d\n", THREADS, (int)raised, (int)handled);
    return 0;
}
