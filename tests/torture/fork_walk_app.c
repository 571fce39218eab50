/*
 * fork_walk_app.c - fork while a thread of the tracer walks a stack.
 *
 * A new thread makes CUDA calls; its first stack walks find libunwind's
 * per-thread cache empty and look up unwind tables through dl_iterate_phdr
 * (slow_walk.c, preloaded first, makes that take 50 ms).  The main thread
 * forks 10 ms after the thread began; the child records a mark and a CUDA pair and exits.
 * Prints "child exited N".  Before the fork gate (preload/fork_gate.h) the
 * child waited forever on the loader's lock the walker held at the fork.
 *
 * "fork_walk_app app": the walker is the app's own thread (a dl_iterate_phdr
 * of its own, as a C++ throw or a JIT makes), which the gate cannot wait
 * for.  The child then makes no call that takes the loader's lock and exits:
 * bare, it exits at once; traced, the tracer's fork handlers must not take
 * that lock either (before preload/modules.c kept the parent's table, the
 * child hung in the handler's module rescan).
 */
#include <cuda_runtime_api.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace_api.h"

static void cuda_pair(void)
{
    void *p;
    if (cudaMalloc(&p, 4096) == cudaSuccess)
        cudaFree(p);
}

static atomic_int started;

static void *walker(void *arg)
{
    (void)arg;
    atomic_store(&started, 1);
    for (int i = 0; i < 100; i++)
        cuda_pair();
    return NULL;
}

static int nothing(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info, (void)size, (void)arg;
    return 0;
}

static void *app_walker(void *arg)
{
    (void)arg;
    atomic_store(&started, 1);
    dl_iterate_phdr(nothing, NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    int app = argc > 1 && !strcmp(argv[1], "app");
    trace_mark("parent-before");
    /* Nothing but the walk under test may be in progress at the fork: under
     * GCC's libasan, which takes no lock around fork, a thread inside malloc
     * (the driver's dlopen on the first CUDA call) or inside its own start
     * (libasan's set-up allocates) leaves the child locked for ever.  So the
     * driver is loaded here, and the 10 ms count from the thread's first
     * instruction, not from pthread_create (which a loaded machine may run
     * long before the thread itself). */
    cuda_pair();
    pthread_t thread;
    pthread_create(&thread, NULL, app ? app_walker : walker, NULL);
    while (!atomic_load(&started))
        sched_yield();
    struct timespec nap = { 0, 10000000 };
    nanosleep(&nap, NULL);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (app)
            _exit(0);
        trace_mark("fork-child");
        cuda_pair();
        exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return 1;
    pthread_join(thread, NULL);
    trace_mark("parent-after");
    printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
