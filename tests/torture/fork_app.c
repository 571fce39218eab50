/*
 * fork_app.c - fork and fork+exec while another thread keeps the recorder
 * busy, so a fork can land while that thread holds the recorder's lock.
 *
 *   fork_app FORKS EXECS   parent: FORKS plain children, EXECS children that
 *                          exec this program as "fork_app child"; prints
 *                          "child PID fork|exec" for each, then "parent PID"
 *   fork_app child         the exec'd child: a mark "exec-child" and a pair
 *
 * Marks: "parent-before" and "parent-after" in the parent, "fork-child" in a
 * plain child.  Every process exits through exit() so its log is complete.
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace_api.h"

static atomic_int stop, started;

static void cuda_pair(void)
{
    void *p;
    if (cudaMalloc(&p, 4096) == cudaSuccess)
        cudaFree(p);
}

static void *keep_busy(void *arg)
{
    (void)arg;
    cuda_pair();
    atomic_store(&started, 1);
    while (!atomic_load(&stop))
        cuda_pair();
    return NULL;
}

static pid_t spawn(int exec_it, const char *self)
{
    fflush(stdout);   /* or a child's exit() prints the parent's lines again */
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    if (exec_it) {
        execl(self, self, "child", (char *)NULL);
        _exit(127);
    }
    trace_mark("fork-child");
    cuda_pair();
    exit(0);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "child") == 0) {
        trace_mark("exec-child");
        cuda_pair();
        return 0;
    }
    if (argc != 3)
        return 2;
    int forks = atoi(argv[1]), execs = atoi(argv[2]);
    trace_mark("parent-before");
    /* No fork while the busy thread could be inside malloc: GCC's libasan
     * takes no allocator lock around fork, so such a fork leaves the child's
     * allocator locked for ever, with or without the tracer (the app's own
     * hazard, not the one under test).  The driver is loaded (dlopen
     * allocates) before the thread exists, and the first fork waits until the
     * thread is past its start (libasan's thread set-up allocates) and its
     * first pair; from then on it allocates nothing. */
    cuda_pair();
    pthread_t busy;
    pthread_create(&busy, NULL, keep_busy, NULL);
    while (!atomic_load(&started))
        sched_yield();
    int failed = 0;
    for (int i = 0; i < forks + execs; i++) {
        int exec_it = i >= forks;
        pid_t pid = spawn(exec_it, argv[0]);
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            failed = 1;
        printf("child %d %s\n", (int)pid, exec_it ? "exec" : "fork");
    }
    atomic_store(&stop, 1);
    pthread_join(busy, NULL);
    trace_mark("parent-after");
    printf("parent %d\n", (int)getpid());
    return failed;
}
